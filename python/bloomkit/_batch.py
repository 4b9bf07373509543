"""Batch inputs the C++ key adapter does not read directly.

``bloomkit._core`` takes NumPy arrays, lists, tuples, any iterable and
``OffsetBatch`` (Arrow's data + offsets buffers). This module turns pyarrow
arrays and pandas objects into those without a per-key Python loop, so the
key table of docs/DESIGN.md holds for them too. Everything else is passed through
unchanged and validated in C++.

What a recognised input becomes is the *reader*'s choice: ``CORE`` makes
the batch types of ``bloomkit._core``; a filter whose core reads other
batches (Spark's hash pairs, bloomkit/spark_sketch.py) passes its own, so
every filter recognises the same inputs in one place.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _core

_ARROW_BINARY_WIDTH = {"string": 4, "binary": 4, "large_string": 8, "large_binary": 8}


class CoreReader:
    """Recognised inputs as the batch types the cores of bloomkit._core read."""

    @staticmethod
    def array(values):
        return values  # a NumPy array, read in place

    @staticmethod
    def offsets(arrow_array, data, offsets):
        return _core.OffsetBatch(data, offsets)

    @staticmethod
    def views(arrow_array, views, buffers):
        return _core.ViewBatch(views, buffers)

    @staticmethod
    def chunks(batches):
        return _core.ChunkedBatch(batches)

    @staticmethod
    def other(keys):
        return keys  # lists, tuples, iterables: walked and validated by the core


CORE = CoreReader()


def key_batches(keys, reader=CORE) -> list:
    """Return the list of batches (one) that ``keys`` consists of.

    Every batch is fully validated here or by the core's key adapter before
    any filter is changed, so a rejected input leaves the filter as it was.
    A chunked Arrow array (pyarrow ChunkedArray, polars Series, an Arrow
    stream) is one ``ChunkedBatch`` of its chunks, each read in place.
    """
    module = type(keys).__module__ or ""
    if isinstance(keys, np.ndarray):
        return [reader.array(_numpy_keys(keys))]
    columns = frame_columns(keys)
    if columns is not None:
        raise TypeError(
            f"expected one column of keys, got a {_frame_kind(keys)} with columns {columns!r}: pass one column"
            + (f", e.g. frame[{columns[0]!r}]" if columns else "")
            + "; bloomkit.dedup_mask(frame) dedups whole rows"
        )
    if module.startswith("pyarrow"):
        return _arrow_batches(keys, reader)
    if module.startswith("pandas"):
        return _pandas_batches(keys, reader)
    if hasattr(keys, "__arrow_c_stream__") or hasattr(keys, "__arrow_c_array__"):
        return _arrow_batches(import_arrow(keys), reader)
    return [reader.other(keys)]


def frame_columns(obj) -> "list | None":
    """Column names if ``obj`` is a table (pandas / polars DataFrame, pyarrow Table / RecordBatch), else None."""
    module = type(obj).__module__ or ""
    if module.startswith("pandas") and hasattr(obj, "columns") and hasattr(obj, "iloc"):
        return [str(name) for name in obj.columns]
    if module.startswith("polars") and type(obj).__name__ in ("DataFrame", "LazyFrame"):
        return list(obj.columns)
    if module.startswith("pyarrow") and type(obj).__name__ in ("Table", "RecordBatch"):
        return list(obj.column_names)
    return None


def is_foreign_arrow(obj) -> bool:
    """An object with the Arrow PyCapsule interface that is not NumPy, pandas, pyarrow or a polars DataFrame."""
    module = type(obj).__module__ or ""
    if isinstance(obj, np.ndarray) or module.startswith(("pandas", "pyarrow")):
        return False
    return hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__arrow_c_array__")


def reversed_arrow(array):
    """A pyarrow (chunked) array in reverse order (one copy: Arrow has no negative strides)."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        # Chunk by chunk, last chunk first: one copy of the data, as for one chunk
        # (slicing the ChunkedArray with [::-1] peaked at twice that).
        return pa.chunked_array([reversed_arrow(chunk) for chunk in reversed(array.chunks)], type=_reversed_type(array))
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        # Arrow's take kernel has no view types yet.
        array = array.cast(_reversed_type(array))
    return array[::-1]


def _reversed_type(array):
    """The type of ``reversed_arrow(array)``: view types become large string/binary."""
    import pyarrow as pa

    if pa.types.is_string_view(array.type):
        return pa.large_string()
    if pa.types.is_binary_view(array.type):
        return pa.large_binary()
    return array.type


def _frame_kind(obj) -> str:
    return f"{type(obj).__module__.split('.')[0]} {type(obj).__name__}"


def import_arrow(obj, allow_struct: bool = False):
    """Any object with the Arrow PyCapsule interface as a pyarrow (chunked) array, zero-copy.

    pyarrow imports the capsule through the Arrow C Data Interface (no
    Python object per value); it is therefore needed for such inputs
    (polars Series, nanoarrow arrays, DuckDB results, ...), and the error
    says so when it is missing.
    """
    try:
        import pyarrow as pa
    except ImportError as error:
        raise ImportError(
            f"reading a {type(obj).__name__} as keys goes through the Arrow C Data Interface, which needs "
            "pyarrow: pip install pyarrow"
        ) from error
    if hasattr(obj, "__arrow_c_stream__"):
        imported = pa.chunked_array(obj)
    else:
        imported = pa.array(obj)
    if pa.types.is_struct(imported.type):
        if allow_struct:
            # A table: one chunked array per field, no copy.
            return pa.Table.from_arrays(imported.flatten(), names=[field.name for field in imported.type])
        names = [field.name for field in imported.type]
        raise TypeError(
            f"expected one column of keys, got a {_frame_kind(obj)} of Arrow type struct with fields {names!r}: "
            "pass one column; bloomkit.dedup_mask(frame) dedups whole rows"
        )
    return imported


def _numpy_keys(array):
    """NumPy arrays the core reads as they are, except calendar datetime units (Y, M), converted to days."""
    if array.dtype.kind == "M" and np.datetime_data(array.dtype)[0] in ("Y", "M"):
        return array.astype("datetime64[D]")
    return array


def single_batch(keys):
    """``keys`` as exactly one batch, for all-or-nothing operations and for
    errors that name a key's index in the whole input (chunked Arrow data is
    a ``ChunkedBatch``, read in place)."""
    return key_batches(keys)[0]


def _chunked_batch(keys, reader):
    """A ChunkedArray as one batch: its only non-empty chunk, or a ``ChunkedBatch`` of every
    non-empty chunk read in place (no combined copy: the working memory of one chunk)."""
    _refuse_nulls(keys)
    chunks = [chunk for chunk in keys.chunks if len(chunk)]
    if not chunks:
        return _arrow_batches(keys.combine_chunks(), reader)[0]  # empty: nothing to copy
    if len(chunks) == 1:
        return _arrow_batches(chunks[0], reader)[0]
    return reader.chunks([_arrow_batches(chunk, reader)[0] for chunk in chunks])


def _refuse_nulls(keys) -> None:
    """ValueError naming the first null's index in the whole (chunked) array."""
    if not keys.null_count:
        return
    start = 0
    for chunk in getattr(keys, "chunks", [keys]):
        if chunk.null_count:
            first_null = start + int(np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"key at index {first_null} is null: keys must not be None / null")
        start += len(chunk)


def _pandas_batches(keys, reader) -> list:
    if _is_arrow_backed(getattr(keys, "dtype", None)) and "pyarrow" in sys.modules:
        import pyarrow as pa

        return _arrow_batches(pa.array(keys.array), reader)
    dtype = getattr(keys, "dtype", None)
    if getattr(dtype, "tz", None) is not None:
        # tz-aware datetimes: their UTC instants (to_numpy() would give Timestamp objects).
        instants = np.asarray(keys.array.tz_convert("UTC").tz_localize(None)).astype("datetime64[ns]", copy=False)
        return [reader.array(instants)]
    if hasattr(keys, "to_numpy"):
        return [reader.array(_numpy_keys(keys.to_numpy()))]
    return [reader.other(keys)]


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


def _arrow_batches(keys, reader=CORE) -> list:
    import pyarrow as pa

    if isinstance(keys, pa.ChunkedArray):
        return [_chunked_batch(keys, reader)]
    if not isinstance(keys, pa.Array):
        raise TypeError(f"unsupported pyarrow key container '{type(keys).__name__}': pass an Array or ChunkedArray")
    _refuse_nulls(keys)
    arrow_type = keys.type
    if pa.types.is_dictionary(arrow_type):
        dictionary = keys.dictionary
        if pa.types.is_string_view(dictionary.type) or pa.types.is_binary_view(dictionary.type):
            # polars Categorical: Arrow's take kernel has no view types; the dictionary is small.
            dictionary = dictionary.cast(
                pa.large_string() if pa.types.is_string_view(dictionary.type) else pa.large_binary()
            )
            keys = pa.DictionaryArray.from_arrays(keys.indices, dictionary)
        return _arrow_batches(keys.dictionary_decode(), reader)
    if pa.types.is_string_view(arrow_type) or pa.types.is_binary_view(arrow_type):
        # Read in place (polars' strings): the views and the data buffers they point into.
        buffers = keys.buffers()
        raw_views = np.frombuffer(buffers[1], dtype=np.uint8) if buffers[1] is not None else np.zeros(0, np.uint8)
        views = raw_views[keys.offset * 16 : (keys.offset + len(keys)) * 16]
        data_buffers = [
            np.frombuffer(b, dtype=np.uint8) if b is not None else np.zeros(0, np.uint8) for b in buffers[2:]
        ]
        return [reader.views(keys, views, data_buffers)]
    if (
        pa.types.is_integer(arrow_type)
        or pa.types.is_floating(arrow_type)
        or pa.types.is_timestamp(arrow_type)
        or pa.types.is_duration(arrow_type)
    ):
        # Zero-copy views of the values buffer (no nulls, checked above);
        # float16 is widened by the core's error message, not here.
        return [reader.array(keys.to_numpy(zero_copy_only=False))]
    if pa.types.is_date(arrow_type):
        return [reader.array(keys.cast(pa.timestamp("s")).to_numpy(zero_copy_only=False))]
    width = _ARROW_BINARY_WIDTH.get(str(arrow_type))
    if width is None:
        raise TypeError(
            f"unsupported pyarrow key type '{arrow_type}': keys must be string, binary, integer, float, "
            "timestamp, date or duration"
        )
    _, offsets_buffer, data_buffer = keys.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32 if width == 4 else np.int64)
    offsets = offsets[keys.offset : keys.offset + len(keys) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    if len(offsets) == 0:
        offsets = np.zeros(1, dtype=offsets.dtype)
    return [reader.offsets(keys, data, offsets)]
