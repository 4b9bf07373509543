from . import calc as calc
from . import plot as plot
from ._base import _Key, load as load
from ._capacity import CapacityWarning as CapacityWarning
from ._core import canonical_bytes as canonical_bytes
from .bloom import (
    BloomFilter as BloomFilter,
    estimate_intersection_size as estimate_intersection_size,
    estimate_union_size as estimate_union_size,
    jaccard as jaccard,
)
from .calc import (
    BloomParams as BloomParams,
    CuckooParams as CuckooParams,
    bloom_capacity as bloom_capacity,
    bloom_params as bloom_params,
    cuckoo_params as cuckoo_params,
    false_positive_rate as false_positive_rate,
)
from .counting_bloom import CountingBloomFilter as CountingBloomFilter
from .cuckoo import (
    CuckooFilter as CuckooFilter,
    FilterFullError as FilterFullError,
    TooManyCopiesError as TooManyCopiesError,
)
from .dedup import dedup_mask as dedup_mask
from .scalable_bloom import ScalableBloomFilter as ScalableBloomFilter

__version__: str

def hash128(key: _Key, seed: int = 0) -> int: ...

__all__ = [
    "BloomFilter",
    "BloomParams",
    "CapacityWarning",
    "CountingBloomFilter",
    "CuckooFilter",
    "CuckooParams",
    "FilterFullError",
    "ScalableBloomFilter",
    "TooManyCopiesError",
    "bloom_capacity",
    "bloom_params",
    "calc",
    "canonical_bytes",
    "cuckoo_params",
    "dedup_mask",
    "estimate_intersection_size",
    "estimate_union_size",
    "false_positive_rate",
    "hash128",
    "jaccard",
    "load",
]
