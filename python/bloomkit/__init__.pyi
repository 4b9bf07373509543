from . import calc as calc
from . import plot as plot
from ._base import _Key
from ._base import load as load
from ._capacity import CapacityWarning as CapacityWarning
from ._core import SecretKeyError as SecretKeyError
from ._core import canonical_bytes as canonical_bytes
from ._window import WindowSpec as WindowSpec
from .binary_fuse import BinaryFuseFilter as BinaryFuseFilter
from .bloom import (
    BloomFilter as BloomFilter,
)
from .bloom import (
    estimate_intersection_size as estimate_intersection_size,
)
from .bloom import (
    estimate_union_size as estimate_union_size,
)
from .bloom import (
    jaccard as jaccard,
)
from .calc import (
    BloomParams as BloomParams,
)
from .calc import (
    CuckooParams as CuckooParams,
)
from .calc import (
    bloom_capacity as bloom_capacity,
)
from .calc import (
    bloom_params as bloom_params,
)
from .calc import (
    cuckoo_params as cuckoo_params,
)
from .calc import (
    false_positive_rate as false_positive_rate,
)
from .counting_bloom import CountingBloomFilter as CountingBloomFilter
from .cuckoo import (
    CuckooFilter as CuckooFilter,
)
from .cuckoo import (
    FilterFullError as FilterFullError,
)
from .cuckoo import (
    TooManyCopiesError as TooManyCopiesError,
)
from .dedup import dedup_mask as dedup_mask
from .orc_bloom import OrcBloomFilter as OrcBloomFilter
from .rotating_bloom import RotatingBloomFilter as RotatingBloomFilter
from .scalable_bloom import ScalableBloomFilter as ScalableBloomFilter
from .spark_sketch import SparkBloomFilter as SparkBloomFilter

__version__: str

def hash128(key: _Key, seed: int = 0) -> int: ...

__all__ = [
    "BinaryFuseFilter",
    "BloomFilter",
    "BloomParams",
    "CapacityWarning",
    "CountingBloomFilter",
    "CuckooFilter",
    "CuckooParams",
    "FilterFullError",
    "OrcBloomFilter",
    "RotatingBloomFilter",
    "ScalableBloomFilter",
    "SecretKeyError",
    "SparkBloomFilter",
    "TooManyCopiesError",
    "WindowSpec",
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
