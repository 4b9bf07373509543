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
import os
from collections.abc import Iterable

import numpy as np

from . import _batch, _core, calc
from ._algebra import UnionMixin
from ._base import FilterBase
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


class _SparkPairs:
    """The shared batch path's batches (bloomkit/_batch.py) as one filter's Spark hash pairs, shape (n, 2).

    Computing the pairs validates every key, so a refused batch leaves the
    filter as it was, as with the other types.
    """

    def __init__(self, filter_):
        self.filter = filter_

    def array(self, values):
        _check_key_array(values)
        if values.dtype.kind == "V" or values.ndim == 2:
            # Raw binary keys, NULs kept (an element of dtype V<n>, or a row of
            # a 2-D uint8 array): Spark binary, read as offsets into one buffer.
            rows = np.ascontiguousarray(values).view(np.uint8).reshape(len(values), -1)
            offsets = np.arange(len(rows) + 1, dtype=np.int64) * rows.shape[1]
            return self.filter._pairs_of_offsets(rows.ravel(), offsets)
        if values.dtype.kind in "iu":
            # Spark longs: unsigned values wrap to the same 64 bits.
            longs = values.astype(np.uint64).view(np.int64) if values.dtype.kind == "u" else values.astype(np.int64)
            return self.filter._pairs_of_longs(np.ascontiguousarray(longs))
        return self.filter._pairs_of_objects(values)

    def offsets(self, arrow_array, data, offsets):
        return self.filter._pairs_of_offsets(data, offsets.astype(np.int64))

    def views(self, arrow_array, views, buffers):
        import pyarrow as pa

        # Spark hashes strings and binary by their bytes: the views read as offsets.
        wide = pa.large_string() if pa.types.is_string_view(arrow_array.type) else pa.large_binary()
        return _batch.key_batches(arrow_array.cast(wide), self)[0]

    def chunks(self, batches):
        return np.concatenate(batches)

    def other(self, keys):
        if isinstance(keys, (str, bytes, bytearray, memoryview)):
            raise TypeError(
                f"expected an iterable of keys, got a single '{type(keys).__name__}' (wrap one key in a list)"
            )
        if not isinstance(keys, Iterable):
            raise TypeError(f"expected an iterable of keys, got '{type(keys).__name__}'")
        return self.filter._pairs_of_objects(keys)


def _check_key_array(values) -> None:
    """The array checks bloomkit's key batches make (cpp/bindings/keys.cpp), with the same messages."""
    kind = values.dtype.kind
    if values.ndim == 2 and kind == "u" and values.dtype.itemsize == 1:
        return
    if values.ndim != 1:
        raise ValueError(
            f"key arrays must be 1-D (or 2-D uint8, one binary key per row), got a {values.ndim}-D array of dtype "
            f"'{values.dtype}'"
        )
    if kind not in "iufSUVOMm":
        raise TypeError(
            f"unsupported key array dtype '{values.dtype}': key arrays must hold integers, floats, "
            "datetime64/timedelta64, bytes (S), raw binary (V), str (U) or objects"
        )


class SparkBloomFilter(FillEstimates, UnionMixin, FilterBase, _core.SparkBloomCore):
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

    @property
    def keyed(self) -> bool:
        """False: Spark's hashing takes no secret key."""
        _ = self.num_bits  # an uninitialised instance raises TypeError here, as for every attribute
        return False

    def _requested(self) -> tuple:
        """(capacity, error_rate) given to the constructor; (None, None) when read from Spark's bytes."""
        _ = self.num_bits  # an uninitialised instance raises TypeError here, as for every attribute
        return self.__dict__.get("_request", (None, None))

    @property
    def capacity(self) -> "int | None":
        """The capacity this filter was created for (None when read from Spark's bytes)."""
        return self._requested()[0]

    @property
    def error_rate(self) -> "float | None":
        """The error rate this filter was created for (None when read from Spark's bytes)."""
        return self._requested()[1]

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

    @classmethod
    def from_bytes(cls, data, *, secret_key=None) -> "SparkBloomFilter":
        """:meth:`from_spark_bytes` (Spark's format has no secret key: ``secret_key`` must be None)."""
        if secret_key is not None:
            raise TypeError("a SparkBloomFilter has no secret_key (Spark's hashing is not keyed)")
        return cls.from_spark_bytes(data)

    def to_bytes(self):
        """:meth:`to_spark_bytes`: what Spark's ``BloomFilter.readFrom`` reads."""
        return self.to_spark_bytes()

    def _stream_to(self, handle) -> None:
        handle.write(self.to_spark_bytes())

    @classmethod
    def load(cls, path, *, secret_key=None) -> "SparkBloomFilter":
        """Read a filter saved with :meth:`save` (Spark's bytes) from a path or bytes."""
        if not isinstance(path, (str, os.PathLike)):
            return cls.from_bytes(path, secret_key=secret_key)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > _core.available_memory():
                raise ValueError(f"{os.fspath(path)}: {size:,} bytes, more than the memory available")
            return cls.from_bytes(handle.read(), secret_key=secret_key)

    def copy(self) -> "SparkBloomFilter":
        duplicate = super().copy()
        if "_request" in self.__dict__:
            duplicate._request = self._request
        return duplicate

    def __reduce_ex__(self, protocol):
        # Spark's bytes and the request they do not hold; unpickling runs
        # only the validating reader.
        return (type(self)._restore, (self.to_spark_bytes(), self.capacity, self.error_rate))

    @classmethod
    def _restore(cls, data, capacity, error_rate) -> "SparkBloomFilter":
        instance = cls.from_spark_bytes(data)
        if capacity is not None:
            instance._request = (calc.check_capacity(capacity), calc.check_error_rate(error_rate))
        return instance

    # -- batches: the shared batch path, as Spark hash pairs ---------------
    def _key_batches(self, keys) -> list:
        return _batch.key_batches(keys, _SparkPairs(self))

    def _add_many(self, pairs) -> np.ndarray:
        return self._add_pairs(pairs, True)

    def _update(self, pairs) -> None:
        self._add_pairs(pairs, False)

    def _contains_many(self, pairs) -> np.ndarray:
        return self._contains_pairs(pairs)

    # -- estimates (fill_ratio, estimated_fpr = Spark's expectedFpp(), len:
    # _fill.py), union (| |=: _algebra.py) ---------------------------------
    _occupied = _core.SparkBloomCore._set_bits


SparkBloomFilter._algebra_class = SparkBloomFilter
