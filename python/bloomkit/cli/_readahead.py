"""Decompression on its own thread, overlapping the hashing of the lines already read.

``zcat FILE | bloomkit dedup`` decompresses in a second process while bloomkit
hashes; ``bloomkit dedup FILE`` decompressing on the same thread added the two
(benchmarks/results/). zlib, lzma, bz2 and both zstd decompressors (zstandard;
compression.zstd from 3.14) release the GIL while they decompress, so one
reader thread filling a bounded queue gives the same overlap without a second
process. At most ``depth`` blocks wait in the queue: memory stays bounded by
``depth * block_size`` whatever the file's size.
"""

from __future__ import annotations

import queue
import threading

_END = object()


class ReadAhead:
    """Reads ``stream`` on a helper thread, a block ahead; ``read(size)`` returns its blocks in order.

    A decompression error raised on the helper thread is raised again by the
    ``read`` that reaches it, so the caller reports it as before. ``close()``
    stops the thread (after at most the block it is reading) and closes ``stream``.
    """

    def __init__(self, stream, block_size: int, incremental: bool, depth: int = 2):
        self._stream = stream
        self._block_size = block_size
        # read1 for pipes: lines arriving slowly are passed on as they come.
        self._read = stream.read1 if incremental and hasattr(stream, "read1") else stream.read
        self._blocks: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._pending = b""
        self._finished = False
        self._thread = threading.Thread(target=self._run, name="bloomkit-readahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                data = self._read(self._block_size)
                if not data:
                    break
                self._put(data)
            self._put(_END)
        except BaseException as error:  # handed to the reading thread
            self._put(error)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._blocks.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _next(self) -> bytes:
        if self._finished:
            return b""
        item = self._blocks.get()
        if item is _END:
            self._finished = True
            return b""
        if isinstance(item, BaseException):
            self._finished = True
            raise item
        return item

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes (fewer only at the end, or when one block is shorter); b"" at the end."""
        data = self._pending or self._next()
        self._pending = data[size:] if len(data) > size else b""
        return data[:size] if len(data) > size else data

    read1 = read

    def close(self) -> None:
        self._stop.set()
        # A helper blocked reading a pipe (compressed stdin that is slow to
        # come) is not waited for: it is a daemon and ends with the process.
        self._thread.join(timeout=1.0)
        if self.stopped:
            self._stream.close()

    @property
    def stopped(self) -> bool:
        """Whether the helper thread has ended (the stream and its file may be closed)."""
        return not self._thread.is_alive()
