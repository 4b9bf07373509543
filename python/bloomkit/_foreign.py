"""What the filters whose bytes are another system's format share (Spark's, ORC's).

:class:`ForeignFormatFilter` is the ``FilterBase`` of a Bloom filter that
hashes and serializes keys exactly as another system does: its batches are
the shared batch path (``_batch.py``) read as that system's 32-bit hash pairs
(:class:`HashPairs`), its bytes (``to_bytes``, ``save``, pickles) are the
foreign format, not a bloomkit frame, and it remembers the
``(capacity, error_rate)`` it was created for, which those bytes do not hold.
A subclass names its format's reader and writer (``_from_foreign`` /
``_to_foreign``) and its core class; the core provides ``_pairs_of_objects``,
``_pairs_of_longs``, ``_pairs_of_offsets``, ``_add_pairs`` and
``_contains_pairs``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from . import _batch, _core, calc
from ._base import FilterBase

__all__ = ["ForeignFormatFilter", "HashPairs", "check_key_array"]


class HashPairs:
    """The shared batch path's batches (bloomkit/_batch.py) as one filter's hash pairs, shape (n, 2).

    Computing the pairs validates every key, so a refused batch leaves the
    filter as it was, as with the other types. ``float_arrays``: the core
    hashes float arrays itself (``_pairs_of_doubles``, a double type of its
    own) instead of as Python objects.
    """

    float_arrays = False

    def __init__(self, filter_):
        self.filter = filter_

    def array(self, values):
        check_key_array(values)
        if values.dtype.kind == "V" or values.ndim == 2:
            # Raw binary keys, NULs kept (an element of dtype V<n>, or a row of
            # a 2-D uint8 array): binary, read as offsets into one buffer.
            rows = np.ascontiguousarray(values).view(np.uint8).reshape(len(values), -1)
            offsets = np.arange(len(rows) + 1, dtype=np.int64) * rows.shape[1]
            return self.filter._pairs_of_offsets(rows.ravel(), offsets)
        if values.dtype.kind in "iu":
            # Java longs: unsigned values wrap to the same 64 bits.
            longs = values.astype(np.uint64).view(np.int64) if values.dtype.kind == "u" else values.astype(np.int64)
            return self.filter._pairs_of_longs(np.ascontiguousarray(longs))
        if values.dtype.kind == "f" and self.float_arrays:
            # Java doubles; float32 values widen exactly, as Java's (double) f.
            return self.filter._pairs_of_doubles(np.ascontiguousarray(values, dtype=np.float64))
        return self.filter._pairs_of_objects(values)

    def offsets(self, arrow_array, data, offsets):
        return self.filter._pairs_of_offsets(data, offsets.astype(np.int64))

    def views(self, arrow_array, views, buffers):
        import pyarrow as pa

        # Strings and binary are hashed by their bytes: the views read as offsets.
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


def check_key_array(values) -> None:
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


class ForeignFormatFilter(FilterBase):
    """A filter whose bytes are another system's format (see the module docstring)."""

    __slots__ = ()
    _format_name = ""  # "Spark", "ORC": in messages
    _pairs_reader = HashPairs

    @classmethod
    def _from_foreign(cls, data):
        raise NotImplementedError

    def _to_foreign(self) -> bytes:
        raise NotImplementedError

    @property
    def keyed(self) -> bool:
        """False: the foreign hashing takes no secret key."""
        _ = self.num_bits  # an uninitialised instance raises TypeError here, as for every attribute
        return False

    def _requested(self) -> tuple:
        """(capacity, error_rate) given to the constructor; (None, None) when read from the foreign bytes."""
        _ = self.num_bits  # an uninitialised instance raises TypeError here, as for every attribute
        return self.__dict__.get("_request", (None, None))

    @property
    def capacity(self) -> "int | None":
        """The capacity this filter was created for (None when read from the foreign bytes)."""
        return self._requested()[0]

    @property
    def error_rate(self) -> "float | None":
        """The error rate this filter was created for (None when read from the foreign bytes)."""
        return self._requested()[1]

    # -- the foreign bytes are this type's bytes ------------------------
    @classmethod
    def from_bytes(cls, data, *, secret_key=None):
        """The foreign format's reader (that format has no secret key: ``secret_key`` must be None)."""
        if secret_key is not None:
            raise TypeError(f"{cls.__name__} has no secret_key ({cls._format_name}'s hashing is not keyed)")
        return cls._from_foreign(data)

    def to_bytes(self):
        """The foreign format's bytes (the class's ``to_*_bytes``)."""
        return self._to_foreign()

    def _stream_to(self, handle) -> None:
        handle.write(self._to_foreign())

    @classmethod
    def load(cls, path, *, secret_key=None):
        """Read a filter saved with :meth:`save` (the foreign bytes) from a path or bytes."""
        if not isinstance(path, (str, os.PathLike)):
            return cls.from_bytes(path, secret_key=secret_key)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > _core.available_memory():
                raise ValueError(f"{os.fspath(path)}: {size:,} bytes, more than the memory available")
            return cls.from_bytes(handle.read(), secret_key=secret_key)

    def copy(self):
        duplicate = super().copy()
        if "_request" in self.__dict__:
            duplicate._request = self._request
        return duplicate

    def __reduce_ex__(self, protocol):
        # The foreign bytes and the request they do not hold; unpickling runs
        # only the validating reader.
        return (type(self)._restore, (self._to_foreign(), self.capacity, self.error_rate))

    @classmethod
    def _restore(cls, data, capacity, error_rate):
        instance = cls._from_foreign(data)
        if capacity is not None:
            instance._request = (calc.check_capacity(capacity), calc.check_error_rate(error_rate))
        return instance

    # -- batches: the shared batch path, as hash pairs -------------------
    def _key_batches(self, keys) -> list:
        return _batch.key_batches(keys, self._pairs_reader(self))

    def _add_many(self, pairs) -> np.ndarray:
        return self._add_pairs(pairs, True)

    def _update(self, pairs) -> None:
        self._add_pairs(pairs, False)

    def _contains_many(self, pairs) -> np.ndarray:
        return self._contains_pairs(pairs)
