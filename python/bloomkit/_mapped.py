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
"""

from __future__ import annotations

import os

from . import _core, _io, calc

MODES = ("r", "r+", "w+")


def open_bloom(cls, path, mode, capacity, error_rate, seed, layout, verify):
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
            _core.BloomCore.__init__(instance, file, False)
            created.append(file)

        try:
            _io.atomic_write(path, create)
        except BaseException:
            if created:
                instance._close(created[0])  # the file was not renamed into place
            raise
        instance._file = created[0]
        return instance
    else:
        if capacity is not None or layout is not None:
            raise TypeError(f"capacity and layout are for mode 'w+'; mode {mode!r} reads them from {name}")
        with open(path, "rb" if mode == "r" else "r+b") as handle:
            try:
                file = _core.MappedFile(handle.fileno(), name, mode)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
    try:
        _core.BloomCore.__init__(instance, file, bool(verify))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    instance._file = file
    return instance
