"""The cuckoo filter: a compact set with deletion (Fan et al., CoNEXT 2014)."""

from __future__ import annotations

import numpy as np

from . import _batch, _core, _keyed, calc
from ._base import FilterBase
from ._removal import RemovalMixin

__all__ = ["CuckooFilter", "FilterFullError", "TooManyCopiesError", "DEFAULT_ERROR_RATE"]

FilterFullError = _core.FilterFullError
TooManyCopiesError = _core.TooManyCopiesError

# Used when neither error_rate nor fingerprint_bits is given: the same
# default as BloomFilter, which with bucket_size=4 means 10-bit fingerprints.
DEFAULT_ERROR_RATE = 0.01


class CuckooFilter(RemovalMixin, FilterBase, _core.CuckooCore):
    """A cuckoo filter: a set of fingerprints that supports deletion and counting.

    Each key is stored as an ``f``-bit fingerprint in one of its two buckets
    of ``bucket_size`` slots (partial-key cuckoo hashing). Absent keys may
    test positive (at most ``error_rate``), present keys always do.

    Parameters
    ----------
    capacity : int
        Keys the filter must hold (> 0); integral floats such as ``1e6``
        are accepted. The table is sized with
        :func:`bloomkit.calc.cuckoo_params` to hold them at a load factor
        the eviction walk reliably reaches (0.93 for ``bucket_size=4``).
    error_rate : float, optional
        False-positive bound in (0, 1); sets the fingerprint width
        ``f = ceil(log2(2 * bucket_size / error_rate))``. Default 0.01 when
        ``fingerprint_bits`` is not given either (10-bit fingerprints).
    fingerprint_bits : int, keyword-only, optional
        Explicit fingerprint width in [4, 32] (bit-packed: 12 bits cost 12
        bits). With ``error_rate`` too, it must meet that rate.
    bucket_size : int, keyword-only, default 4
        Slots per bucket, in [2, 8]. 4 reaches ~95 % load.
    seed : int, keyword-only, default 0
        MurmurHash3 seed in [0, 2**32); also seeds the eviction walk, so
        the same operations always give the same filter.
    auto_grow : bool, keyword-only, default False
        When the newest table refuses a key, open a new table (a "stage")
        with twice the buckets and one more fingerprint bit for it instead of
        raising :class:`FilterFullError`. Lookups then read every stage. The
        fingerprint width is chosen so that the false-positive rate summed
        over every possible stage stays under ``error_rate``.

    Notes
    -----
    * ``add`` always stores one more copy, so the filter is a multiset:
      ``count(key)`` is the number of matching fingerprints, ``remove``
      takes one away, ``len`` is the exact number stored. A key can be
      stored at most ``2 * bucket_size`` times (``bucket_size`` if both its
      buckets coincide); one more raises :class:`TooManyCopiesError` (not
      :class:`FilterFullError`: the filter is not full, other keys still
      fit) without changing anything. For set semantics (dedup, "seen
      before?") use :meth:`add_new_many` / :meth:`update_new`, which store a
      key only when it is absent; one key at a time, ``if key not in f: f.add(key)``.
    * A refused insert changes nothing: when an insert's eviction walk (at
      most 500 moves) finds no free slot, or the key's two buckets are held
      by fingerprints that cannot move (another key's copies), the walk is
      undone and :class:`FilterFullError` (a subclass of ``RuntimeError``)
      is raised for that key only; the filter is byte for byte as before
      and other keys still go in. ``is_full`` is True only when no slot is
      free. Every key added before stays findable.
    * Only remove keys that were added: removing a never-added key that
      happens to match a stored fingerprint deletes another key's copy.

    Examples
    --------
    >>> f = CuckooFilter(1000, 0.001)
    >>> f.add("alice")
    False
    >>> "alice" in f, f.count("alice"), len(f)
    (True, 1, 1)
    >>> f.remove("alice")
    >>> "alice" in f
    False
    """

    _core_class = _core.CuckooCore
    # Viewed in place by a protocol 5 pickle, copy-on-write: an insert
    # relocates fingerprints between buckets (one is in no bucket mid-walk),
    # so the first write while pickle buffers view the arrays gives the
    # filter copies and leaves the views a consistent snapshot
    # (cpp/bindings/guard.hpp, HandsOffArrays; docs/decisions.md, "Protocol
    # 5 pickles of a filter being written").
    _pickles_in_place = True

    def __init__(
        self,
        capacity,
        error_rate=None,
        *,
        fingerprint_bits=None,
        bucket_size=4,
        seed=0,
        auto_grow=False,
        secret_key=None,
    ):
        key = _keyed.master_key(secret_key)
        if not isinstance(auto_grow, bool):
            raise TypeError(f"auto_grow must be True or False, got {type(auto_grow).__name__}")
        if error_rate is None and fingerprint_bits is None:
            error_rate = DEFAULT_ERROR_RATE
        capacity = calc.check_capacity(capacity)
        bucket_size = calc.check_bucket_size(bucket_size)
        params = calc.cuckoo_params(
            capacity, error_rate, bucket_size, fingerprint_bits=fingerprint_bits, auto_grow=auto_grow
        )
        # error_rate reports the request when there was one (as BloomFilter
        # does), else the bound the chosen fingerprint width guarantees.
        rate = calc.check_error_rate(error_rate) if error_rate is not None else params.error_rate
        _core.CuckooCore.__init__(
            self,
            params.num_buckets,
            bucket_size,
            params.fingerprint_bits,
            calc.check_seed(seed),
            capacity,
            rate,
            auto_grow,
        )
        _keyed.apply(self, key)

    # -- batches ---------------------------------------------------------
    def add_many(self, keys) -> np.ndarray:
        """Insert one copy of every key in order; per key, whether a matching fingerprint was present before.

        The whole batch is validated first: a bad key raises
        ``TypeError``/``ValueError`` and nothing is inserted. If key ``i``
        cannot be stored, :class:`FilterFullError` is raised with
        ``error.index == i``: keys ``0 .. i-1`` are inserted, key ``i`` and
        later ones are not, and nothing stored before is lost.
        """
        result = self._add_many(_batch.single_batch(keys))
        self._check_capacity(2)
        return result

    def update(self, keys) -> None:
        """Insert every key (like :meth:`add_many` without the result array, same failure rule)."""
        self._update(_batch.single_batch(keys))
        self._check_capacity(2)

    def add_new_many(self, keys) -> np.ndarray:
        """Set-style batch insert: store each key only if no matching fingerprint is present.

        Returns, per key, whether it was (probably) present before — earlier
        keys of the same batch included — exactly like
        ``BloomFilter.add_many``: ``~f.add_new_many(keys)`` marks first
        occurrences. Unlike :meth:`add_many` (a multiset: one more copy per
        call, at most ``2 * bucket_size`` copies of a key), a key repeated
        any number of times is stored once, so this is the call for
        deduplication and "seen before?" sets; use :meth:`add_many` when
        ``count``/``remove`` must track multiplicities. A key that matches a
        false positive is not stored. Same validation and failure rule as
        :meth:`add_many`.
        """
        result = self._add_new_many(_batch.single_batch(keys))
        self._check_capacity(2)
        return result

    def update_new(self, keys) -> None:
        """:meth:`add_new_many` without the result array."""
        self._add_new_many(_batch.single_batch(keys), False)
        self._check_capacity(2)

    # -- state -----------------------------------------------------------
    @property
    def num_stages(self) -> int:
        """Tables in the filter: 1, or more once an ``auto_grow`` filter has grown."""
        return len(self._stages)

    @property
    def load_factor(self) -> float:
        """Fingerprints stored / slots, over every stage (a victim loaded from an older file counts as stored)."""
        return len(self) / (self.num_buckets * self.bucket_size)

    def estimated_fpr(self) -> float:
        """False-positive rate at the current fill: ``1 - prod_s (1 - fpr_s)``.

        ``fpr_s`` is :func:`bloomkit.calc.stage_false_positive_rate` of
        stage ``s`` at its own load factor; for a filter that has not grown
        that is :func:`bloomkit.calc.cuckoo_false_positive_rate`, at full
        load the paper's bound of about ``2 b / 2^f``.
        """
        clear = 1.0
        for stage, (num_buckets, _, stored, _) in enumerate(self._stages):
            load = min(1.0, stored / (num_buckets * self.bucket_size))
            clear *= 1.0 - calc.stage_false_positive_rate(self.fingerprint_bits, stage, self.bucket_size, load)
        return 1.0 - clear

    def _summary(self) -> dict:
        rows = {
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "fingerprint_bits": self.fingerprint_bits,
            "bucket_size": self.bucket_size,
            "num_buckets": self.num_buckets,
            "nbytes": self.nbytes,
            "seed": self.seed,
            "count": len(self),
            "load_factor": self.load_factor,
            "estimated_fpr": self.estimated_fpr(),
            "full": self.is_full,
        }
        if self.auto_grow:
            rows["auto_grow"] = True
            rows["num_stages"] = self.num_stages
        return rows
