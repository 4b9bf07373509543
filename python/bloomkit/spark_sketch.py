"""Apache Spark's Bloom filter, bit for bit: read, query, build and write Spark's bytes.

``bloomkit.BloomFilter(capacity, error_rate, hashing="spark")`` and
``bloomkit.BloomFilter.from_spark_bytes(data)`` return a :class:`SparkBloomFilter`.
It answers exactly as ``org.apache.spark.util.sketch.BloomFilter.mightContain``
(longs through Spark's ``hashLong``, strings as UTF-8 and binary through its
``hashUnsafeBytes``) and :meth:`SparkBloomFilter.to_spark_bytes` writes what
Spark's ``BloomFilter.readFrom`` reads. The hashing and layout are in
``cpp/include/bloomkit/spark_sketch.hpp`` and docs/FORMAT.md. No pyspark needed.

It is a filter like the others (the shared batch inputs, copies, pickling,
``save``/``load``, equality, repr), except that its bytes are Spark's format,
not a bloomkit frame: ``to_bytes``/``from_bytes`` are ``to_spark_bytes``/
``from_spark_bytes``, and ``bloomkit.load`` does not read them.
"""

from __future__ import annotations

import math

from . import _core, calc
from ._algebra import UnionMixin
from ._fill import FillEstimates
from ._foreign import ForeignFormatFilter

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


class SparkBloomFilter(FillEstimates, UnionMixin, ForeignFormatFilter, _core.SparkBloomCore):
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
    (like Spark binary), and every batch input of the other filters (NumPy
    arrays, pyarrow and polars columns, pandas Series, lists, iterables).

    Spark's bytes hold the bits, not the request: ``capacity`` and
    ``error_rate`` are those given here (kept by copies and pickles) and
    ``None`` for a filter read from Spark's bytes.

    Examples
    --------
    >>> f = SparkBloomFilter(1000, 0.01, seed=7)
    >>> f.update(["alice", "bob", 42])
    >>> "alice" in f, 42 in f, "carol" in f
    (True, True, False)
    >>> SparkBloomFilter.from_spark_bytes(f.to_spark_bytes()) == f
    True
    """

    _core_class = _core.SparkBloomCore
    _format_name = "Spark"
    _summary_fields = ("capacity", "error_rate", "version", "num_bits", "num_hashes", "seed", "nbytes")

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
        self._request = (calc.check_capacity(capacity), calc.check_error_rate(error_rate))

    # -- Spark's bytes are this type's bytes -----------------------------
    @classmethod
    def from_spark_bytes(cls, data) -> "SparkBloomFilter":
        """Read bytes written by Spark's ``BloomFilter.writeTo`` (version 1 or 2).

        The header is validated against the length before anything is
        allocated; ``ValueError`` names the field that is wrong.
        """
        instance = cls.__new__(cls)
        _core.SparkBloomCore.__init__(instance, data)
        return instance

    _from_foreign = from_spark_bytes
    _to_foreign = _core.SparkBloomCore.to_spark_bytes

    # -- estimates (fill_ratio, estimated_fpr = Spark's expectedFpp(), len:
    # _fill.py), union (| |=: _algebra.py) ---------------------------------
    _occupied = _core.SparkBloomCore._set_bits


SparkBloomFilter._algebra_class = SparkBloomFilter
