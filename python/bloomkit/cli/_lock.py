"""One writer per filter file: an exclusive lock held for a whole CLI run.

``dedup --filter``, ``add``, ``build -o`` and ``merge -o`` read a filter, add to it and
save it back. Two such runs on one file at once would each save their own
copy, and the later rename would silently drop every key of the other run.
So each run holds an exclusive ``flock`` on a sidecar ``PATH.lock`` from
before it loads the filter until after it is saved; a second run prints that
it is waiting and continues, on the first run's saved filter, once the lock
is free (docs/cli.md). The lock is on a sidecar, not on the filter itself,
because a save replaces the filter's inode by rename: a lock on the old
inode would not stop a third run from locking the new one. The sidecar is
never deleted (deleting it would let two runs lock two different files).
Where ``fcntl`` does not exist (Windows) runs are not locked.
"""

from __future__ import annotations

import contextlib
import os
import sys

from ._errors import CliError, os_message

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".lock"


@contextlib.contextmanager
def exclusive(path):
    """Hold the lock of filter file ``path`` (``None`` or ``-``: nothing to lock) for the block."""
    if fcntl is None or path is None or path == "-":
        yield
        return
    lock_path = os.path.realpath(path) + SUFFIX
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as error:
        raise CliError(os_message(error, "cannot create the lock file")) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stderr.write(f"bloomkit: waiting for {path}: another bloomkit run is writing it (lock {lock_path})\n")
            sys.stderr.flush()
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock
