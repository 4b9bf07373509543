"""Apache Spark's Bloom filter, bit for bit: read, query, build and write Spark's bytes.

``bloomkit.BloomFilter(capacity, error_rate, hashing="spark")`` and
``bloomkit.BloomFilter.from_spark_bytes(data)`` return a :class:`SparkBloomFilter`.
It answers exactly as ``org.apache.spark.util.sketch.BloomFilter.mightContain``
(longs through Spark's ``hashLong``, strings as UTF-8 and binary through its
``hashUnsafeBytes``) and :meth:`SparkBloomFilter.to_spark_bytes` writes what
Spark's ``BloomFilter.readFrom`` reads. The hashing and layout are in
``cpp/include/bloomkit/spark_sketch.hpp`` and docs/FORMAT.md. No pyspark needed.
"""

from __future__ import annotations

import math

import numpy as np

from . import _core, calc
from ._algebra import UnionMixin
from ._fill import FillEstimates

__all__ = ["SparkBloomFilter", "spark_bloom_params"]

_INT32 = 2**31


def spark_bloom_params(capacity, error_rate):
    """``(num_bits, num_hashes)`` exactly as Spark's ``BloomFilter.create(n, fpp)`` sizes them.

    ``optimalNumOfBits``: ``(long)(-n ln p / (ln 2)^2)``; ``optimalNumOfHashFunctions``:
    ``max(1, Math.round(num_bits / n * ln 2))``. Spark then rounds the bits up
    to whole 64-bit words.
    """
    capacity = calc.check_capacity(capacity)
    error_rate = calc.check_error_rate(error_rate)
    num_bits = int(-capacity * math.log(error_rate) / (math.log(2) * math.log(2)))
    if num_bits < 1:
        raise ValueError(f"capacity {capacity} at error_rate {error_rate} gives no bits (Spark needs at least one)")
    num_hashes = max(1, math.floor(num_bits / capacity * math.log(2) + 0.5))
    return num_bits, num_hashes


class SparkBloomFilter(FillEstimates, UnionMixin, _core.SparkBloomCore):
    """A Bloom filter with Spark's hashing and layout (``org.apache.spark.util.sketch``).

    Parameters
    ----------
    capacity, error_rate
        Sized like Spark's ``BloomFilter.create(capacity, error_rate)``
        (Spark's default error rate is 0.03; bloomkit's 0.01 is kept here).
    seed : int, keyword-only
        Spark's seed, a Java int in [-2**31, 2**31); version 2 only.
    version : {2, 1}, keyword-only
        Spark's serialization version: 2 (Spark >= 4.1, the default there)
        or 1 (earlier Spark; seed 0, 32-bit index arithmetic).

    Keys: ``int`` (as a Java long; ``2**63..2**64-1`` wrap to negative longs,
    the same 64 bits), ``str`` (UTF-8, like Spark strings) and bytes-like
    (like Spark binary), NumPy integer arrays, pyarrow string/binary/integer
    arrays, pandas Series, lists and iterables.
    """

    def __init__(self, capacity, error_rate=0.01, *, seed=0, version=2):
        num_bits, num_hashes = spark_bloom_params(capacity, error_rate)
        if isinstance(seed, bool) or not isinstance(seed, int) or not -_INT32 <= seed < _INT32:
            raise ValueError(f"seed must be a Java int in [-2**31, 2**31), got {seed!r}")
        if version not in (1, 2):
            raise ValueError(f"version must be 1 or 2, got {version!r}")
        if version == 1 and seed != 0:
            raise ValueError("Spark's version 1 filters have no seed; use version=2 for a seed")
        if num_hashes >= 2**16:
            raise ValueError(f"capacity {capacity} at error_rate {error_rate} needs {num_hashes} hash functions")
        _core.SparkBloomCore.__init__(self, version, num_hashes, seed, -(-num_bits // 64))

    @classmethod
    def from_spark_bytes(cls, data) -> "SparkBloomFilter":
        """Read bytes written by Spark's ``BloomFilter.writeTo`` (version 1 or 2).

        The header is validated against the length before anything is
        allocated; ``ValueError`` names the field that is wrong.
        """
        instance = cls.__new__(cls)
        _core.SparkBloomCore.__init__(instance, data)
        return instance

    # -- batches ---------------------------------------------------------
    def _pairs(self, keys) -> np.ndarray:
        """Spark's (h1, h2) of every key, validating them all first."""
        module = type(keys).__module__ or ""
        if module.startswith("pandas"):
            keys = keys.array if hasattr(keys, "array") and "pyarrow" in str(keys.dtype) else keys.to_numpy()
            module = type(keys).__module__ or ""
        if module.startswith("pandas") and hasattr(keys, "__arrow_array__"):
            import pyarrow as pa

            keys = pa.array(keys)
            module = "pyarrow"
        if module.startswith("pyarrow"):
            return self._arrow_pairs(keys)
        if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
            values = np.ascontiguousarray(keys.ravel())
            values = values.astype(np.uint64).view(np.int64) if keys.dtype.kind == "u" else values.astype(np.int64)
            return self._pairs_of_longs(values)
        return self._pairs_of_objects(keys)

    def _arrow_pairs(self, keys) -> np.ndarray:
        import pyarrow as pa

        if isinstance(keys, pa.ChunkedArray):
            parts = [self._arrow_pairs(chunk) for chunk in keys.chunks]
            return np.concatenate(parts) if parts else np.empty((0, 2), dtype=np.int32)
        if keys.null_count:
            raise ValueError(f"keys contain {keys.null_count} nulls; drop them first (Spark skips nulls)")
        kind = keys.type
        if pa.types.is_integer(kind):
            return self._pairs(keys.to_numpy(zero_copy_only=False))
        if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind):
            width = np.int64
        elif pa.types.is_string(kind) or pa.types.is_binary(kind):
            width = np.int32
        else:
            raise TypeError(f"unsupported Arrow key type {kind} (strings, binary or integers)")
        _validity, offsets, data = keys.buffers()
        offsets = np.frombuffer(offsets, dtype=width)[keys.offset : keys.offset + len(keys) + 1].astype(np.int64)
        data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8)
        return self._pairs_of_offsets(data, offsets)

    def add_many(self, keys) -> np.ndarray:
        """Insert every key in order; per key, whether it was (probably) present before."""
        return self._add_pairs(self._pairs(keys), True)

    def update(self, keys) -> None:
        """Insert every key."""
        self._add_pairs(self._pairs(keys), False)

    def contains_many(self, keys) -> np.ndarray:
        """Per key, whether Spark's ``mightContain`` would say True."""
        return self._contains_pairs(self._pairs(keys))

    # -- estimates (fill_ratio, estimated_fpr = Spark's expectedFpp(), len:
    # _fill.py), union (| |=: _algebra.py), copies ------------------------
    _occupied = _core.SparkBloomCore._set_bits

    def copy(self) -> "SparkBloomFilter":
        duplicate = type(self).__new__(type(self))
        _core.SparkBloomCore.__init__(duplicate, self)
        return duplicate

    __copy__ = copy

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return (type(self).from_spark_bytes, (self.to_spark_bytes(),))

    def __eq__(self, other):
        if not isinstance(other, SparkBloomFilter):
            return NotImplemented
        return self._equals(other)

    __hash__ = None

    def __repr__(self) -> str:
        return (
            f"SparkBloomFilter(version={self.version}, num_bits={self.num_bits}, num_hashes={self.num_hashes}, "
            f"seed={self.seed}, fill_ratio={self.fill_ratio:.4f})"
        )


SparkBloomFilter._algebra_class = SparkBloomFilter
