"""The rotating Bloom filter: "seen in the last W" for W seconds or W keys."""

from __future__ import annotations

import functools
import os
import time
from typing import NamedTuple

from . import _core, _keyed, _mapped, calc
from ._base import FilterBase
from ._fill import fill_false_positive_rate
from ._window import DEFAULT_GENERATIONS, WindowSpec

__all__ = ["GenerationInfo", "RotatingBloomFilter"]


class GenerationInfo(NamedTuple):
    """One live generation of a :class:`RotatingBloomFilter`, oldest first."""

    generation: int
    count: int
    fill_ratio: float


class RotatingBloomFilter(_mapped.FileBacked, FilterBase, _core.RotatingBloomCore):
    """Sliding-window membership: a key is remembered for the last ``window``.

    A ring of ``generations`` Bloom filters of one geometry: adds go to the
    current generation, lookups OR the live ones, and each new generation
    clears the oldest slot of the ring in place.

    Parameters
    ----------
    capacity : int
        Distinct keys expected per window (> 0). For a key window, at most
        the window itself is ever live; a smaller capacity is taken as given.
    error_rate : float, default 0.01
        False-positive rate of the whole window (all live generations
        together), in (0, 1).
    window : str, int, float, timedelta or WindowSpec, keyword-only
        ``"7d"``, ``"12h"``, ``"90m"``, ``"30s"`` or a ``timedelta`` (a time
        window), or ``1e6`` / ``"1e6"`` (the last that many keys offered to
        ``add``, repeats included). See :class:`bloomkit.WindowSpec`.
    generations : int, keyword-only, default 5
        Live generations (2 to 64). A key is kept at least ``window`` and
        forgotten by ``window * generations / (generations - 1)``; more
        generations forget closer to ``window`` but each lookup probes more.
    clock : callable, keyword-only, default time.time
        Returns the time in seconds; read before every call of a time window
        (inject a fake clock in tests). Not saved with the filter: a loaded or
        unpickled filter reads ``time.time`` until ``clock`` is set.
    seed, layout, secret_key : keyword-only
        As for :class:`bloomkit.BloomFilter` (the layout of every generation;
        by default :func:`bloomkit.calc.default_layout` for one generation's
        request).

    Notes
    -----
    Each generation holds one interval's keys, ``ceil(capacity /
    (generations - 1))``, at ``p_g = 1 - (1 - error_rate)**(1/generations)``,
    so the ``generations`` live ones OR-ed stay at ``error_rate``
    (``sizing.hpp``). ``add`` is exact test-and-set across the window: a key
    any live generation reports is "seen" and is not inserted again, so a key
    is remembered from its first sighting (seeing it again does not extend
    it). ``len(f)`` counts the keys inserted as new into the live
    generations.

    Examples
    --------
    >>> clock = iter([0.0, 0.0, 3599.0, 7300.0]).__next__
    >>> seen = RotatingBloomFilter(1000, 0.01, window="1h", generations=3, clock=clock)
    >>> seen.add("https://example.com/a")
    False
    >>> seen.add("https://example.com/a")
    True
    >>> "https://example.com/a" in seen  # 3599 s later: within the hour
    True
    >>> "https://example.com/a" in seen  # 7300 s later: forgotten
    False
    """

    _core_class = _core.RotatingBloomCore
    _over_capacity_advice = "create it with a larger capacity (keys per window) or a shorter window"
    _clock = staticmethod(time.time)

    def __init__(
        self,
        capacity,
        error_rate=0.01,
        *,
        window,
        generations=DEFAULT_GENERATIONS,
        clock=time.time,
        seed=0,
        layout=None,
        secret_key=None,
    ):
        key = _keyed.master_key(secret_key)
        capacity = calc.check_capacity(capacity)
        error_rate = calc.check_error_rate(error_rate)
        spec = WindowSpec(window, generations)
        if not callable(clock):
            raise TypeError(f"clock must be a callable returning seconds, got {type(clock).__name__}")
        if layout is None:
            layout = calc.default_layout(spec.generation_capacity(capacity), spec.generation_error_rate(error_rate))
        else:
            layout = calc.check_layout(layout)
        _core.RotatingBloomCore.__init__(self, capacity, error_rate, spec, calc.check_seed(seed), layout)
        _keyed.apply(self, key)
        self._clock = clock

    # -- file-backed filters (docs/rotating.md, "Shared files") -----------
    @classmethod
    def open(
        cls,
        path,
        mode="r",
        *,
        capacity=None,
        error_rate=0.01,
        window=None,
        generations=None,
        clock=time.time,
        seed=0,
        layout=None,
        verify=False,
    ):
        """A filter whose generations and state are the file at ``path``, mapped into memory (no copy).

        ``mode="r"`` maps a saved filter read-only (any write raises
        ``io.UnsupportedOperation``); ``"r+"`` maps it writable and shared by
        every process that opens it; ``"w+"`` creates the file for
        ``capacity``/``error_rate``/``window``/``generations``/``seed``/
        ``layout`` (as the constructor) without building the filter in RAM
        (disk space reserved first, the file built beside ``path`` and
        renamed over it), then maps it as ``"r+"``.

        All generations live in the one file. Every write -- each ``add``,
        each chunk of a batch, and the rotation to a new generation before
        it -- holds an exclusive lock on the file, so across processes and
        threads exactly one adder of a key is told it is new, and a rotation
        happens once, by whichever writer first sees the clock (or the key
        count) reach the next generation. Readers take no lock and always see
        a consistent set of generations. ``clock`` is this process's (not
        stored in the file); ``window`` and ``capacity`` are read from the
        file for ``"r"``/``"r+"``.

        Pickling an open filter sends its path and mode (the receiver maps
        the same file and reads ``time.time``). A writable file is marked
        open for writing until the last writer's :meth:`close` writes its
        checksum; a file whose writer died loads as "not closed cleanly", and
        ``RotatingBloomFilter.open(path, "r+").close()`` repairs it.
        """
        if not callable(clock):
            raise TypeError(f"clock must be a callable returning seconds, got {type(clock).__name__}")
        create = None
        if mode == "w+":
            if capacity is None or window is None:
                raise TypeError(
                    "RotatingBloomFilter.open(path, 'w+') creates a filter: capacity and window are required"
                )
            capacity = calc.check_capacity(capacity)
            error_rate = calc.check_error_rate(error_rate)
            spec = WindowSpec(window, DEFAULT_GENERATIONS if generations is None else generations)
            if layout is None:
                layout = calc.default_layout(spec.generation_capacity(capacity), spec.generation_error_rate(error_rate))
            else:
                layout = calc.check_layout(layout)
            seed = calc.check_seed(seed)

            def create(handle, name):
                return _core._create_rotating_file(handle.fileno(), name, capacity, error_rate, spec, seed, layout)

        elif mode in _mapped.MODES and (
            capacity is not None or window is not None or generations is not None or layout is not None
        ):
            raise TypeError(
                f"capacity, window, generations and layout are for mode 'w+'; mode {mode!r} reads them from "
                f"{os.fsdecode(os.fspath(path))}"
            )
        instance = _mapped.open_mapped(cls, path, mode, create, verify)
        instance._clock = clock
        return instance

    # -- the clock -------------------------------------------------------
    @property
    def clock(self):
        """The callable a time window reads before each call (``time.time`` by default)."""
        self.num_bits  # an uninitialised instance raises here, not with the class default  # noqa: B018
        return self._clock

    @clock.setter
    def clock(self, clock) -> None:
        if not callable(clock):
            raise TypeError(f"clock must be a callable returning seconds, got {type(clock).__name__}")
        self._clock = clock

    @property
    def window(self) -> WindowSpec:
        """The window (:class:`bloomkit.WindowSpec`)."""
        return WindowSpec(self._window)

    @functools.cached_property
    def _timed(self) -> bool:
        # Read once per instance: the core's _window builds a WindowSpec on
        # each access (about 1 us, most of a per-key add before it was cached).
        return self._window.unit == "seconds"

    def _tick(self) -> None:
        # A time window learns the time before each call; a key window
        # moves with the keys themselves.
        if self._timed:
            self._observe(float(self._clock()))

    def add(self, key, /):
        """Insert ``key``; return True if it was (probably) seen within the window (then it is not re-inserted)."""
        self._tick()
        return _core.RotatingBloomCore.add(self, key)

    def contains(self, key, /):
        """True if ``key`` was (probably) added within the window."""
        self._tick()
        return _core.RotatingBloomCore.contains(self, key)

    def __contains__(self, key, /):
        self._tick()
        return _core.RotatingBloomCore.__contains__(self, key)

    def _add_many(self, keys):
        self._tick()
        return _core.RotatingBloomCore._add_many(self, keys)

    def _update(self, keys) -> None:
        self._tick()
        _core.RotatingBloomCore._update(self, keys)

    def _contains_many(self, keys):
        self._tick()
        return _core.RotatingBloomCore._contains_many(self, keys)

    def copy(self):
        duplicate = super().copy()
        duplicate._clock = self._clock
        return duplicate

    # -- estimates -------------------------------------------------------
    @property
    def generations_info(self) -> list:
        """Per live generation, oldest first: a :class:`GenerationInfo`."""
        self._tick()
        return [
            GenerationInfo(generation, count, set_bits / self.num_bits)
            for generation, count, set_bits in self._generation_info()
        ]

    def __len__(self) -> int:
        """Keys inserted as new into the live generations (each ``add`` that returned ``False``); exact."""
        self._tick()
        return self._count

    def estimated_fpr(self) -> float:
        """The window's rate from the live generations' fills: ``1 - prod(1 - p_i)``."""
        self._tick()
        miss = 1.0
        for _, _, set_bits in self._generation_info():
            miss *= 1.0 - fill_false_positive_rate(self.layout, self.num_bits, self.num_hashes, set_bits)
        return 1.0 - miss

    def _summary(self) -> dict:
        live = self.generations_info
        return {
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "window": str(self.window),
            "generations": self.generations,
            "seed": self.seed,
            "current_generation": self.current_generation,
            "generation_fill": [info.fill_ratio for info in live],
            "count": sum(info.count for info in live),
            "keys_seen": self.keys_seen,
            "nbytes": self.nbytes,
            "estimated_fpr": self.estimated_fpr(),
            "layout": self.layout,
        }

    def _display_rows(self) -> dict:
        rows = super()._display_rows()
        if self.closed:
            return rows
        rows["count"] = f"{rows['count']:,} (= len: keys in the window, exact)"
        rows["estimated_fpr"] = f"{rows['estimated_fpr']:.4g} (whole window, target {self.error_rate:g})"
        return rows
