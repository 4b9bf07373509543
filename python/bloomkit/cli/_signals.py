"""Ctrl-C and SIGTERM that never split a batch from its output.

``dedup --filter`` must leave a saved filter that matches what it printed:
a line is marked seen only if it was also written. So the signal handler
raises :class:`~bloomkit.cli._errors.Interrupted` at once while the command
waits for input (a blocked read must stay interruptible), but inside a
:meth:`SignalGuard.critical` section (add a batch, write its output) it
only records the signal and raises when the section ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from ._errors import Interrupted

_HANDLED = (signal.SIGINT, signal.SIGTERM)


class SignalGuard:
    """Installs handlers for SIGINT and SIGTERM for the duration of a ``with`` block."""

    def __init__(self):
        self._in_critical = False
        self._pending = None
        self._previous = {}

    def _handle(self, signum, frame):
        if self._in_critical:
            self._pending = signum
            return
        raise Interrupted(signum)

    def __enter__(self):
        # Handlers can only be installed from the main thread; elsewhere the
        # default behaviour (KeyboardInterrupt in the main thread) stays.
        if threading.current_thread() is threading.main_thread():
            for signum in _HANDLED:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        return False

    @contextlib.contextmanager
    def critical(self):
        """A section that a signal does not interrupt; the signal is raised right after it."""
        self._in_critical = True
        try:
            yield
        finally:
            self._in_critical = False
        if self._pending is not None:
            signum, self._pending = self._pending, None
            raise Interrupted(signum)
