"""``WindowSpec``: a sliding window of generations, "seen in the last W".

One object for every windowed filter (``RotatingBloomFilter`` and the Redis
windows), over the core's arithmetic (``cpp/include/bloomkit/window.hpp``):
a window of W seconds or W keys kept as a ring of ``g`` generations, each
covering one interval I = W / (g - 1). A key is kept at least W and
forgotten by W + I after it was added.

>>> from bloomkit import WindowSpec
>>> week = WindowSpec("7d")
>>> week.unit, week.length, week.generations, week.interval
('seconds', 604800.0, 5, 151200.0)
>>> week.generation_at(1_000_000.0)  # floor(t / I): the current generation at t
6
>>> list(week.live(6))
[2, 3, 4, 5, 6]
>>> WindowSpec(1e6).interval  # keys per generation: ceil(W / (g - 1))
250000
>>> round(WindowSpec(1e6).generation_error_rate(0.01), 6)  # 1 - (1 - p)^(1/g)
0.002008
"""

from __future__ import annotations

import datetime
import numbers

from . import _core

DEFAULT_GENERATIONS = _core.LIMITS["default_window_generations"]


def _window_text(window) -> str:
    # One parser (the core's): every accepted form becomes its text.
    if isinstance(window, str):
        return window
    if isinstance(window, bool):
        raise TypeError("window must be a duration such as '7d', a key count or a timedelta, got bool")
    if isinstance(window, numbers.Integral):
        return str(int(window))
    if isinstance(window, numbers.Real):
        value = float(window)
        if value.is_integer():
            return str(int(value))
        return repr(value)  # refused by the parser with the accepted forms
    if isinstance(window, datetime.timedelta):
        return repr(window.total_seconds()) + "s"
    raise TypeError(f"window must be a duration such as '7d', a key count or a timedelta, got {type(window).__name__}")


class WindowSpec(_core.WindowSpec):
    """A window of ``window`` -- ``"7d"``, ``"12h"``, ``"90m"``, ``"30s"``,
    a ``timedelta`` (time), or ``1e6`` / ``"1e6"`` (keys) -- in ``generations``
    generations (2 to 64; default 5: forgotten by W + W/4).

    ``generation_at(now)`` / ``generation_after(keys_seen)`` give the current
    generation, ``live(current)`` the live ones, ``slot(generation)`` a
    generation's place in the ring; ``generation_error_rate(p)`` and
    ``generation_capacity(n)`` size each generation so that all live ones
    together meet ``p`` (``sizing.hpp``).
    """

    def __init__(self, window: object, generations: int = DEFAULT_GENERATIONS) -> None:
        if isinstance(window, _core.WindowSpec):
            text, generations = window.text, window.generations
        else:
            text = _window_text(window)
        if isinstance(generations, bool) or not isinstance(generations, numbers.Integral):
            raise TypeError(f"generations must be an int, got {type(generations).__name__}")
        if not 0 <= generations < 2**32:
            raise ValueError(f"generations must be in [2, 64], got {generations}")
        super().__init__(text, int(generations))

    def live(self, current: int) -> range:
        """The live generations when ``current`` is current, oldest first."""
        return range(self.oldest_live(current), current + 1)

    @property
    def kept_at_least(self) -> int | float:
        """The shortest a key is remembered: (g - 1) intervals, at least W (seconds or keys)."""
        return (self.generations - 1) * self.interval

    @property
    def forgotten_by(self) -> int | float:
        """The longest a key is remembered: g intervals, W + one interval (seconds or keys)."""
        return self.generations * self.interval

    def __hash__(self) -> int:
        return hash((self.text, self.generations))

    def __repr__(self) -> str:
        return f"WindowSpec({self.text!r}, generations={self.generations})"

    def __str__(self) -> str:
        return self.text

    def __reduce__(self):
        return (WindowSpec, (self.text, self.generations))
