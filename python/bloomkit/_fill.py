"""Estimates read off a Bloom-family filter's fill: cardinality, FPR, summary rows.

Shared by :class:`~bloomkit.BloomFilter`, :class:`~bloomkit.CountingBloomFilter`
and :class:`~bloomkit.spark_sketch.SparkBloomFilter`, which all probe
``num_hashes`` of ``num_bits`` cells per key.
"""

from __future__ import annotations

import math

from . import calc


def estimate_cardinality(num_bits: int, num_hashes: int, set_bits: int) -> float:
    """Distinct keys behind ``set_bits`` of ``num_bits`` set: ``-(m/k) ln(1 - X/m)``.

    Swamidass & Baldi, "Mathematical correction for fingerprint similarity
    measures to improve chemical retrieval", J. Chem. Inf. Model. 2007. A
    completely full filter carries no information on how many keys it
    holds; it is reported as if half a bit were still clear (a finite lower
    bound) instead of infinity.
    """
    set_bits = min(set_bits, num_bits - 0.5)
    return -(num_bits / num_hashes) * math.log1p(-set_bits / num_bits)


def fill_false_positive_rate(layout: str, num_bits: int, num_hashes: int, set_bits: int) -> float:
    """False-positive rate implied by ``set_bits`` of ``num_bits`` set in ``layout``.

    Classic: ``fill ** num_hashes``. A blocked layout's rate also depends on
    how unevenly keys fall into blocks, which the fill alone understates, so
    it is the layout's Poisson model
    (:func:`bloomkit.calc.layout_false_positive_rate`) at the count the fill
    implies (:func:`estimate_cardinality`).
    """
    if layout == "classic":
        return (set_bits / num_bits) ** num_hashes
    count = round(estimate_cardinality(num_bits, num_hashes, set_bits))
    return calc.layout_false_positive_rate(layout, num_bits, count, num_hashes)


class FillEstimates:
    """``fill_ratio``, ``estimated_fpr()``, ``len()`` and the display summary of a
    filter of ``num_bits`` cells probed at ``num_hashes`` positions per key, of
    which ``_occupied`` are in use (set bits, or non-zero counters).

    ``_summary_fields`` names the attributes shown before the estimates.
    """

    __slots__ = ()
    _summary_fields: tuple = ()

    @property
    def fill_ratio(self) -> float:
        """Fraction of cells in use (bits set, or counters above zero)."""
        return self._occupied / self.num_bits

    def estimated_fpr(self) -> float:
        """False-positive rate implied by the current fill (:func:`fill_false_positive_rate`)."""
        return fill_false_positive_rate(
            getattr(self, "layout", "classic"), self.num_bits, self.num_hashes, self._occupied
        )

    def __len__(self) -> int:
        """Estimated number of distinct keys inserted (Swamidass & Baldi)."""
        return round(estimate_cardinality(self.num_bits, self.num_hashes, self._occupied))

    def _summary(self) -> dict:
        rows = {name: getattr(self, name) for name in self._summary_fields}
        rows["fill_ratio"] = self.fill_ratio
        rows["estimated_count"] = len(self)
        rows["estimated_fpr"] = self.estimated_fpr()
        return rows
