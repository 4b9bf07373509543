"""Over-capacity detection: ``CapacityWarning`` and the state shown by repr.

A filter is *over capacity* when its estimated false-positive rate (from its
current fill, ``estimated_fpr()``) exceeds :data:`OVER_CAPACITY_FACTOR` times
the rate it was sized for (``error_rate``). For a Bloom filter at the
default 1 % that happens at about 1.16x its capacity; a scalable filter never
gets there (it grows), a cuckoo filter raises ``FilterFullError`` first.

When it happens the filter warns once (``CapacityWarning`` through
:mod:`warnings`, so the usual filters apply: ``warnings.simplefilter("error",
bloomkit.CapacityWarning)`` turns it into an exception). The check is O(1)
for Bloom filters (the set-bit count is tracked) and O(slices/stages) for the
others. It runs after every batch call (``add_many``, ``update``) and, for
single-key ``add``, from C++ once every :data:`SINGLE_ADD_CHECK_INTERVAL`
adds, so the per-key path carries only a counter increment.
"""

from __future__ import annotations

import warnings

from . import _core

__all__ = ["CapacityWarning", "OVER_CAPACITY_FACTOR", "SINGLE_ADD_CHECK_INTERVAL"]

# Estimated FPR above this multiple of error_rate = over capacity. Twice the
# target is far outside the estimate's noise for any filter worth using
# (the estimate is exact in expectation) and still early: for a Bloom
# filter it is crossed at ~1.1-1.2x capacity for error rates 1e-1..1e-6.
OVER_CAPACITY_FACTOR = 2.0

# kCapacityCheckInterval of cpp/bindings/common.hpp, which counts the adds.
SINGLE_ADD_CHECK_INTERVAL: int = _core.LIMITS["capacity_check_interval"]


class CapacityWarning(UserWarning):
    """A filter holds more keys than it was sized for: its false-positive rate is well over target."""


def is_over_capacity(filter_) -> bool:
    # No target to be over: a Spark filter read from Spark's bytes (they hold no error rate).
    if filter_.error_rate is None:
        return False
    return filter_.estimated_fpr() > OVER_CAPACITY_FACTOR * filter_.error_rate


def state(filter_) -> str:
    """``"within target"`` or ``"over capacity (estimated FPR 0.42 > 2 x target 0.001)"``."""
    if filter_.error_rate is None:
        return "no target (read without its error rate)"
    if not is_over_capacity(filter_):
        return "within target"
    return (
        f"over capacity (estimated FPR {filter_.estimated_fpr():.3g} > "
        f"{OVER_CAPACITY_FACTOR:g} x target {filter_.error_rate:g})"
    )


def check(filter_, stacklevel: int) -> None:
    """Warn once per filter object when it has gone over capacity."""
    if getattr(filter_, "_capacity_warned", False) or filter_.error_rate is None:
        return
    # The message states the figures that decided: read once, the count
    # first, so another thread's clear() in between silences the warning
    # (read twice, one said "over capacity ... about 0 keys").
    count = len(filter_)
    fpr = filter_.estimated_fpr()
    if fpr <= OVER_CAPACITY_FACTOR * filter_.error_rate:
        return
    filter_._capacity_warned = True
    capacity = filter_.capacity
    sized = f"sized for {capacity:,} keys at " if capacity is not None else "sized for "
    advice = getattr(
        filter_, "_over_capacity_advice", "create it with a larger capacity, or use ScalableBloomFilter, which grows"
    )
    warnings.warn(
        CapacityWarning(
            f"{type(filter_).__name__} is over capacity: {sized}error rate {filter_.error_rate:g}, it now holds "
            f"about {count:,} keys and its estimated false-positive rate is {fpr:.3g}. "
            f"Answers from here on are often false positives: {advice}."
        ),
        stacklevel=stacklevel + 1,
    )
