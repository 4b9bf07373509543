"""File-backed Bloom filters: ``BloomFilter.open`` (docs/decisions.md, "File-backed filters").

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

from . import _core, _io, calc

MODES = ("r", "r+", "w+")


def open_bloom(cls, path, mode, capacity, error_rate, seed, layout, verify, exact=True):
    """A ``cls`` instance whose bits are the payload of the file at ``path``, mapped in place."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'r', 'r+' or 'w+', got {mode!r}")
    name = os.fsdecode(os.fspath(path))
    instance = cls.__new__(cls)
    if mode == "w+":
        if capacity is None:
            raise TypeError("BloomFilter.open(path, 'w+') creates a filter: capacity is required")
        params = calc.bloom_params(capacity, error_rate, layout)
        seed = calc.check_seed(seed)
        created = []

        # The filter is made over the temporary file, so the file is marked
        # open for writing (docs/FORMAT.md) before it appears at ``path``.
        def create(handle):
            file = _core._create_bloom_file(
                handle.fileno(),
                name,
                params.num_bits,
                params.num_hashes,
                seed,
                int(capacity),
                float(error_rate),
                params.layout,
            )
            identity = _share(file, handle, exact)
            _core.BloomCore.__init__(instance, file, False)
            created.append((file, identity))

        try:
            _io.atomic_write(path, create)
        except BaseException:
            if created:
                instance._close(created[0][0])  # the file was not renamed into place
            raise
        file, identity = created[0]  # renaming keeps the file's (device, inode)
        instance._file = file
        instance._shared_as = (os.path.abspath(name), "r+", identity)
        return instance
    else:
        if capacity is not None or layout is not None:
            raise TypeError(f"capacity and layout are for mode 'w+'; mode {mode!r} reads them from {name}")
        with open(path, "rb" if mode == "r" else "r+b") as handle:
            try:
                file = _core.MappedFile(handle.fileno(), name, mode)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
            identity = _share(file, handle, exact)
    try:
        _core.BloomCore.__init__(instance, file, bool(verify))
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
    instance = open_bloom(cls, path, mode, None, 0.01, 0, None, False, exact)
    if instance._shared_as[2] != identity:
        instance.close()
        raise ValueError(
            f"{path}: this is not the file the pickled filter mapped (it was replaced or moved since); "
            f"open it with BloomFilter.open({path!r}, {mode!r}) to share it"
        )
    return instance
