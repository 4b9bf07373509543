"""The CLI's decompressing helper thread (bloomkit/cli/_readahead.py): same bytes, errors at
the read that reaches them, bounded queue, a clean stop."""

from __future__ import annotations

import gzip
import io
import time
import zlib

import pytest

from bloomkit.cli._readahead import ReadAhead


class Blocks(io.RawIOBase):
    """A stream returning the given blocks (or raising the given exception) one read at a time."""

    def __init__(self, items):
        self.items = list(items)
        self.reads = 0
        self.closed_by_caller = False

    def read(self, size=-1):
        self.reads += 1
        if not self.items:
            return b""
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        self.closed_by_caller = True


def test_a_gzip_stream_read_ahead_gives_the_same_bytes():
    data = b"".join(b"line %d\n" % i for i in range(200_000))
    reader = ReadAhead(gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(data))), 65536, incremental=False)
    pieces = []
    while piece := reader.read(65536):
        assert len(piece) <= 65536
        pieces.append(piece)
    reader.close()
    assert b"".join(pieces) == data and len(pieces) == -(-len(data) // 65536)


def test_an_error_on_the_helper_is_raised_by_the_read_that_reaches_it():
    error = zlib.error("Error -3 while decompressing data: invalid block type")
    reader = ReadAhead(Blocks([b"a" * 10, b"b" * 10, error, b"never"]), 10, incremental=False)
    assert reader.read(10) == b"a" * 10
    assert reader.read(10) == b"b" * 10
    with pytest.raises(zlib.error, match="invalid block type"):
        reader.read(10)
    assert reader.read(10) == b""  # finished: nothing after the error
    reader.close()


def test_at_most_depth_blocks_are_read_ahead_and_close_stops_the_helper():
    stream = Blocks([b"x"] * 1000)
    reader = ReadAhead(stream, 1, incremental=False, depth=2)
    assert reader.read(1) == b"x"
    # One block taken, two queued, one read and waiting to be queued: 4 reads, then the helper waits.
    deadline = time.monotonic() + 10
    while stream.reads < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert stream.reads == 4
    reader.close()
    assert reader.stopped and stream.closed_by_caller and stream.reads == 4
