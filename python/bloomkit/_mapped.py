"""File-backed filters: ``BloomFilter.open``, ``RotatingBloomFilter.open`` (docs/decisions.md, "File-backed filters").

The file is opened here, so a missing or unreadable file raises the usual
``OSError``; the C++ core (``bloomkit/mapped_file.hpp``) checks the header
and the file size, maps the file and validates the frame and parameters in
place. The mapping keeps one descriptor of its own until ``close()``: it
holds the locks that protect readers and count writers (docs/RELIABILITY.md,
"Mapped files").

``"w+"`` never writes into an existing file: the new filter is built in a
temporary file beside it (disk space reserved first) and renamed over the
path by ``_io.atomic_write``, so a process that has the old file mapped keeps
its pages and keys, and a failure (full disk, file too large) leaves the old
file exactly as it was.

A mapping opened "r+"/"w+" with ``exact=True`` (the default) keeps one more
descriptor, for its writer lock (``bloomkit/writer_lock.hpp``): exact
test-and-set answers across processes.

A mapped filter pickles as its file: the absolute path, the mode and the
file's identity (device, inode), so another process maps the same file
(``reopen``) instead of receiving a private copy whose adds would never
reach the file.
"""

from __future__ import annotations

import os
from typing import Any

from . import _core, _io, calc

MODES = ("r", "r+", "w+")


def open_bloom(cls, path, mode, capacity, error_rate, seed, layout, verify, exact=True):
    """A BloomFilter (``cls``) whose bits are the payload of the file at ``path``, mapped in place."""
    if mode == "w+":
        if capacity is None:
            raise TypeError("BloomFilter.open(path, 'w+') creates a filter: capacity is required")
        params = calc.bloom_params(capacity, error_rate, layout)
        seed = calc.check_seed(seed)

        def create(handle, name):
            return _core._create_bloom_file(
                handle.fileno(),
                name,
                params.num_bits,
                params.num_hashes,
                seed,
                int(capacity),
                float(error_rate),
                params.layout,
            )

        return open_mapped(cls, path, mode, create, verify, exact)
    if mode in MODES and (capacity is not None or layout is not None):
        name = os.fsdecode(os.fspath(path))
        raise TypeError(f"capacity and layout are for mode 'w+'; mode {mode!r} reads them from {name}")
    return open_mapped(cls, path, mode, None, verify, exact)


def open_mapped(cls, path, mode, create, verify, exact=True):
    """A ``cls`` instance whose storage is the payload of the file at ``path``, mapped in place.

    ``create(handle, name)`` (mode "w+") fills the empty temporary file open
    at ``handle`` and returns its ``_core.MappedFile``; the core class of
    ``cls`` then maps its payload with ``__init__(instance, file, verify)``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be 'r', 'r+' or 'w+', got {mode!r}")
    name = os.fsdecode(os.fspath(path))
    instance = cls.__new__(cls)
    if mode == "w+":
        created = []

        # The filter is made over the temporary file, so the file is marked
        # open for writing (docs/FORMAT.md) before it appears at ``path``.
        def fill(handle):
            file = create(handle, name)
            identity = _share(file, handle, exact)
            cls._core_class.__init__(instance, file, False)
            created.append((file, identity))

        try:
            _io.atomic_write(path, fill)
        except BaseException:
            if created:
                instance._close(created[0][0])  # the file was not renamed into place
            raise
        file, identity = created[0]  # renaming keeps the file's (device, inode)
        instance._file = file
        instance._shared_as = (os.path.abspath(name), "r+", identity)
        return instance
    with open(path, "rb" if mode == "r" else "r+b") as handle:
        try:
            file = _core.MappedFile(handle.fileno(), name, mode)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
        identity = _share(file, handle, exact)
    try:
        cls._core_class.__init__(instance, file, bool(verify))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    instance._file = file
    instance._shared_as = (os.path.abspath(name), "r" if mode == "r" else "r+", identity)
    return instance


def _share(file, handle, exact):
    """Take the writer lock of an exact writable mapping; the file's (device, inode)."""
    if exact and file.writable:
        file._lock_writers(handle.fileno())
    info = os.fstat(handle.fileno())
    return (info.st_dev, info.st_ino)


def reduce_mapped(instance):
    """``__reduce_ex__`` of an open mapped filter: reopen the same file, never copy it."""
    path, mode, identity = instance._shared_as
    return (reopen, (type(instance), path, mode, instance._file.exact, identity))


def reopen(cls, path, mode, exact, identity):
    """Unpickle a mapped filter: map ``path`` again, refusing a file other than the one pickled."""
    instance = open_mapped(cls, path, mode, None, False, exact)
    if instance._shared_as[2] != identity:
        instance.close()
        raise ValueError(
            f"{path}: this is not the file the pickled filter mapped (it was replaced or moved since); "
            f"open it with {cls.__name__}.open({path!r}, {mode!r}) to share it"
        )
    return instance


class FileBacked:
    """The file-backed surface of a type with ``open()``: flush, close, ``with``, pickling as its file.

    A mixin before ``FilterBase``; the core class binds ``_flush``,
    ``_close`` and ``closed`` (cpp/bindings/mapped.hpp).
    """

    _file = None  # the bloomkit._core.MappedFile of a filter made by open()
    _shared_as = None  # (absolute path, "r" or "r+", (st_dev, st_ino)): what a pickle reopens

    # (``self: Any``: the core methods come from the class this is mixed into.)
    def flush(self: Any) -> None:
        """Sync the mapping to the file; the only writer also writes the checksum first.

        With the checksum, the file loads as it is now (reads the whole
        filter); while other writers have it open, the last one to close
        writes it. A no-op for a filter not opened writable; ``ValueError``
        once closed.
        """
        self._flush(self._file)

    def close(self: Any) -> None:
        """Sync a writable file-backed filter (the last writer: checksum and clean mark) and release the storage.

        Waits for batches running in other threads of this process. Any later
        use raises ``ValueError``; closing twice does nothing.
        """
        self._close(self._file)
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __reduce_ex__(self, protocol):
        # A mapped filter crosses a process boundary as its file (above).
        if self._file is not None:
            return reduce_mapped(self)
        return super().__reduce_ex__(protocol)

    def _display_rows(self: Any) -> dict:
        if self.closed:
            return {"state": "closed"}
        return super()._display_rows()  # type: ignore[misc]
