from typing import Any, Literal, NamedTuple, SupportsIndex, Union

from typing_extensions import TypeAlias

__all__ = [
    "BloomParams",
    "DEFAULT_LAYOUT_MEMORY_BOUND",
    "default_layout",
    "LAYOUTS",
    "layout_table",
    "check_layout",
    "CuckooParams",
    "cuckoo_false_positive_rate",
    "cuckoo_max_capacity",
    "cuckoo_num_buckets",
    "cuckoo_params",
    "stage_false_positive_rate",
    "bloom_params",
    "false_positive_rate",
    "bloom_capacity",
    "check_capacity",
    "check_error_rate",
    "check_seed",
    "check_num_hashes",
    "check_counter_bits",
    "classic_params_with_hashes",
    "MAX_CAPACITY",
    "MAX_HASHES",
    "COUNTER_WIDTHS",
    "DEFAULT_COUNTER_BITS",
    "power_of_two",
    "check_bucket_size",
    "check_fingerprint_bits",
    "layout_false_positive_rate",
]

# Capacities accept ints and integral floats (1e6); docs/decisions.md.
_Count: TypeAlias = Union[SupportsIndex, float]

# Bloom filter bit layouts (docs/DESIGN.md, "Sizing"): "classic", "blocked512", "split_block".
_Layout: TypeAlias = Literal["classic", "blocked512", "split_block"]

LN2: float
LIMITS: dict[str, Any]
LAYOUTS: tuple[str, ...]
DEFAULT_LAYOUT_MEMORY_BOUND: float  # 1.10
MAX_CAPACITY: int
MAX_HASHES: int
DEFAULT_COUNTER_BITS: int
COUNTER_WIDTHS: tuple[int, ...]
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
    layout: str = "classic"
    overhead: float = 0.0
    default: bool = False

class CuckooParams(NamedTuple):
    num_buckets: int
    fingerprint_bits: int
    nbytes: int
    error_rate: float

def check_capacity(capacity: _Count, name: str = "capacity") -> int: ...
def check_error_rate(error_rate: float, name: str = "error_rate") -> float: ...
def check_seed(seed: SupportsIndex) -> int: ...
def power_of_two(value: int) -> str: ...
def check_num_hashes(num_hashes: SupportsIndex) -> int: ...
def check_counter_bits(counter_bits: SupportsIndex) -> int: ...
def classic_params_with_hashes(capacity: _Count, error_rate: float, num_hashes: SupportsIndex) -> BloomParams: ...
def check_bucket_size(bucket_size: SupportsIndex) -> int: ...
def check_fingerprint_bits(fingerprint_bits: SupportsIndex) -> int: ...
def false_positive_rate(num_bits: int, num_items: int, num_hashes: int) -> float: ...
def check_layout(layout: str | None) -> str: ...
def default_layout(capacity: _Count, error_rate: float) -> str: ...
def bloom_params(capacity: _Count, error_rate: float, layout: _Layout | None = None) -> BloomParams: ...
def layout_table(capacity: _Count, error_rate: float) -> list[BloomParams]: ...
def layout_false_positive_rate(layout: _Layout, num_bits: int, num_items: int, num_hashes: int) -> float: ...
def bloom_capacity(num_bits: SupportsIndex, error_rate: float) -> int: ...
def cuckoo_max_capacity(bucket_size: int = 4) -> int: ...
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
def _check_int(value: SupportsIndex, name: str, low: int, high: int) -> int: ...
