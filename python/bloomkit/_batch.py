"""Batch inputs the C++ key adapter does not read directly.

``bloomkit._core`` takes NumPy arrays, lists, tuples, any iterable and
``OffsetBatch`` (Arrow's data + offsets buffers). This module turns pyarrow
arrays and pandas objects into those without a per-key Python loop, so the
key table of docs/DESIGN.md holds for them too. Everything else is passed through
unchanged and validated in C++.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _core

_ARROW_BINARY_WIDTH = {"string": 4, "binary": 4, "large_string": 8, "large_binary": 8}


def key_batches(keys, combine_chunks: bool = False) -> list:
    """Return the list of batches (usually one) that ``keys`` consists of.

    Every batch is fully validated here or by the core's key adapter before
    any filter is changed, so a rejected input leaves the filter as it was.
    A chunked Arrow array gives one batch per chunk unless ``combine_chunks``
    (then its chunks are copied into one array first).
    """
    module = type(keys).__module__ or ""
    if module.startswith("pyarrow"):
        return _arrow_batches(keys, combine_chunks)
    if module.startswith("pandas"):
        return _pandas_batches(keys, combine_chunks)
    return [keys]


def single_batch(keys):
    """``keys`` as exactly one batch, for all-or-nothing operations and for
    errors that name a key's index in the whole input (chunked Arrow data is
    combined into one array: one copy)."""
    return key_batches(keys, combine_chunks=True)[0]


def _pandas_batches(keys, combine_chunks: bool = False) -> list:
    if _is_arrow_backed(getattr(keys, "dtype", None)) and "pyarrow" in sys.modules:
        import pyarrow as pa

        return _arrow_batches(pa.array(keys.array), combine_chunks)
    if hasattr(keys, "to_numpy"):
        return [keys.to_numpy()]
    return [keys]


def _is_arrow_backed(dtype) -> bool:
    """Whether a pandas dtype keeps its values in pyarrow memory.

    ``str(dtype)`` does not say so: ``string[pyarrow]`` and pandas 3's
    default ``str`` both print as ``string``/``str``. The storage attribute
    of ``StringDtype`` and the ``ArrowDtype`` class do, and reading such a
    column through Arrow's buffers avoids materialising one Python ``str``
    per row (about 4x faster than ``to_numpy()`` on 1M strings).
    """
    if dtype is None:
        return False
    return getattr(dtype, "storage", None) == "pyarrow" or type(dtype).__name__ == "ArrowDtype"


def _arrow_batches(keys, combine_chunks: bool = False) -> list:
    import pyarrow as pa

    if isinstance(keys, pa.ChunkedArray):
        if combine_chunks:
            return _arrow_batches(keys.combine_chunks())
        batches = []
        for chunk in keys.chunks:
            batches.extend(_arrow_batches(chunk))
        return batches
    if not isinstance(keys, pa.Array):
        raise TypeError(f"unsupported pyarrow key container '{type(keys).__name__}': pass an Array or ChunkedArray")
    if keys.null_count:
        first_null = int(np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"key at index {first_null} is null: keys must not be None / null")
    arrow_type = keys.type
    if pa.types.is_dictionary(arrow_type):
        return _arrow_batches(keys.dictionary_decode())
    if pa.types.is_string_view(arrow_type) or pa.types.is_binary_view(arrow_type):
        target = pa.large_string() if pa.types.is_string_view(arrow_type) else pa.large_binary()
        return _arrow_batches(keys.cast(target))
    if pa.types.is_integer(arrow_type):
        return [keys.to_numpy(zero_copy_only=False)]
    width = _ARROW_BINARY_WIDTH.get(str(arrow_type))
    if width is None:
        raise TypeError(f"unsupported pyarrow key type '{arrow_type}': keys must be string, binary or integer")
    _, offsets_buffer, data_buffer = keys.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32 if width == 4 else np.int64)
    offsets = offsets[keys.offset : keys.offset + len(keys) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    if len(offsets) == 0:
        offsets = np.zeros(1, dtype=offsets.dtype)
    return [_core.OffsetBatch(data, offsets)]
