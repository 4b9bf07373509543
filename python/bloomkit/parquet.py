"""Parquet's split-block Bloom filters: read a column chunk's filter and ask it, or skip files with it.

Parquet writers (pyarrow's ``bloom_filter_options``, DuckDB, Spark) can store
a Bloom filter per column chunk (parquet-format's BloomFilter.md). This
module reads one into a read-only :class:`ParquetBloomFilter` that answers
``key in f`` and ``f.contains_many(keys)`` with Parquet's own hashing
(xxHash64 of each value's plain encoding), and :func:`candidates` tells
which row groups of many files may hold any of a set of keys.

Keys are values of the column's type, mapped to its physical type the way
the writer stored them: ``str`` for strings, ``bytes`` for binary,
``int`` for integer columns (``int`` or ``float`` for floating ones),
``datetime.date`` for dates, ``datetime.datetime`` for timestamps,
``decimal.Decimal`` (or ``int``) for decimals, and the same as NumPy
arrays or pyarrow arrays. A key that cannot be a value of the column is a
``TypeError``, never a silent "absent". The probes run in the C++ core
(cpp/include/bloomkit/parquet_bloom.hpp) with the GIL released; pyarrow
reads the file's metadata (where each filter is).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from . import _core

__all__ = ["ParquetBloomFilter", "candidates", "read_bloom_filter"]

# When a file does not record a filter's length (writers before
# parquet-format 2.10), this much is read to find the end of its header;
# the header is a few dozen bytes.
_HEADER_PREFIX = 4096
_MAX_FILTER_BYTES = _HEADER_PREFIX + _core.PARQUET_MAX_BITSET_BYTES
_PHYSICAL_WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8}


def _pa():
    import pyarrow as pa

    return pa


class _Column:
    """What the keys of one column chunk must be: its physical type and Arrow value type."""

    def __init__(self, path: str, physical_type: str, value_type, type_length: int):
        pa = _pa()
        if physical_type not in ("INT32", "INT64", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            raise ValueError(f"column {path!r} is {physical_type}, which has no Parquet Bloom filter")
        if physical_type == "FIXED_LEN_BYTE_ARRAY" and not (
            pa.types.is_fixed_size_binary(value_type) or pa.types.is_decimal(value_type) or value_type == pa.float16()
        ):
            raise TypeError(f"column {path!r} holds {value_type} (FIXED_LEN_BYTE_ARRAY), which bloomkit cannot key")
        self.path = path
        self.physical_type = physical_type
        self.value_type = value_type
        self.type_length = type_length

    @property
    def signature(self) -> tuple:
        return (self.physical_type, str(self.value_type), self.type_length)

    def describe(self) -> str:
        return f"column {self.path!r} ({self.value_type}, stored as {self.physical_type})"

    # -- keys -> an Arrow array of the column's type -------------------------
    def arrow_keys(self, keys):
        pa = _pa()
        if isinstance(keys, (str, bytes, bytearray, memoryview)):
            raise TypeError(
                f"expected an iterable of keys, got a single '{type(keys).__name__}' (wrap one key in a list)"
            )
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if not isinstance(keys, pa.Array):
            if hasattr(keys, "__arrow_c_array__") or isinstance(keys, np.ndarray) or hasattr(keys, "to_numpy"):
                try:
                    keys = pa.array(keys)
                except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                    raise TypeError(f"keys for {self.describe()}: {error}") from None
            elif isinstance(keys, Iterable):
                keys = self._array_of_objects(list(keys))
            else:
                raise TypeError(f"expected an iterable of keys, got '{type(keys).__name__}'")
        if keys.null_count:
            raise TypeError(f"None is not a key of {self.describe()}: Parquet Bloom filters hold no nulls")
        if pa.types.is_dictionary(keys.type):
            keys = keys.dictionary_decode()
        if not self._accepts(keys.type):
            raise TypeError(f"a key of type {keys.type} cannot be a value of {self.describe()}")
        if keys.type == self.value_type:
            return keys
        try:
            return keys.cast(self.value_type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise ValueError(f"a key cannot be stored exactly in {self.describe()}: {error}") from None

    def _array_of_objects(self, keys: list):
        pa = _pa()
        if pa.types.is_decimal(self.value_type):
            # ints and Decimals together: pyarrow infers one type per list.
            import decimal

            keys = [decimal.Decimal(k) if isinstance(k, int) and not isinstance(k, bool) else k for k in keys]
        try:
            return pa.array(keys)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise TypeError(f"keys for {self.describe()} are not all of one type: {error}") from None

    def _accepts(self, key_type) -> bool:
        """Whether values of key_type can be values of the column (same kind; exactness is the cast's)."""
        pa = _pa()
        t = self.value_type
        kinds = [
            (pa.types.is_integer, (pa.types.is_integer,)),
            (pa.types.is_floating, (pa.types.is_floating, pa.types.is_integer)),
            (_is_text, (_is_text,)),
            (_is_binary, (_is_binary,)),
            (pa.types.is_date, (pa.types.is_date,)),
            (pa.types.is_timestamp, (pa.types.is_timestamp,)),
            (pa.types.is_time, (pa.types.is_time,)),
            (pa.types.is_duration, (pa.types.is_duration,)),
            (pa.types.is_decimal, (pa.types.is_decimal, pa.types.is_integer)),
        ]
        for is_column_kind, key_kinds in kinds:
            if is_column_kind(t):
                return any(is_kind(key_type) for is_kind in key_kinds)
        return False

    # -- an Arrow array of the column's type -> plain encodings ---------------
    def encode(self, keys):
        """("fixed", bytes as uint8, width) or ("offsets", data, offsets): the keys' plain encodings."""
        pa = _pa()
        values = self.arrow_keys(keys)
        n = len(values)
        physical = self.physical_type
        if physical == "BYTE_ARRAY":
            values = values.cast(pa.large_binary())
            buffers = values.buffers()
            offsets = np.frombuffer(buffers[1], dtype=np.int64)[values.offset : values.offset + n + 1]
            data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, np.uint8)
            return ("offsets", data, np.ascontiguousarray(offsets))
        if pa.types.is_decimal(self.value_type):
            return ("fixed", *self._decimal_bytes(values))
        if physical == "FIXED_LEN_BYTE_ARRAY":
            width = self.type_length
            raw = np.frombuffer(values.buffers()[1], dtype=np.uint8)
            return ("fixed", np.ascontiguousarray(raw[values.offset * width : (values.offset + n) * width]), width)
        width = _PHYSICAL_WIDTH[physical]
        if physical in ("FLOAT", "DOUBLE"):
            numbers = values.to_numpy(zero_copy_only=False).astype(f"<f{width}")
        else:
            # Temporal values are their integer storage; narrow integers are
            # stored widened to INT32 (sign- or zero-extended), and unsigned
            # ones keep their bits.
            bits = values.type.bit_width if not pa.types.is_integer(values.type) else None
            if bits is not None:
                values = values.view(pa.int32() if bits == 32 else pa.int64())
            numbers = values.to_numpy(zero_copy_only=False)
            kind = "u" if numbers.dtype.kind == "u" and numbers.dtype.itemsize == width else "i"
            numbers = numbers.astype(f"<{kind}{width}")
        return ("fixed", np.ascontiguousarray(numbers).view(np.uint8), width)

    def _decimal_bytes(self, values):
        """Decimals as stored: INT32/INT64 the unscaled value, FIXED_LEN_BYTE_ARRAY its big-endian bytes."""
        n = len(values)
        size = values.type.byte_width
        raw = np.frombuffer(values.buffers()[1], dtype=np.uint8).reshape(-1, size)[values.offset : values.offset + n]
        if self.physical_type in ("INT32", "INT64"):
            width = _PHYSICAL_WIDTH[self.physical_type]
            return np.ascontiguousarray(raw[:, :width]).reshape(-1), width
        width = self.type_length
        return np.ascontiguousarray(raw[:, :width][:, ::-1]).reshape(-1), width


def _is_text(t) -> bool:
    pa = _pa()
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t) -> bool:
    pa = _pa()
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


class ParquetBloomFilter(_core.ParquetBloomCore):
    """A Parquet column chunk's split-block Bloom filter, read-only; see :func:`read_bloom_filter`.

    ``key in f`` and ``f.contains_many(keys)`` answer with Parquet's hashing:
    False means the chunk holds no such value; True means it may. Keys are
    values of the column's type (see the module's documentation); any other
    key raises ``TypeError``.

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> buffer = io.BytesIO()
    >>> pq.write_table(pa.table({"id": list(range(1000))}), buffer, bloom_filter_options={"id": True})
    >>> f = read_bloom_filter(buffer, "id")
    >>> 10 in f, f.contains_many([20, -5]).tolist()
    (True, [True, False])
    """

    def __init__(self, data, column: str, physical_type: str, value_type, type_length: int = 0):
        """A filter from its bytes (the BloomFilterHeader and the bitset) and its column's types.

        ``physical_type`` is the column's Parquet type (``"INT64"``,
        ``"BYTE_ARRAY"``, ...), ``value_type`` its pyarrow type,
        ``type_length`` the width of a FIXED_LEN_BYTE_ARRAY column.
        """
        meta = _Column(column, physical_type, value_type, type_length)
        _core.ParquetBloomCore.__init__(self, data)
        self._column = meta

    @property
    def column(self) -> str:
        """The column's path in the file's schema."""
        return self._column.path

    @property
    def physical_type(self) -> str:
        """The column's Parquet physical type (INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY)."""
        return self._column.physical_type

    @property
    def value_type(self):
        """The pyarrow type of the column's values (keys are converted to it)."""
        return self._column.value_type

    @property
    def fill_ratio(self) -> float:
        """The fraction of the bitset's bits that are set."""
        return self._set_bits / (8 * self.nbytes)

    def contains_many(self, keys) -> np.ndarray:
        """For each key, whether the chunk may hold it (a NumPy bool array)."""
        encoded = self._column.encode(keys)
        if encoded[0] == "offsets":
            return self._contains_offsets(encoded[1], encoded[2])
        return self._contains_fixed(encoded[1], encoded[2])

    def contains(self, key, /) -> bool:
        """Whether the chunk may hold ``key``."""
        return bool(self.contains_many([key])[0])

    def __contains__(self, key) -> bool:
        return self.contains(key)

    def __eq__(self, other) -> bool:
        if not isinstance(other, ParquetBloomFilter):
            return NotImplemented
        return self._column.signature == other._column.signature and self._equals(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<ParquetBloomFilter column={self.column!r} type={self.value_type} ({self.physical_type}) "
            f"nbytes={self.nbytes} fill_ratio={self.fill_ratio:.3f}>"
        )


# ------------------------------------------------------------------ files


class _OpenSource:
    """A local path opened for reading, or a caller's binary file-like object (left open)."""

    def __init__(self, source):
        self._open(source)
        import pyarrow.parquet as pq

        # A path is read by pyarrow's own file reader (faster than through a Python file object).
        self.metadata = _read_metadata(pq, self.path if self.owned else self.handle, self.name)

    def _open(self, source) -> None:
        if isinstance(source, (str, os.PathLike)):
            self.handle = open(source, "rb")  # noqa: SIM115 (closed by close())
            self.owned = True
            self.path = self.name = os.fspath(source)
        elif hasattr(source, "read") and hasattr(source, "seek"):
            self.handle = source
            self.owned = False
            self.name = getattr(source, "name", None) or type(source).__name__
        else:
            raise TypeError(f"expected a path or a binary file-like object, got '{type(source).__name__}'")
        self.handle.seek(0, os.SEEK_END)
        self.size = self.handle.tell()
        self.handle.seek(0)

    def close(self) -> None:
        if self.owned:
            self.handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def column(self, column: str) -> "tuple[int, _Column]":
        """The column's index and key description, by its dotted path."""
        schema = self.metadata.schema
        for index in range(len(schema)):
            leaf = schema.column(index)
            if leaf.path == column:
                arrow_type = _leaf_arrow_type(schema.to_arrow_schema(), column)
                return index, _Column(column, leaf.physical_type, arrow_type, leaf.length or 0)
        names = [schema.column(i).path for i in range(len(schema))]
        raise KeyError(f"{self.name} has no column {column!r} (columns: {names})")

    def read_at(self, offset: int, length: int, what: str) -> bytes:
        self.handle.seek(offset)
        data = self.handle.read(length)
        if len(data) != length:
            raise ValueError(f"{what}: truncated: {len(data)} of {length} bytes at offset {offset}")
        return data

    def filter_bytes(self, row_group: int, index: int, where: str) -> "bytes | None":
        """The header and bitset of one chunk's filter (None when it has none), every size bounded first."""
        chunk = self.metadata.row_group(row_group).column(index)
        offset = chunk.bloom_filter_offset
        if offset is None or offset < 0:
            return None
        return self.filter_bytes_at(offset, chunk.bloom_filter_length, where)

    def filter_bytes_at(self, offset: int, length: "int | None", where: str) -> bytes:
        """The filter at ``offset``: ``length`` bytes when the file records it, else as long as its header says."""
        if offset >= self.size:
            raise ValueError(f"{where}: the filter's offset {offset} is past the end of the file ({self.size} bytes)")
        if length is not None and length > 0:
            if length > _MAX_FILTER_BYTES or offset + length > self.size:
                raise ValueError(
                    f"{where}: the recorded filter length {length} at offset {offset} does not fit "
                    f"{'the file' if offset + length > self.size else 'the largest Parquet filter'}"
                )
            return self.read_at(offset, length, where)
        # No recorded length: the header says how much bitset follows it.
        prefix = self.read_at(offset, min(_HEADER_PREFIX, self.size - offset), where)
        try:
            header_size, num_bytes = _core.parquet_bloom_header(prefix)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        if offset + header_size + num_bytes > self.size:
            raise ValueError(
                f"{where}: the header declares a {num_bytes}-byte bitset, the file ends "
                f"{self.size - offset - header_size} bytes after it (truncated)"
            )
        return self.read_at(offset, header_size + num_bytes, where)


def _read_metadata(pq, source, name: str):
    """pyarrow's FileMetaData of a source; a file pyarrow cannot read is a ValueError naming it."""
    if hasattr(source, "seek"):
        source.seek(0)
    try:
        return pq.ParquetFile(source).metadata
    except (OSError, ValueError) as error:  # pyarrow: ArrowInvalid (a ValueError), OSError for a bad footer
        raise ValueError(f"{name}: not a readable Parquet file: {error}") from None


def _leaf_arrow_type(arrow_schema, path: str):
    """The Arrow type of a leaf column, by dotted path through struct fields."""
    pa = _pa()
    parts = path.split(".")
    node = arrow_schema.field(parts[0]).type if parts[0] in arrow_schema.names else None
    for part in parts[1:]:
        if node is None or not pa.types.is_struct(node) or node.get_field_index(part) < 0:
            node = None
            break
        node = node.field(part).type
    if node is None or pa.types.is_nested(node):
        raise ValueError(f"column {path!r} is inside a list or map; bloomkit reads filters of flat and struct columns")
    return node


def _check_row_group(source: _OpenSource, row_group) -> int:
    count = source.metadata.num_row_groups
    if isinstance(row_group, bool) or not isinstance(row_group, (int, np.integer)):
        raise TypeError(f"row_group must be an int, got '{type(row_group).__name__}'")
    if not 0 <= row_group < count:
        raise IndexError(f"row_group {row_group} is out of range: {source.name} has {count} row groups")
    return int(row_group)


def read_bloom_filter(source, column: str, row_group: int = 0) -> ParquetBloomFilter:
    """The Bloom filter of ``column`` in row group ``row_group`` of a Parquet file.

    ``source`` is a local path or a binary file-like object (read, not
    closed). ``column`` is the column's path (``"a.b"`` inside a struct).
    Raises ``KeyError`` for an unknown column, ``IndexError`` for a row
    group out of range, and ``ValueError`` when the chunk has no Bloom
    filter or its filter is truncated or malformed (the message says which
    field), every size checked before anything is allocated.
    """
    with _OpenSource(source) as opened:
        row_group = _check_row_group(opened, row_group)
        index, meta = opened.column(column)
        where = f"{opened.name}: column {column!r}, row group {row_group}"
        data = opened.filter_bytes(row_group, index, where)
        if data is None:
            raise ValueError(f"{where} has no Bloom filter")
        filter_ = ParquetBloomFilter.__new__(ParquetBloomFilter)
        try:
            _core.ParquetBloomCore.__init__(filter_, data)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        filter_._column = meta
        return filter_


def candidates(sources, column: str, keys) -> "list[tuple]":
    """The ``(source, row_group)`` pairs of ``sources`` that may hold any of ``keys`` in ``column``.

    A row group is left out only when its Bloom filter answers "absent"
    for every key; a row group without a filter is always a candidate.
    ``sources`` are paths or binary file-like objects (each returned as
    given). The keys are converted and hashed once per column type, so the
    cost per row group is reading its filter and probing the hashes.
    """
    if isinstance(sources, (str, bytes, os.PathLike)) or hasattr(sources, "read"):
        raise TypeError("sources must be an iterable of paths or file-like objects (wrap one source in a list)")
    if not (isinstance(keys, np.ndarray) or hasattr(keys, "__arrow_c_array__") or hasattr(keys, "to_numpy")):
        if isinstance(keys, Iterable) and not isinstance(keys, (str, bytes, bytearray, memoryview)):
            keys = list(keys)  # read once, hashed once per column type met
    sources = list(sources)
    path = column.split(".")
    by_signature: dict = {}  # the leaf's schema bytes -> the keys' hashes for that column type
    found: list = []
    start = 0
    while start < len(sources):
        end = start
        while end < len(sources) and isinstance(sources[end], (str, os.PathLike)):
            end += 1
        if end > start:  # local paths: one walk in the core
            found += _candidates_of_paths(sources[start:end], column, path, keys, by_signature)
            start = end
        else:  # a file-like object (or a wrong source, refused by _FooterSource)
            found += _candidates_of_source(sources[start], column, path, keys, by_signature)
            start += 1
    return found


# Why the core's walk over local paths stopped (cpp/include/bloomkit/parquet_skip.hpp, SkipStop).
_DONE, _NEED_KEYS, _MALFORMED, _NO_COLUMN, _SYSTEM_ERROR = range(5)


def _candidates_of_paths(paths: list, column: str, path: list, keys, by_signature: dict) -> list:
    """candidates() over local paths: every file's footer, filters and probe read by the core, GIL released.

    The core stops at a file whose column type has no hashed keys yet; they
    are hashed here (pyarrow says the column's type) and the walk resumes
    at that file.
    """
    skipper = _core.ParquetSkipCore(path)
    for signature, hashes in by_signature.items():
        skipper._add_keys(signature, hashes)
    encoded = [os.fsencode(p) for p in paths]
    start = 0
    while True:
        kind, index, row_group, error, reason, signature = skipper._run(encoded, start)
        if kind == _DONE:
            return [(paths[i], g) for i, g in skipper._candidates.tolist()]
        name = os.fspath(paths[index])
        if kind == _NEED_KEYS:
            hashes = by_signature.get(signature)
            if hashes is None:
                with _FooterSource(paths[index]) as opened:
                    hashes = by_signature[signature] = _hash_keys(opened.key_column(column), keys)
            skipper._add_keys(signature, hashes)
            start = index
        elif kind == _NO_COLUMN:
            raise KeyError(f"{name} has no column {column!r}")
        elif kind == _SYSTEM_ERROR:
            raise OSError(error, os.strerror(error), name)
        else:
            where = name if row_group < 0 else f"{name}: column {column!r}, row group {row_group}"
            raise ValueError(f"{where}: {reason.decode('utf-8', 'replace')}")


def _candidates_of_source(source, column: str, path: list, keys, by_signature: dict) -> list:
    """candidates() over one file-like object, read from Python."""
    found = []
    with _FooterSource(source) as opened:
        leaf, signature, chunks = opened.column_filters(column, path)
        hashes = by_signature.get(signature)
        if hashes is None:
            hashes = by_signature[signature] = _hash_keys(opened.key_column(column), keys)
        for row_group, (offset, length) in enumerate(chunks):
            if offset < 0:
                found.append((source, row_group))
                continue
            where = f"{opened.name}: column {column!r}, row group {row_group}"
            data = opened.filter_bytes_at(offset, length if length >= 0 else None, where)
            try:
                filter_ = _core.ParquetBloomCore(data)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            if filter_._contains_any_hash(hashes):
                found.append((source, row_group))
    return found


class _FooterSource(_OpenSource):
    """A source whose footer bloomkit reads itself (cpp/include/bloomkit/parquet_footer.hpp).

    pyarrow's footer parse is most of the cost of skipping a small file
    (docs/decisions.md, "Parquet footers"); pyarrow is used only to find a
    column's type the first time its schema bytes are met.
    """

    _MAGIC = b"PAR1"

    def __init__(self, source):
        self._open(source)
        self._metadata = None

    @property
    def metadata(self):
        if self._metadata is None:
            import pyarrow.parquet as pq

            self._metadata = _read_metadata(pq, self.path if self.owned else self.handle, self.name)
        return self._metadata

    def column_filters(self, column: str, path: list) -> tuple:
        """(leaf index, the leaf's schema bytes, [(offset, length) per row group]) from the footer."""
        if self.size < 12:
            raise ValueError(f"{self.name}: not a Parquet file ({self.size} bytes)")
        tail = self.read_at(self.size - 8, 8, self.name)
        if tail[4:] != self._MAGIC:
            what = "an encrypted footer, which bloomkit cannot read" if tail[4:] == b"PARE" else "no PAR1 magic"
            raise ValueError(f"{self.name}: not a readable Parquet file: {what}")
        length = int.from_bytes(tail[:4], "little")
        if length > self.size - 12:
            raise ValueError(f"{self.name}: the footer length {length} does not fit the file ({self.size} bytes)")
        footer = self.read_at(self.size - 8 - length, length, self.name)
        try:
            found, leaf, signature, chunks = _core.parquet_column_filters(footer, path)
        except ValueError as error:
            raise ValueError(f"{self.name}: {error}") from None
        if not found:
            raise KeyError(f"{self.name} has no column {column!r}")
        return leaf, signature, chunks

    def key_column(self, column: str) -> _Column:
        return self.column(column)[1]


def _hash_keys(meta: _Column, keys) -> np.ndarray:
    encoded = meta.encode(keys)
    if encoded[0] == "offsets":
        return _core.parquet_hash_offsets(encoded[1], encoded[2])
    return _core.parquet_hash_fixed(encoded[1], encoded[2])
