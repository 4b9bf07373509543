"""Reading inputs as batches of whole lines.

Decisions (docs/cli.md):

* A line is the bytes up to, not including, ``\\n``. Nothing is decoded,
  so any encoding (or none) works, and a ``\\r`` before the ``\\n`` is part
  of the line, as in ``awk '!seen[$0]++'``. A last line without ``\\n``
  is a line too.
* gzip, xz/lzma, bzip2 and zstd input is decompressed, recognised by its
  magic bytes (files and standard input alike; the extension does not
  matter). ``.lzma`` (the legacy "lzma alone" format has no reliable magic)
  is still chosen by extension. Other archives (zip, 7z, lz4) are an error
  naming the format; other binary input (NUL bytes in the first 8 KiB) is
  read as lines with a warning, as ``grep`` would say "binary file".
* Regular files are read in blocks of ``block_size`` bytes; pipes (stdin,
  FIFOs) with ``read1`` so that lines arriving slowly (``tail -f``) are
  processed as they come instead of waiting for a full block.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import sys
import zlib
from typing import Iterator, NamedTuple

from ._errors import CliError, os_message
from ._readahead import ReadAhead


def _zstd_frame_decompressor():
    """A factory of one-frame zstd decompressors (``decompress``, ``eof``, ``unused_data``).

    CPython 3.14+ has one in the standard library (``compression.zstd``, PEP 784),
    so ``zstandard`` is a dependency only below 3.14 (pyproject.toml): on a new
    CPython it has no wheel yet and would be compiled from source at install.
    """
    if sys.version_info >= (3, 14):
        from compression import zstd

        return zstd.ZstdDecompressor
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj


class _ZstdReader:
    """A zstd stream of any number of frames, read like a file (``read``/``read1``).

    zstandard's own ``stream_reader`` returns a truncated stream's data
    without an error; feeding one single-frame decompressor per frame and
    checking that the last frame reached its end (``eof``) makes truncation an
    ``EOFError``, as gzip, xz and bzip2 report it.
    """

    _CHUNK = 1 << 16

    def __init__(self, raw):
        self._raw = raw
        self._new_frame = _zstd_frame_decompressor()
        self._frame = self._new_frame()
        self._in_frame = False  # bytes of the current frame have been fed
        self._pieces = []
        self._buffered = 0
        self._done = False

    def _fill(self) -> None:
        read = getattr(self._raw, "read1", self._raw.read)
        chunk = read(self._CHUNK)
        if not chunk:
            if self._in_frame:
                raise EOFError("the zstd stream ends in the middle of a frame (truncated)")
            self._done = True
            return
        while chunk:
            self._in_frame = True
            data = self._frame.decompress(chunk)
            if data:
                self._pieces.append(data)
                self._buffered += len(data)
            if not self._frame.eof:
                return
            chunk = self._frame.unused_data  # the next frame starts here
            self._frame = self._new_frame()
            self._in_frame = False

    def _take(self, size: int) -> bytes:
        data = b"".join(self._pieces)
        self._pieces = [data[size:]] if len(data) > size else []
        self._buffered = max(0, len(data) - size)
        return data[:size]

    def read(self, size: int = -1) -> bytes:
        size = size if size is not None and size >= 0 else 1 << 62
        while self._buffered < size and not self._done:
            self._fill()
        return self._take(size)

    def read1(self, size: int = -1) -> bytes:
        size = size if size is not None and size >= 0 else 1 << 62
        while not self._buffered and not self._done:
            self._fill()
        return self._take(size)

    def close(self) -> None:
        self._pieces = []


def _zstd_reader(raw):
    return _ZstdReader(raw)


# Leading bytes -> (format name, decompressing reader over the opened raw file).
_MAGIC = (
    (b"\x1f\x8b", "gzip", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"\xfd7zXZ\x00", "xz", lambda raw: lzma.LZMAFile(raw, mode="rb")),
    (b"BZh", "bzip2", lambda raw: bz2.BZ2File(raw, mode="rb")),
    (b"\x28\xb5\x2f\xfd", "zstd", _zstd_reader),
)
# Formats recognised but not read: an error says what to do.
_UNSUPPORTED_MAGIC = (
    (b"PK\x03\x04", "a zip archive: extract it first (unzip -p FILE | bloomkit ...)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive: extract it first (7z x -so FILE | bloomkit ...)"),
    (b"\x04\x22\x4d\x18", "lz4-compressed: decompress it first (lz4 -dc FILE | bloomkit ...)"),
)
# A name claiming a format its bytes do not start with is an error (as with zcat).
_EXTENSION_FORMAT = {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2", ".zst": "zstd", ".zstd": "zstd"}
_SNIFF_BYTES = 8192


def _lzma_alone_reader(raw):
    return lzma.LZMAFile(raw, mode="rb", format=lzma.FORMAT_ALONE)


def _zstd_errors() -> tuple:
    if sys.version_info >= (3, 14):
        from compression import zstd

        return (zstd.ZstdError,)
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


# What a damaged compressed stream raises, besides OSError (bad header,
# bz2's "Invalid data stream") and EOFError (truncated stream).
_DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError) + _zstd_errors()


class Block(NamedTuple):
    """A batch of lines from one source."""

    source: str  # the name to show in messages
    first_line: int  # 1-based number of the batch's first line in its source
    lines: list  # bytes objects, without their newline


def display_name(name: str) -> str:
    return "<stdin>" if name == "-" else name


def total_size(names) -> "int | None":
    """Summed on-disk size of the inputs, ``None`` if any is not a regular file."""
    total = 0
    for name in names:
        if name == "-":
            return None
        try:
            info = os.stat(name)
        except OSError:
            return None  # reported properly when the file is opened
        if not stat.S_ISREG(info.st_mode):
            return None
        total += info.st_size
    return total


def check_readable(names) -> None:
    """Fail before any output if an input file does not exist or is a directory."""
    for name in names:
        if name == "-":
            continue
        if os.path.isdir(name):
            raise CliError(f"{name}: is a directory")
        if not os.path.exists(name):
            raise CliError(f"{name}: No such file or directory")


class _Source:
    """One opened input: the raw file (for the on-disk position) and the decompressed stream."""

    def __init__(self, name: str):
        self.name = name
        self.raw = None
        self.stream = None
        self.is_pipe = True

    def __enter__(self):
        if self.name == "-":
            self.raw = sys.stdin.buffer
            self.stream = self._decompressed(self.raw)
            return self
        try:
            self.raw = open(self.name, "rb")
        except OSError as error:
            raise CliError(os_message(error, "cannot open")) from None
        self.is_pipe = not stat.S_ISREG(os.fstat(self.raw.fileno()).st_mode)
        if not hasattr(self.raw, "peek"):
            self.raw = io.BufferedReader(self.raw)
        self.stream = self._decompressed(self.raw)
        return self

    def _decompressed(self, raw):
        """``raw`` or a decompressing reader over it, chosen by the magic bytes (``peek``: nothing is consumed)."""
        head = raw.peek(_SNIFF_BYTES)[:_SNIFF_BYTES]
        for magic, _, reader in _MAGIC:
            if head.startswith(magic):
                return reader(raw)
        for magic, what in _UNSUPPORTED_MAGIC:
            if head.startswith(magic):
                raise CliError(f"{display_name(self.name)}: is {what}")
        extension = os.path.splitext(self.name)[1].lower() if self.name != "-" else ""
        if extension == ".lzma":
            return _lzma_alone_reader(raw)
        if extension in _EXTENSION_FORMAT and head:
            raise CliError(
                f"{display_name(self.name)}: cannot read: not {_EXTENSION_FORMAT[extension]} data, "
                f"though the name ends in {extension}"
            )
        if b"\x00" in head:
            sys.stderr.write(
                f"bloomkit: warning: {display_name(self.name)}: looks like binary data (NUL bytes), "
                "not text or a compressed format bloomkit reads (gzip, xz, bzip2, zstd); reading it as lines anyway\n"
            )
        return raw

    def __exit__(self, *exc_info):
        if self.stream is not None and self.stream is not self.raw:
            self.stream.close()
        helper_done = not isinstance(self.stream, ReadAhead) or self.stream.stopped
        if self.raw is not None and self.name != "-" and helper_done:
            self.raw.close()
        return False

    def read(self, size: int) -> bytes:
        try:
            if self.stream is not self.raw and not isinstance(self.stream, ReadAhead):
                # Compressed: decompress on a helper thread, overlapping the hashing (_readahead.py).
                self.stream = ReadAhead(self.stream, size, incremental=self.is_pipe)
            if self.is_pipe and hasattr(self.stream, "read1"):
                return self.stream.read1(size)
            return self.stream.read(size)
        except _DECODE_ERRORS as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise CliError(f"{display_name(self.name)}: cannot read: {reason}") from None

    def position(self, streamed: int) -> int:
        """Bytes consumed of the file as stored (compressed bytes for compressed files).

        A pipe has no position; there the ``streamed`` bytes read so far count.
        """
        if self.is_pipe:
            return streamed
        try:
            return self.raw.tell()
        except (OSError, ValueError, io.UnsupportedOperation):
            return streamed


def line_blocks(names, block_size: int, progress) -> Iterator[Block]:
    """Yield the inputs' lines in batches of about ``block_size`` bytes, reporting progress per batch.

    ``progress.update(position, lines)`` is called once per block with the
    bytes consumed so far across all inputs.
    """
    consumed_before = 0  # bytes of the inputs already finished
    for name in names:
        with _Source(name) as source:
            line_number = 1
            pending = []  # a line longer than one block, in pieces
            streamed = 0  # bytes read from a pipe, which has no position
            while True:
                chunk = source.read(block_size)
                if not chunk:
                    break
                streamed += len(chunk)
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    pending.append(chunk)
                    continue
                data = chunk[:cut] if cut < len(chunk) else chunk
                if pending:
                    data = b"".join(pending) + data
                    pending = []
                if cut < len(chunk):
                    pending.append(chunk[cut:])
                lines = data.split(b"\n")
                lines.pop()  # the empty piece after the final newline
                progress.update(consumed_before + source.position(streamed), len(lines))
                yield Block(display_name(name), line_number, lines)
                line_number += len(lines)
            if pending:
                # The last line had no newline: still a line.
                progress.update(consumed_before + source.position(streamed), 1)
                yield Block(display_name(name), line_number, [b"".join(pending)])
            consumed_before += source.position(streamed)


def parse_integers(lines: list, block: Block) -> list:
    """Lines as Python ints (``--int``): base 10, surrounding whitespace ignored, blank lines skipped.

    Every key must fit the integer key range of docs/DESIGN.md, [-2**63, 2**64);
    otherwise a ``CliError`` names the source and line number.
    """
    try:
        values = list(map(int, lines))
        line_numbers = None  # values[i] is line first_line + i
    except ValueError:
        values, line_numbers = [], []
        for offset, line in enumerate(lines):
            text = line.strip()
            if not text:
                continue
            try:
                values.append(int(text))
            except ValueError:
                shown = text[:40].decode("utf-8", "backslashreplace")
                raise CliError(
                    f"{block.source}: line {block.first_line + offset}: not an integer: {shown!r} "
                    "(--int expects one base-10 integer per line)"
                ) from None
            line_numbers.append(block.first_line + offset)
    if values and (min(values) < -(2**63) or max(values) >= 2**64):
        bad = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**64)
        line = line_numbers[bad] if line_numbers is not None else block.first_line + bad
        raise CliError(f"{block.source}: line {line}: integer {values[bad]} is outside the key range [-2**63, 2**64)")
    return values
