"""The counting Bloom filter: a Bloom filter that can also remove keys."""

from __future__ import annotations

from . import _core, _keyed, calc
from ._algebra import UnionMixin
from ._base import FilterBase
from ._fill import FillEstimates
from ._removal import RemovalMixin
from .bloom import BloomFilter

__all__ = ["CountingBloomFilter"]

# The widths and their check are the core's (sizing.hpp, through calc).
COUNTER_WIDTHS = calc.COUNTER_WIDTHS
check_counter_bits = calc.check_counter_bits


class CountingBloomFilter(FillEstimates, UnionMixin, RemovalMixin, FilterBase, _core.CountingBloomCore):
    """A Bloom filter of small counters instead of bits, so keys can be removed.

    Parameters
    ----------
    capacity : int
        Number of distinct keys the filter is sized for (> 0). Integral
        floats such as ``1e6`` are accepted.
    error_rate : float, default 0.01
        Target false-positive rate at ``capacity`` keys, in (0, 1).
    seed : int, keyword-only, default 0
        MurmurHash3 seed in [0, 2**32).
    counter_bits : {4, 8, 16}, keyword-only, default 4
        Width of each counter. A counter stops at ``2**counter_bits - 1``
        (it *saturates*) and is never decremented again.

    Notes
    -----
    The geometry (``num_bits`` counters, ``num_hashes`` positions per key)
    is exactly that of ``BloomFilter(capacity, error_rate, seed=seed, layout="classic")`` and
    so are the positions, so :meth:`to_bloom` gives that filter bit for bit.
    Memory is ``counter_bits`` times a BloomFilter's: at ``error_rate=0.01``
    about 9.6 counters per key, i.e. 4.8 bytes per key with 4-bit counters
    (``-ln p / (ln 2)**2 * counter_bits / 8`` bytes per key in general).

    :meth:`union` (``|``, ``|=``) adds counters, which clamp at their
    maximum; all filters must share ``num_bits``, ``num_hashes``, ``seed``
    and ``counter_bits``, else ``ValueError``.

    Adding a key twice counts it twice (a multiset): it then takes two
    removals. ``remove_many`` removes keys in order, all or nothing: if a
    key is definitely absent at its turn, ``KeyError`` names its index and
    the filter is left exactly as it was. Removing a key that was never
    added is the one thing that can cause false negatives for other keys;
    :meth:`remove` refuses keys that are *definitely* absent, but a false
    positive can still be removed.
    Saturated counters keep the filter safe against every other sequence:
    as long as only added keys are removed, no added key is ever lost.

    Examples
    --------
    >>> f = CountingBloomFilter(1000, 0.01)
    >>> f.add("user-42")
    False
    >>> f.remove("user-42")
    >>> "user-42" in f
    False
    """

    _core_class = _core.CountingBloomCore
    _pickles_in_place = True

    def __init__(self, capacity, error_rate=0.01, *, seed=0, counter_bits=calc.DEFAULT_COUNTER_BITS, secret_key=None):
        key = _keyed.master_key(secret_key)
        params = calc.bloom_params(capacity, error_rate, "classic")
        _core.CountingBloomCore.__init__(
            self,
            params.num_bits,
            params.num_hashes,
            calc.check_seed(seed),
            int(capacity),
            float(error_rate),
            check_counter_bits(counter_bits),
        )
        _keyed.apply(self, key)

    # Cells in use, for FillEstimates: a counter above zero is a set bit.
    _occupied = _core.CountingBloomCore._nonzero_counters

    # -- conversion and set algebra -------------------------------------
    def to_bloom(self) -> BloomFilter:
        """The plain :class:`BloomFilter` of the same geometry: bit i set iff counter i is non-zero.

        It equals (``==`` and byte for byte) the BloomFilter built from the
        same keys with the same capacity, error_rate and seed, at an eighth,
        quarter or sixteenth of the memory.
        """
        result = BloomFilter.__new__(BloomFilter)
        _core.BloomCore.__init__(result, self._to_bloom_core())
        return result

    # union() and | |= (_algebra.py) add counters, clamping at their maximum.
    _summary_fields = ("capacity", "error_rate", "num_bits", "num_hashes", "counter_bits", "nbytes", "seed")


CountingBloomFilter._algebra_class = CountingBloomFilter
