"""The scalable Bloom filter: grows with the data, keeps its false-positive promise."""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from . import _core, _keyed, calc
from ._base import FilterBase
from ._fill import fill_false_positive_rate

__all__ = ["ScalableBloomFilter", "SliceInfo"]


class SliceInfo(NamedTuple):
    """One slice of a :class:`ScalableBloomFilter` chain."""

    capacity: int
    error_rate: float
    num_bits: int
    num_hashes: int
    count: int
    fill_ratio: float
    nbytes: int


def check_growth(growth) -> float:
    """Return ``growth`` as a finite float > 1."""
    if isinstance(growth, bool) or not isinstance(growth, numbers.Real):
        raise TypeError(f"growth must be a number > 1, got {type(growth).__name__}")
    growth = float(growth)
    if not (math.isfinite(growth) and growth > 1.0):
        raise ValueError(f"growth must be a finite number > 1 (2 or 4 are usual), got {growth!r}")
    return growth


class ScalableBloomFilter(FilterBase, _core.ScalableBloomCore):
    """A Bloom filter that grows as keys arrive (Almeida et al., 2007).

    Parameters
    ----------
    initial_capacity : int, default 1000
        Keys the first slice holds (> 0). Each later slice holds ``growth``
        times as many as the one before.
    error_rate : float, default 0.01
        Bound on the compound false-positive rate, at any number of keys, in
        (0, 1).
    growth : float, keyword-only, default 2
        Capacity ratio between consecutive slices, > 1. 2 saves memory, 4
        makes the chain (and so each lookup) shorter.
    tightening : float, keyword-only, default 0.85
        Ratio ``r`` between the error rates of consecutive slices, in (0, 1).
    seed : int, keyword-only, default 0
        MurmurHash3 seed in [0, 2**32), shared by every slice.
    layout : str, keyword-only, optional
        Bit layout of every slice (see :class:`bloomkit.BloomFilter`); by
        default :func:`bloomkit.calc.default_layout` for the first slice's
        capacity and rate.

    Notes
    -----
    Slice ``i`` is a Bloom filter for ``initial_capacity * growth**i`` keys
    (rounded up at each step) at error rate ``error_rate * (1 - r) * r**i``.
    Those rates sum to less than ``error_rate``, so the chance that an
    absent key hits any slice, ``1 - prod(1 - p_i)``, stays below it
    however many slices are added. Each slice is sized so that its predicted
    rate at capacity is at most its share (integer ``k``, no rounding up).

    A key is inserted only if no slice reports it, into the newest slice; a
    slice is full when that many keys went into it, and the next insert
    starts a new slice. ``len(f)`` counts those insertions exactly — every
    ``add`` that returned ``False``. A new key that happens to be a false
    positive is not stored and not counted, so ``len`` can fall short of the
    true number of distinct keys by about ``estimated_fpr()`` of them.

    Compared with a ``BloomFilter`` sized in advance for the final key
    count, the chain costs 1.5–4.1× the memory at growth 2, tightening 0.85
    and error_rate 0.01 (2.0× at 100× the initial capacity; formula and
    table in docs/counting_and_scalable.md), and a lookup of an absent key
    probes every slice.

    Examples
    --------
    >>> f = ScalableBloomFilter(initial_capacity=100, error_rate=0.01)
    >>> f.update(f"https://example.com/{i}" for i in range(1000))
    >>> f.num_slices
    4
    >>> "https://example.com/999" in f
    True
    """

    _core_class = _core.ScalableBloomCore
    _pickles_in_place = True
    _over_capacity_advice = "the chain cannot grow further (at most 64 hashes per slice)"

    def __init__(
        self, initial_capacity=1000, error_rate=0.01, *, growth=2, tightening=0.85, seed=0, layout=None, secret_key=None
    ):
        key = _keyed.master_key(secret_key)
        initial_capacity = calc.check_capacity(initial_capacity, "initial_capacity")
        error_rate = calc.check_error_rate(error_rate)
        tightening = calc.check_error_rate(tightening, "tightening")
        if layout is None:
            # The first slice's request decides (later slices are larger at
            # lower rates and keep the chain's one layout).
            layout = calc.default_layout(initial_capacity, error_rate * (1.0 - tightening))
        else:
            layout = calc.check_layout(layout)
        _core.ScalableBloomCore.__init__(
            self, initial_capacity, error_rate, check_growth(growth), tightening, calc.check_seed(seed), layout
        )
        _keyed.apply(self, key)

    # -- estimates -------------------------------------------------------
    @property
    def slices(self) -> list:
        """Per slice, oldest first: a :class:`SliceInfo`."""
        return [
            SliceInfo(capacity, error_rate, num_bits, num_hashes, count, set_bits / num_bits, nbytes)
            for capacity, error_rate, num_bits, num_hashes, count, set_bits, nbytes in self._slice_info()
        ]

    def __len__(self) -> int:
        """Number of keys inserted as new (every ``add`` that returned ``False``); exact, not estimated."""
        return self._count

    def estimated_fpr(self) -> float:
        """Compound false-positive rate from the slices' fills: ``1 - prod(1 - p_i)``.

        ``p_i`` is slice i's rate at its fill in the chain's layout
        (``fill_i ** k_i`` for classic; see :class:`bloomkit.BloomFilter`).
        """
        miss = 1.0
        for _, _, num_bits, num_hashes, _, set_bits, _ in self._slice_info():
            miss *= 1.0 - fill_false_positive_rate(self.layout, num_bits, num_hashes, set_bits)
        return 1.0 - miss

    def _summary(self) -> dict:
        slices = self.slices
        return {
            "initial_capacity": self.initial_capacity,
            "error_rate": self.error_rate,
            "growth": self.growth,
            "tightening": self.tightening,
            "seed": self.seed,
            "num_slices": len(slices),
            "capacity": sum(info.capacity for info in slices),
            "nbytes": sum(info.nbytes for info in slices),
            "slice_fill": [info.fill_ratio for info in slices],
            "count": sum(info.count for info in slices),
            "estimated_fpr": self.estimated_fpr(),
            "layout": self.layout,
        }

    def _display_rows(self) -> dict:
        # What len() counts is not what a Bloom filter's len estimates: say so.
        rows = super()._display_rows()
        rows["count"] = f"{rows['count']:,} (= len: keys inserted as new, exact)"
        rows["estimated_fpr"] = f"{self.estimated_fpr():.4g} (compound, target < {self.error_rate:g})"
        return rows
