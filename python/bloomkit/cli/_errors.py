"""Exit codes, the CLI's error type, and turning exceptions into one stderr line.

Exit codes follow grep: 0 success, 1 "nothing found" (``query`` printed no
key), 2 any error (usage, file, corrupt filter, bad number, full filter).
A run stopped by a signal exits 128 + the signal number (130 for Ctrl-C,
143 for SIGTERM) and one whose stdout was closed early exits 141, as if
killed by SIGPIPE.
"""

from __future__ import annotations

import errno
import os
import signal
import sys

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_ERROR = 2
EXIT_BROKEN_PIPE = 128 + 13


class CliError(Exception):
    """An error with a message fit to show the user as is."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; carries the signal number for the exit code.

    A ``BaseException`` like ``KeyboardInterrupt`` so that no ``except
    Exception`` on the way up swallows it.
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def os_message(error: OSError, action: str = "") -> str:
    """``"cannot open x.txt: No such file or directory"`` instead of ``[Errno 2] …``."""
    reason = error.strerror or str(error)
    target = error.filename if error.filename is not None else ""
    prefix = f"{action} " if action else ""
    if target:
        return f"{prefix}{target}: {reason}"
    return f"{prefix}{reason}".strip()


def report(message: str) -> int:
    sys.stderr.write(f"bloomkit: error: {message}\n")
    return EXIT_ERROR


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def run(handler, args) -> int:
    """Run a subcommand handler; every failure becomes one line on stderr and an exit code.

    A traceback is only shown for an unexpected internal error, and only
    when ``BLOOMKIT_DEBUG=1`` is set.
    """
    try:
        return handler(args)
    except CliError as error:
        return report(str(error))
    except Interrupted as interrupt:
        sys.stderr.write(f"bloomkit: interrupted by {signal.Signals(interrupt.signum).name}\n")
        return interrupt.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("bloomkit: interrupted by SIGINT\n")
        return 128 + signal.SIGINT
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:
        if error.errno == errno.EPIPE:
            silence_stdout()
            return EXIT_BROKEN_PIPE
        return report(os_message(error))
    except MemoryError as error:
        # The core's MemoryError says what could not be allocated.
        detail = str(error)
        return report(f"out of memory: {detail}" if detail else "out of memory")
    except (ValueError, RuntimeError) as error:
        # bloomkit's own exceptions carry user-facing messages (docs/DESIGN.md, "Errors"):
        # ValueError for bad parameters or bytes, FilterFullError (a
        # RuntimeError) for a full cuckoo filter.
        return report(str(error))
    except Exception as error:  # noqa: BLE001 - the CLI's promise is "never a traceback"
        if os.environ.get("BLOOMKIT_DEBUG") == "1":
            raise
        return report(f"internal error {type(error).__name__}: {error} (set BLOOMKIT_DEBUG=1 for a traceback)")
