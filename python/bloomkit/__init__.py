"""bloomkit: fast, honest approximate-membership filters with a C++ core.

>>> import bloomkit
>>> seen = bloomkit.BloomFilter(capacity=1_000_000, error_rate=0.001)
>>> seen.add("https://example.com/a")
False
>>> "https://example.com/a" in seen
True
"""

from . import _core, _types, calc
from ._base import load
from ._capacity import CapacityWarning
from ._core import SecretKeyError, canonical_bytes
from ._window import WindowSpec
from .bloom import estimate_intersection_size, estimate_union_size, jaccard
from .calc import BloomParams, CuckooParams, bloom_capacity, bloom_params, cuckoo_params, false_positive_rate
from .cuckoo import FilterFullError, TooManyCopiesError
from .dedup import dedup_mask

# Every filter class, from the one list of types (bloomkit/_types.py).
_FILTER_CLASSES = _types.classes()
globals().update(_FILTER_CLASSES)

__version__ = "0.1.0"


def hash128(key, seed=0) -> int:
    """MurmurHash3_x64_128 of ``key``'s canonical bytes, as an unsigned 128-bit int.

    Equals ``mmh3.hash128(canonical_bytes(key), seed, signed=False)``; the low
    and high 64-bit halves drive every filter's index derivation.
    """
    return _core.hash128(key, calc.check_seed(seed))


def __getattr__(name):
    # bloomkit.plot imports matplotlib only when first used (the [plot] extra).
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'bloomkit' has no attribute {name!r}")


__all__ = [
    "BloomParams",
    "CapacityWarning",
    "CuckooParams",
    "FilterFullError",
    "SecretKeyError",
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
__all__ += list(_FILTER_CLASSES)
