from typing import NamedTuple, SupportsIndex, Union

from typing_extensions import TypeAlias

__all__ = ["BloomParams", "CuckooParams", "cuckoo_false_positive_rate", "cuckoo_num_buckets", "cuckoo_params", "stage_false_positive_rate", "bloom_params", "false_positive_rate", "bloom_capacity", "check_capacity", "check_error_rate", "check_seed", "check_bucket_size", "check_fingerprint_bits"]

# Capacities accept ints and integral floats (1e6); docs/decisions.md.
_Count: TypeAlias = Union[SupportsIndex, float]

LN2: float
CUCKOO_MIN_FINGERPRINT_BITS: int
CUCKOO_MAX_FINGERPRINT_BITS: int
CUCKOO_MAX_BUCKET_SIZE: int
CUCKOO_MIN_BUCKET_SIZE: int
CUCKOO_MAX_BUCKETS: int
CUCKOO_SIZING_LOAD: dict[int, tuple[float, float]]

class BloomParams(NamedTuple):
    num_bits: int
    num_hashes: int
    bits_per_key: float
    nbytes: int
    error_rate: float

class CuckooParams(NamedTuple):
    num_buckets: int
    fingerprint_bits: int
    nbytes: int
    error_rate: float

def check_capacity(capacity: _Count, name: str = "capacity") -> int: ...
def check_error_rate(error_rate: float, name: str = "error_rate") -> float: ...
def check_seed(seed: SupportsIndex) -> int: ...
def check_bucket_size(bucket_size: SupportsIndex) -> int: ...
def check_fingerprint_bits(fingerprint_bits: SupportsIndex) -> int: ...
def false_positive_rate(num_bits: int, num_items: int, num_hashes: int) -> float: ...
def bloom_params(capacity: _Count, error_rate: float) -> BloomParams: ...
def bloom_capacity(num_bits: SupportsIndex, error_rate: float) -> int: ...
def cuckoo_num_buckets(capacity: _Count, bucket_size: int = 4) -> int: ...
def cuckoo_false_positive_rate(fingerprint_bits: int, bucket_size: int = 4, load_factor: float = 1.0) -> float: ...
def stage_false_positive_rate(
    fingerprint_bits: int, stage: int, bucket_size: int = 4, load_factor: float = 1.0
) -> float: ...
def cuckoo_params(
    capacity: _Count,
    error_rate: float | None = None,
    bucket_size: int = 4,
    *,
    fingerprint_bits: int | None = None,
    auto_grow: bool = False,
) -> CuckooParams: ...
def _optimal_hashes(num_bits: int, capacity: int) -> int: ...
def _check_int(value: SupportsIndex, name: str, low: int, high: int) -> int: ...
def _chain_false_positive_rate(fingerprint_bits: int, bucket_size: int) -> float: ...
def _cuckoo_bound(fingerprint_bits: int, bucket_size: int, auto_grow: bool) -> float: ...
