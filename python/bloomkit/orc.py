"""The Bloom filters inside ORC files: read them, and skip the stripes that cannot hold given keys.

ORC writers (Hive, Spark, pyarrow's ``orc.write_table(..., bloom_filter_columns=...)``)
store, for each chosen column, one Bloom filter per row-index stride
(``row_index_stride`` rows, 10,000 by default) in each stripe's index
streams. :func:`read_bloom_filters` returns them as
:class:`~bloomkit.orc_bloom.OrcBloomFilter` objects (ORC's hashing, so
``key in f`` answers as ORC's reader does), and :func:`candidates` the
``(source, stripe)`` pairs that may hold any of many keys — never a false
"no": a stripe without a filter for the column is always a candidate.

What is read (docs/FORMAT.md, "ORC's Bloom filter" and "ORC files"): the
PostScript (the file's last byte is its length), the Footer (stripes, the
schema, the row-index stride), each stripe's footer (its streams, in file
order, and the columns' encodings) and the column's ``BLOOM_FILTER_UTF8``
stream (or the legacy ``BLOOM_FILTER``), each message parsed by
``_core._protobuf_fields`` / ``OrcBloomFilter.from_orc_bytes``. Compressed
parts are ORC's chunks (a 3-byte header: length << 1 | is-original) of at
most the file's compression block size: ZLIB with the standard library,
SNAPPY, LZ4 and ZSTD with ``cramjam`` (the ``[orc]`` extra,
docs/decisions.md). Every offset and length read from the file is checked
against the file and the parts that hold it before anything is read or
allocated; a truncated or malformed file is a ``ValueError`` naming the
source and the part.
"""

from __future__ import annotations

import os
import zlib
from typing import NamedTuple

import numpy as np

from . import _core
from .orc_bloom import OrcBloomFilter

__all__ = ["StrideFilter", "candidates", "read_bloom_filters"]

_MAGIC = b"ORC"
# Stream.Kind, Type.Kind and CompressionKind numbers of orc_proto.proto.
_BLOOM_FILTER, _BLOOM_FILTER_UTF8 = 7, 8
_STRUCT, _TIMESTAMP, _STRING, _VARCHAR, _CHAR = 12, 9, 7, 16, 17
_COMPRESSION = {0: "NONE", 1: "ZLIB", 2: "SNAPPY", 3: "LZO", 4: "LZ4", 5: "ZSTD", 6: "BROTLI"}
_DEFAULT_BLOCK = 256 * 1024  # PostScript.compression_block_size when absent
# ORC writers use blocks of 64-256 KiB; a chunk's stored length is 23 bits.
# A larger declared block is refused rather than allocated per chunk.
_MAX_BLOCK = 1 << 24
_CHECKED_SIZE = 64 << 20
# OrcFile.WriterVersion.HIVE_12055: from it on, legacy BLOOM_FILTER streams of
# string columns hash UTF-8 (before, the writer's default charset).
_HIVE_12055 = 3


class StrideFilter(NamedTuple):
    """One row-index stride's Bloom filter: rows ``[stride * row_index_stride, ...)`` of ``stripe``."""

    stripe: int
    stride: int
    filter: OrcBloomFilter


def read_bloom_filters(source, column: str) -> list:
    """Every Bloom filter of ``column`` in an ORC file, as :class:`StrideFilter` tuples in file order.

    ``source``: a path or a seekable binary file object. ``column``: a
    top-level column name. Stripes without a usable filter for the column
    (none written, or an encoding ORC's own reader ignores) contribute none.
    """
    with _OrcFile(source) as orc:
        column_id = orc.column_id(column)
        return [
            StrideFilter(stripe, stride, filter_)
            for stripe in range(len(orc.stripes))
            for stride, filter_ in enumerate(orc.stripe_filters(stripe, column_id) or ())
        ]


def candidates(sources, column: str, keys) -> list:
    """The ``(source, stripe)`` pairs whose filters for ``column`` may hold any of ``keys``.

    ``keys`` is any batch input of the filters (a list, NumPy array, Arrow
    column...), hashed once, ORC's way (``int`` as a long, ``float`` as a
    double, ``str`` as UTF-8, bytes as binary; a float32 column's values are
    matched by float32 keys, widened as ORC widens them). A stripe is left
    out only when each of its strides' filters answers "no" for every key;
    a stripe with no filter for the column is always included.
    """
    if isinstance(sources, (str, bytes, os.PathLike)) or hasattr(sources, "read"):
        sources = [sources]
    sources = list(sources)
    batches = OrcBloomFilter(1, 0.5)._key_batches(keys)  # ORC's pairs do not depend on the filter
    pairs = np.ascontiguousarray(np.concatenate(batches) if batches else np.empty((0, 2), dtype=np.int32))
    probes = _core.OrcKeyProbes(pairs)  # each key's lead bit positions, once per filter size
    # The core compares column names as bytes; orc.py as text decoded with
    # replacement characters, which differ only for a name holding U+FFFD.
    core_reads_paths = "\ufffd" not in column
    found: list = []
    start = 0
    while start < len(sources):
        end = start
        while end < len(sources) and core_reads_paths and isinstance(sources[end], (str, os.PathLike)):
            end += 1
        if end > start:  # local paths: one walk in the core
            found += _candidates_of_paths(sources[start:end], column, pairs, probes)
            start = end
        else:
            found += _candidates_of_source(sources[start], column, pairs, probes)
            start += 1
    return found


def _candidates_of_source(source, column: str, pairs, probes) -> list:
    """candidates() of one file, read here."""
    found = []
    with _OrcFile(source) as orc:
        column_id = orc.column_id(column)
        for stripe in range(len(orc.stripes)):
            if len(pairs) == 0:
                break
            filters = orc.stripe_filters(stripe, column_id)
            if filters is None or any(probes._any_in(f) for f in filters):
                found.append((source, stripe))
    return found


def _candidates_of_paths(paths: list, column: str, pairs, probes) -> list:
    """candidates() over local paths: tails, stripe footers, filter streams and probes in the core.

    The core reads only what it can read completely and leaves any other
    file (damaged, unknown column, a codec's error) to _OrcFile, which
    raises what is wrong with it or gives its stripes; the walk then
    resumes after it.
    """
    walker = _core.OrcSkipCore(column, pairs)
    encoded = [os.fsencode(p) for p in paths]
    read_here: list = []
    start = 0
    while True:
        kind, index = walker._run(encoded, start, _inflate_for_core)
        if kind == 0:
            break
        read_here += [(index, stripe) for _, stripe in _candidates_of_source(paths[index], column, pairs, probes)]
        start = index + 1
    walked = [tuple(pair) for pair in walker._candidates.tolist()]
    return [(paths[i], stripe) for i, stripe in sorted(walked + read_here)]


def _inflate_for_core(compression: int, chunk: bytes, block_size: int) -> bytes:
    """The core's inflater of one chunk (any exception leaves the file to _OrcFile).

    The core inflates ZLIB chunks itself when the extension links zlib
    (``_core.OrcSkipCore._inflates_zlib``); then only SNAPPY, LZ4 and ZSTD come here.
    """
    return _inflate_chunk(_COMPRESSION[compression], chunk, block_size, "chunk", "")


# -- the file ----------------------------------------------------------------


def _fields(data, what: str) -> list:
    return _core._protobuf_fields(data, what)


def _varints(data: bytes, what: str) -> list:
    """A packed repeated varint field (a few per schema node)."""
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            values.append(value)
            value, shift = 0, 0
        elif shift >= 64:
            raise ValueError(f"invalid {what}: a varint longer than 10 bytes")
    if shift:
        raise ValueError(f"invalid {what}: truncated packed varints")
    return values


def _int(value, what: str) -> int:
    if not isinstance(value, int):
        raise ValueError(f"invalid {what}: expected a number, got {len(value)} bytes")
    return value


def _bytes(value, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError(f"invalid {what}: expected a message or bytes, got the number {value}")
    return value


class _Stripe(NamedTuple):
    offset: int
    index_length: int
    data_length: int
    footer_length: int
    rows: int


class _OrcFile:
    """One ORC file's tail, read and checked on opening; stripes read on demand."""

    def __init__(self, source):
        self.name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else repr(source)
        if isinstance(source, (str, os.PathLike)):
            self.handle, self.owned = open(source, "rb"), True
        elif hasattr(source, "read") and hasattr(source, "seek"):
            self.handle, self.owned = source, False
        else:
            raise TypeError(f"expected a path or a seekable binary file, got '{type(source).__name__}'")
        try:
            self.size = self.handle.seek(0, os.SEEK_END)
            self._read_tail()
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.owned:
            self.handle.close()

    def fail(self, why: str) -> ValueError:
        return ValueError(f"{self.name}: not a readable ORC file: {why}")

    def read_at(self, offset: int, length: int, part: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(
                f"the {part} ({length:,} bytes at offset {offset:,}) lies outside the file of {self.size:,} bytes"
            )
        self.handle.seek(offset)
        data = self.handle.read(length)
        if len(data) != length:
            raise self.fail(f"the {part} was cut short ({len(data):,} of {length:,} bytes)")
        return data

    def parse(self, data, part: str) -> list:
        try:
            return _fields(data, f"ORC {part}")
        except ValueError as error:
            raise self.fail(str(error)) from None

    # -- PostScript and Footer --------------------------------------------
    def _read_tail(self) -> None:
        if self.size < len(_MAGIC) + 2:
            raise self.fail(f"{self.size} bytes is too short for an ORC file")
        if self.read_at(0, 3, "header") != _MAGIC:
            raise self.fail("it does not start with 'ORC'")
        ps_length = self.read_at(self.size - 1, 1, "PostScript length")[0]
        if ps_length == 0 or ps_length + 4 > self.size:
            raise self.fail(f"PostScript length {ps_length} does not fit the file")
        ps_offset = self.size - 1 - ps_length
        postscript = {}
        for number, value in self.parse(self.read_at(ps_offset, ps_length, "PostScript"), "PostScript"):
            postscript[number] = value
        if postscript.get(8000) != _MAGIC:
            raise self.fail("the PostScript does not end with the magic 'ORC'")
        footer_length = _int(postscript.get(1, 0), "PostScript footer_length")
        metadata_length = _int(postscript.get(5, 0), "PostScript metadata_length")
        kind = _int(postscript.get(2, 0), "PostScript compression")
        self.compression = _COMPRESSION.get(kind)
        if self.compression not in ("NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD"):
            raise self.fail(f"compression {self.compression or kind} is not supported (NONE, ZLIB, SNAPPY, LZ4, ZSTD)")
        self.block_size = _int(postscript.get(3, _DEFAULT_BLOCK), "PostScript compression_block_size")
        if not 1 <= self.block_size <= _MAX_BLOCK:
            raise self.fail(f"compression block size {self.block_size:,} is outside [1, {_MAX_BLOCK:,}]")
        self.writer_version = _int(postscript.get(6, 0), "PostScript writer_version")
        footer_offset = ps_offset - footer_length
        self.content_end = footer_offset - metadata_length
        if footer_length == 0 or self.content_end < 3:
            raise self.fail(f"footer ({footer_length:,} bytes) and metadata ({metadata_length:,}) do not fit the file")
        footer = self.decompress(self.read_at(footer_offset, footer_length, "Footer"), "Footer")
        stripes, self.types, self.row_index_stride = [], [], 10_000
        for number, value in self.parse(footer, "Footer"):
            if number == 3:
                stripes.append(_bytes(value, "Footer stripe"))
            elif number == 4:
                self.types.append(_bytes(value, "Footer type"))
            elif number == 8:
                self.row_index_stride = _int(value, "Footer row_index_stride")
        self.stripes = [self._stripe(i, message) for i, message in enumerate(stripes)]

    def _stripe(self, index: int, message: bytes) -> _Stripe:
        fields = dict.fromkeys(range(1, 6), 0)
        for number, value in self.parse(message, f"StripeInformation {index}"):
            if number in fields:
                fields[number] = _int(value, f"StripeInformation {index}")
        stripe = _Stripe(*(fields[n] for n in range(1, 6)))
        end = stripe.offset + stripe.index_length + stripe.data_length + stripe.footer_length
        if stripe.offset < 3 or end > self.content_end:
            raise self.fail(
                f"stripe {index} (bytes {stripe.offset:,} to {end:,}) lies outside the data "
                f"(bytes 3 to {self.content_end:,})"
            )
        return stripe

    def column_id(self, column: str) -> int:
        """The ORC column id of a top-level column (0 is the root struct)."""
        if not self.types:
            raise self.fail("the Footer has no schema")
        root = self.parse(self.types[0], "Type 0")
        if next((v for n, v in root if n == 1), None) != _STRUCT:
            raise self.fail("the schema's root is not a struct")
        children = [v for n, v in root if n == 2]
        ids = [i for v in children for i in (_varints(v, "Type 0 subtypes") if isinstance(v, bytes) else [v])]
        names = [_bytes(v, "Type 0 field name").decode("utf-8", "replace") for n, v in root if n == 3]
        if column not in names:
            raise KeyError(f"{self.name}: no column {column!r} (top-level columns: {', '.join(map(repr, names))})")
        column_id = ids[names.index(column)] if len(ids) == len(names) else None
        if column_id is None or not 0 < column_id < len(self.types):
            raise self.fail(f"the schema's root lists {len(ids)} column ids for {len(names)} names")
        self.column_kind = next((v for n, v in self.parse(self.types[column_id], "Type") if n == 1), None)
        return column_id

    # -- a stripe's filters -------------------------------------------------
    def stripe_filters(self, index: int, column_id: int):
        """The stripe's filters of the column, one per stride, or None when it has no usable one."""
        stripe = self.stripes[index]
        part = f"stripe {index} footer"
        footer_at = stripe.offset + stripe.index_length + stripe.data_length
        footer = self.parse(self.decompress(self.read_at(footer_at, stripe.footer_length, part), part), part)
        position, found, encodings = stripe.offset, {}, []
        for number, value in footer:
            if number == 2:
                encodings.append(_bytes(value, "ColumnEncoding"))
            if number != 1:
                continue
            stream = dict.fromkeys((1, 2, 3), 0)
            for n, v in self.parse(_bytes(value, "Stream"), "Stream"):
                if n in stream:
                    stream[n] = _int(v, "Stream")
            kind, column, length = stream[1], stream[2], stream[3]
            if column == column_id and kind in (_BLOOM_FILTER, _BLOOM_FILTER_UTF8):
                if position + length > stripe.offset + stripe.index_length:
                    raise self.fail(f"stripe {index}'s Bloom filter stream lies outside its index area")
                found[kind] = (position, length)
            position += length
        if position > footer_at:
            raise self.fail(f"stripe {index}'s streams ({position - stripe.offset:,} bytes) overrun its footer")
        chosen = self._usable_stream(found, encodings, column_id)
        if chosen is None:
            return None
        part = f"stripe {index} Bloom filter stream"
        index_message = self.decompress(self.read_at(*chosen, part), part)
        filters = []
        for number, value in self.parse(index_message, "BloomFilterIndex"):
            if number == 1:
                try:
                    filters.append(OrcBloomFilter.from_orc_bytes(_bytes(value, "BloomFilterIndex entry")))
                except ValueError as error:
                    raise self.fail(f"{part}, filter {len(filters)}: {error}") from None
        return filters

    def _usable_stream(self, found: dict, encodings: list, column_id: int):
        """The stream ORC's reader would use (BloomFilterIO.deserialize), or None."""
        if _BLOOM_FILTER_UTF8 in found:
            bloom_encoding = 0
            if column_id < len(encodings):
                bloom_encoding = next((v for n, v in self.parse(encodings[column_id], "ColumnEncoding") if n == 3), 0)
            # ORC ignores a future encoding, and timestamps in the original one.
            if bloom_encoding not in (0, 1) or (self.column_kind == _TIMESTAMP and bloom_encoding == 0):
                return None
            return found[_BLOOM_FILTER_UTF8]
        if _BLOOM_FILTER in found:
            # Strings before HIVE-12055 were hashed in the writer's default charset.
            if self.column_kind in (_STRING, _VARCHAR, _CHAR) and self.writer_version < _HIVE_12055:
                return None
            return found[_BLOOM_FILTER]
        return None

    # -- compression --------------------------------------------------------
    def decompress(self, data: bytes, part: str) -> bytes:
        if self.compression == "NONE":
            return data
        pieces, position, total = [], 0, 0
        while position < len(data):
            if len(data) - position < 3:
                raise self.fail(f"the {part} ends inside a chunk header")
            header = data[position] | data[position + 1] << 8 | data[position + 2] << 16
            length, original = header >> 1, header & 1
            position += 3
            if length > len(data) - position:
                raise self.fail(f"a chunk of the {part} claims {length:,} bytes but {len(data) - position:,} are left")
            chunk = data[position : position + length]
            position += length
            piece = chunk if original else self._inflate(chunk, part)
            if len(piece) > self.block_size:
                raise self.fail(f"a chunk of the {part} holds {len(piece):,} bytes, more than the block size")
            total += len(piece)
            # Past 64 MiB (as the core's allocation check), against the memory the system can still give.
            if total > _CHECKED_SIZE and total > _core.available_memory():
                raise MemoryError(f"{self.name}: the {part} decompresses to more than the memory available")
            pieces.append(piece)
        return b"".join(pieces)

    def _inflate(self, chunk: bytes, part: str) -> bytes:
        """One compressed chunk, at most the block size (a larger result is refused, not allocated)."""
        try:
            return _inflate_chunk(self.compression, chunk, self.block_size, part, self.name)
        except _CorruptChunk as error:
            raise self.fail(str(error)) from None


class _CorruptChunk(ValueError):
    """A compressed chunk that does not inflate to at most the block size (its reason)."""


def _inflate_chunk(compression: str, chunk: bytes, block_size: int, part: str, name: str) -> bytes:
    """One compressed chunk of a file's ``part``, at most ``block_size`` bytes; else _CorruptChunk."""
    if compression == "ZLIB":
        inflater = zlib.decompressobj(-15)  # raw deflate, as ORC writes it
        try:
            out = inflater.decompress(chunk, block_size)
        except zlib.error as error:
            raise _CorruptChunk(f"a ZLIB chunk of the {part} is corrupt ({error})") from None
        if inflater.unconsumed_tail or not inflater.eof:
            raise _CorruptChunk(f"a ZLIB chunk of the {part} is truncated or larger than the block size")
        return out
    try:
        import cramjam
    except ImportError:
        raise ImportError(
            f"{name} is {compression}-compressed: reading it needs cramjam "
            "(pip install 'bloomkit[orc]' or pip install cramjam)"
        ) from None
    buffer = bytearray(block_size)
    into = {
        "SNAPPY": cramjam.snappy.decompress_raw_into,
        "LZ4": cramjam.lz4.decompress_block_into,
        "ZSTD": cramjam.zstd.decompress_into,
    }[compression]
    try:
        size = into(chunk, buffer)
    except Exception as error:  # cramjam's DecompressionError and buffer overruns
        raise _CorruptChunk(
            f"a {compression} chunk of the {part} is corrupt or larger than the block size ({error})"
        ) from None
    return bytes(buffer[:size])
