"""Reading inputs as batches of whole lines.

Decisions (docs/cli.md):

* A line is the bytes up to, not including, ``\\n``. Nothing is decoded,
  so any encoding (or none) works, and a ``\\r`` before the ``\\n`` is part
  of the line, as in ``awk '!seen[$0]++'``. A last line without ``\\n``
  is a line too.
* ``.gz``, ``.xz``/``.lzma`` and ``.bz2`` files are decompressed, chosen
  by the file name's extension; ``-`` is standard input, read as is.
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

# Extension -> decompressing reader over the opened raw file.
_DECOMPRESSORS = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".xz": lambda raw: lzma.LZMAFile(raw, mode="rb"),
    ".lzma": lambda raw: lzma.LZMAFile(raw, mode="rb"),
    ".bz2": lambda raw: bz2.BZ2File(raw, mode="rb"),
}

# What a damaged compressed stream raises, besides OSError (bad header,
# bz2's "Invalid data stream") and EOFError (truncated stream).
_DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


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
            self.stream = self.raw
            return self
        try:
            self.raw = open(self.name, "rb")
        except OSError as error:
            raise CliError(os_message(error, "cannot open")) from None
        self.is_pipe = not stat.S_ISREG(os.fstat(self.raw.fileno()).st_mode)
        extension = os.path.splitext(self.name)[1].lower()
        decompressor = _DECOMPRESSORS.get(extension)
        self.stream = decompressor(self.raw) if decompressor else self.raw
        return self

    def __exit__(self, *exc_info):
        if self.stream is not None and self.stream is not self.raw:
            self.stream.close()
        if self.raw is not None and self.name != "-":
            self.raw.close()
        return False

    def read(self, size: int) -> bytes:
        try:
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
