"""File-backed Bloom filters: ``BloomFilter.open`` (docs/decisions.md, "File-backed filters").

The file is opened here, so a missing or unreadable file raises the usual
``OSError``; the C++ core (``bloomkit/mapped_file.hpp``) checks the header
and the file size, maps the file and validates the frame and parameters in
place. The descriptor is closed once the mapping exists (a mapping does not
need it), so a filter opened "r" holds no file descriptor; one opened
"r+"/"w+" with ``exact=True`` keeps one, for its writer lock
(``bloomkit/writer_lock.hpp``).

A mapped filter pickles as its file: the absolute path, the mode and the
file's identity (device, inode), so another process maps the same file
(``reopen``) instead of receiving a private copy whose adds would never
reach the file.
"""

from __future__ import annotations

import os

from . import _core, calc

MODES = ("r", "r+", "w+")


def open_bloom(cls, path, mode, capacity, error_rate, seed, layout, verify, exact=True):
    """A ``cls`` instance whose bits are the payload of the file at ``path``, mapped in place."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'r', 'r+' or 'w+', got {mode!r}")
    name = os.fsdecode(os.fspath(path))
    if mode == "w+":
        if capacity is None:
            raise TypeError("BloomFilter.open(path, 'w+') creates a filter: capacity is required")
        params = calc.bloom_params(capacity, error_rate, layout)
        seed = calc.check_seed(seed)
        with open(path, "w+b") as handle:
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
    else:
        if capacity is not None or layout is not None:
            raise TypeError(f"capacity and layout are for mode 'w+'; mode {mode!r} reads them from {name}")
        with open(path, "rb" if mode == "r" else "r+b") as handle:
            try:
                file = _core.MappedFile(handle.fileno(), name, mode)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
            identity = _share(file, handle, exact)
    instance = cls.__new__(cls)
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
