"""The progress bar on stderr (tqdm) and the run counters behind ``--stats``."""

from __future__ import annotations

import os
import sys
import time


def wanted(quiet: bool, writes_stdout: bool) -> bool:
    """A bar only for a person watching: stderr is a terminal and ``--quiet`` was not given.

    A command that prints its results (dedup, query) shows no bar when its
    stdout is that terminal too: the bar would be torn up by the output.
    """
    if quiet:
        return False
    return _is_terminal(sys.stderr) and not (writes_stdout and _is_terminal(sys.stdout))


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _size() -> dict:
    """Follow the terminal's size; one that reports 0x0 (a bare pty) counts as 80x24.

    tqdm hides a bar whose row is outside the reported height, so a height
    of 0 would hide it completely.
    """
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        size = os.terminal_size((0, 0))
    if size.columns > 0 and size.lines > 0:
        return {"dynamic_ncols": True}
    return {"ncols": size.columns or 80, "nrows": size.lines or 24}


class Progress:
    """Bytes read (of the files as stored on disk) and lines per second.

    ``total`` is the summed on-disk size of the inputs, or ``None`` when one
    of them is a pipe; compressed inputs count compressed bytes, so the bar
    still ends at 100 %. Updated once per batch, never per line.
    """

    def __init__(self, total, enabled: bool, description: str):
        self.lines = 0
        self.started = time.monotonic()
        self._position = 0
        self._bar = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=description,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=sys.stderr,
                **_size(),
                mininterval=0.25,
                leave=True,
            )

    def update(self, position: int, lines: int) -> None:
        """Record that the inputs have been read up to ``position`` bytes and ``lines`` more lines."""
        self.lines += lines
        if self._bar is None:
            return
        if position > self._position:
            self._bar.update(position - self._position)
            self._position = position
        elapsed = max(time.monotonic() - self.started, 1e-9)
        self._bar.set_postfix_str(f"{self.lines / elapsed:,.0f} lines/s", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


def print_rows(rows, stream=None) -> None:
    """Aligned ``label  value`` lines (the format of ``--stats``, ``info`` and ``calc``)."""
    stream = stream if stream is not None else sys.stdout
    rows = list(rows)
    if not rows:
        return
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        stream.write(f"{label:<{width}}  {value}\n")
    stream.flush()
