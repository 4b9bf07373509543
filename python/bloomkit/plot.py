"""Plots for sizing and checking filters (matplotlib, the ``[plot]`` extra).

Every function returns a ``matplotlib.figure.Figure`` and never calls
``plt.show()``: in Jupyter the returned figure displays itself, in a
script ``fig.savefig("fpr.png")`` writes it. Figures are closed in
pyplot's registry right away, so a notebook cell shows each one once
and figures are freed with the last reference.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from . import _types, calc

__all__ = [
    "fpr_curve",
    "bits_per_key",
    "sizing_crossover",
    "Crossover",
    "measure_fpr",
    "cuckoo_bits_per_key",
    "CUCKOO_LOAD_FACTOR",
]

# Achievable load factor of a cuckoo filter by bucket size (Fan, Andersen,
# Kaminsky & Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom",
# CoNEXT 2014, section 5.1: 84 % for b=2, 95 % for b=4, 98 % for b=8).
CUCKOO_LOAD_FACTOR = {1: 0.5, 2: 0.84, 4: 0.955, 8: 0.98}

# Probe keys start with bytes no real key set is likely to share, so "absent"
# holds even for filters of random integers or random strings.
_PROBE_PREFIX = b"\x00bloomkit-fpr-probe\x00"


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            "bloomkit.plot needs matplotlib: pip install 'bloomkit[plot]' (or pip install matplotlib)"
        ) from error
    return plt


def _new_axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=figsize, layout="constrained")
    # Out of pyplot's registry: not shown a second time at the end of a
    # notebook cell, and garbage-collected like any object.
    plt.close(figure)
    return figure, ax


def measure_fpr(filter_, probes: int = 100_000, seed: int = 0) -> float:
    """Fraction of ``probes`` keys never inserted that ``filter_`` reports present.

    The probe keys are random 8-byte tails behind a fixed prefix that real
    data does not contain, checked with one ``contains_many`` call.
    """
    if probes <= 0:
        raise ValueError(f"probes must be positive, got {probes}")
    rng = np.random.default_rng(seed)
    tails = rng.integers(0, 256, size=(probes, 8), dtype=np.uint8)
    prefix = np.frombuffer(_PROBE_PREFIX, dtype=np.uint8)
    rows = np.concatenate([np.broadcast_to(prefix, (probes, prefix.size)), tails], axis=1)
    keys = np.ascontiguousarray(rows)  # 2-D uint8: one lossless binary key per row
    return float(np.count_nonzero(filter_.contains_many(keys))) / probes


def fpr_curve(
    capacity=None,
    error_rate=0.01,
    *,
    filter=None,
    num_items=None,
    max_items=None,
    probes=100_000,
    ax=None,
):
    """False-positive rate against the number of distinct keys inserted.

    For one table (a Bloom, counting, Spark or ORC filter, or
    ``capacity``/``error_rate`` alone) the theory curve is
    ``bloomkit.calc.layout_false_positive_rate(layout, m, n, k)`` for the
    layout, bits ``m`` and hashes ``k``: for classic ``(1 - e^(-kn/m))^k``,
    for blocked layouts the Poisson model over block loads. Every other
    type draws its own model (its registry row's ``fpr_model``): a scalable
    filter its chain's compound rate as it grows, a rotating filter the
    window's rate over its live generations, a cuckoo filter its bound
    against load factor, a binary fuse filter its fixed ``2**-f``.
    Given a real ``filter``, its measured rate is added as a point with a
    95 % binomial error bar, measured by probing ``probes`` absent keys.

    Parameters
    ----------
    capacity, error_rate : int, float
        Size the theory curve as ``BloomFilter(capacity, error_rate)``
        would. Ignored when ``filter`` is given.
    filter : any bloomkit filter, optional
        The filter to take the geometry from and to measure.
    num_items : int, optional
        Distinct keys inserted into ``filter`` (the x of the measured
        point); defaults to its estimate ``len(filter)``.
    max_items : int, optional
        Right end of the x axis; default twice the capacity.
    probes : int, default 100_000
        Absent keys probed to measure ``filter``.
    ax : matplotlib Axes, optional
        Draw into these axes instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if filter is None:
        if capacity is None:
            raise TypeError("fpr_curve needs capacity (and error_rate) or filter=")
        params = calc.bloom_params(capacity, error_rate)
        capacity = calc.check_capacity(capacity)
        return _bloom_curve(
            params.num_bits,
            params.num_hashes,
            params.layout,
            capacity,
            error_rate,
            "BloomFilter",
            None,
            num_items,
            max_items,
            probes,
            ax,
        )
    row = _row_of(filter)
    if row.fpr_model == "bloom":
        return _bloom_curve(
            int(filter.num_bits),
            int(filter.num_hashes),
            filter.layout if row.variants == _types.BLOOM_LAYOUTS else "classic",  # counting, Spark, ORC: classic
            int(filter.capacity),
            float(filter.error_rate),
            type(filter).__name__,
            filter,
            num_items,
            max_items,
            probes,
            ax,
        )
    if row.fpr_model == "cuckoo":  # against load factor, not keys
        return _cuckoo_curve(filter, probes, ax)
    draw = {"chain": _scalable_curve, "window": _window_curve, "fixed": _fixed_curve}[row.fpr_model]
    return draw(filter, num_items, max_items, probes, ax)


def _row_of(filter_):
    """The registry row of ``filter_`` (bloomkit/_types.py), or TypeError naming every filter class."""
    try:
        return _types.row_of(type(filter_))
    except TypeError:
        names = [row.class_name for row in _types.ROWS]
        raise TypeError(
            f"fpr_curve needs a bloomkit filter ({', '.join(names[:-1])} or {names[-1]}), got {type(filter_).__name__}"
        ) from None


def _bloom_curve(num_bits, num_hashes, layout, capacity, error_rate, label, filter, num_items, max_items, probes, ax):
    """One table of ``num_bits`` bits and ``num_hashes`` hashes: the layout's rate as keys go in."""
    if filter is not None and num_items is None:
        num_items = len(filter)
    right = max_items or max(2 * capacity, int(1.2 * (num_items or 0)))
    items = np.linspace(0, right, 400)
    theory = [calc.layout_false_positive_rate(layout, num_bits, int(n), num_hashes) for n in items]

    figure, ax = _new_axes(ax, (7, 4.2))
    formula = r"$(1-e^{-kn/m})^k$" if layout == "classic" else f"{layout} block model"
    ax.plot(items, theory, color="C0", label=f"theory {formula}, m={num_bits:,}, k={num_hashes}")
    ax.axvline(capacity, color="grey", linestyle="--", linewidth=1, label=f"capacity {capacity:,}")
    ax.axhline(error_rate, color="grey", linestyle=":", linewidth=1, label=f"target error rate {error_rate:g}")
    if filter is not None:
        _measured_point(ax, filter, num_items, probes)
    _finish_fpr_axes(
        ax,
        (0, right),
        "distinct keys inserted (n)",
        f"{label}: false-positive rate as it fills",
        bottom=_log_floor(theory, error_rate),
        top=1.0,
    )
    return figure


def _scalable_curve(filter_, num_items, max_items, probes, ax):
    """Compound FPR of a scalable filter as it grows, from a twin with the same parameters.

    The chain's slice sizes are the core's (integer-k sizing per slice), so
    the curve is obtained, not re-derived: a fresh filter with the same
    parameters takes distinct keys in steps and reports
    ``estimated_fpr() = 1 - prod(1 - fill_i ** k_i)`` after each.
    """
    from .scalable_bloom import ScalableBloomFilter

    if num_items is None:
        num_items = len(filter_)
    right = int(max_items or max(4 * filter_.initial_capacity, 2 * num_items, 1))
    twin = ScalableBloomFilter(
        filter_.initial_capacity,
        filter_.error_rate,
        growth=filter_.growth,
        tightening=filter_.tightening,
        seed=filter_.seed,
    )
    steps = np.unique(np.linspace(0, right, 300).astype(np.int64))
    compound, slices, inserted = [], [], 0
    keys = np.random.default_rng(1).permutation(right).astype(np.uint64) + np.uint64(2**40)
    for step in steps:
        twin.update(keys[inserted:step])
        inserted = step
        compound.append(twin.estimated_fpr())
        slices.append(twin.num_slices)

    figure, ax = _new_axes(ax, (7, 4.2))
    ax.plot(steps, compound, color="C0", label="compound FPR $1-\\prod_i(1-f_i^{k_i})$ (same parameters)")
    ax.axhline(
        filter_.error_rate, color="grey", linestyle=":", linewidth=1, label=f"target bound {filter_.error_rate:g}"
    )
    starts = [int(steps[i]) for i in range(1, len(steps)) if slices[i] != slices[i - 1]]
    for i, start in enumerate(starts):
        ax.axvline(start, color="grey", linestyle="--", linewidth=0.6, label="new slice" if i == 0 else None)
    if num_items:
        _measured_point(ax, filter_, num_items, probes)
    _finish_fpr_axes(
        ax,
        (0, right),
        "distinct keys inserted (n)",
        f"ScalableBloomFilter: compound false-positive rate as it grows (growth {filter_.growth:g})",
        bottom=_log_floor(compound, filter_.error_rate),
        top=min(1.0, 10 * filter_.error_rate),
    )
    return figure


def _window_curve(filter_, num_items, max_items, probes, ax):
    """A rotating filter's window rate as its newest generation fills.

    The window says "seen" if any live generation does, each a table of the
    same ``m`` bits and ``k`` hashes, so with the older live generations'
    exact counts ``n_i`` and ``c`` keys in the newest the rate is
    ``1 - (1 - p(c)) * prod_i(1 - p(n_i))``, ``p(n)`` the layout's rate for
    ``n`` keys (``calc.layout_false_positive_rate``). Sizing (sizing.hpp)
    gives a generation one interval's keys, ``ceil(capacity / (g - 1))``
    (the dashed line), where ``g`` full generations meet ``error_rate``.
    The filter's own ``estimated_fpr()`` (from the real fills) and its
    measured rate are drawn at its newest generation's count.
    """
    m, k, layout = filter_.num_bits, filter_.num_hashes, filter_.layout
    *older, newest = filter_.generations_info
    if num_items is None:
        num_items = newest.count
    share = filter_.window.generation_capacity(filter_.capacity)
    kept = 1.0
    for generation in older:
        kept *= 1.0 - calc.layout_false_positive_rate(layout, m, generation.count, k)
    right = int(max_items or max(2 * share, int(1.2 * num_items), 1))
    items = np.linspace(0, right, 400)
    theory = [1.0 - kept * (1.0 - calc.layout_false_positive_rate(layout, m, int(c), k)) for c in items]

    figure, ax = _new_axes(ax, (7, 4.2))
    label = f"window rate $1-(1-p(c))\\prod_i(1-p(n_i))$, {len(older)} older generations, m={m:,}, k={k}"
    ax.plot(items, theory, color="C0", label=label)
    ax.axvline(share, color="grey", linestyle="--", linewidth=1, label=f"a generation's share {share:,}")
    ax.axhline(filter_.error_rate, color="grey", linestyle=":", linewidth=1, label=f"target {filter_.error_rate:g}")
    ax.plot(
        [num_items],
        [filter_.estimated_fpr()],
        marker="s",
        color="C2",
        linestyle="none",
        label="estimated_fpr() from the live generations' fills",
    )
    _measured_point(ax, filter_, num_items, probes)
    _finish_fpr_axes(
        ax,
        (0, right),
        "keys in the newest generation (c)",
        f"{type(filter_).__name__}: window false-positive rate (window {filter_.window})",
        bottom=_log_floor(theory, filter_.error_rate),
        top=1.0,
    )
    return figure


def _fixed_curve(filter_, num_items, max_items, probes, ax):
    """A frozen filter's rate, fixed when it was built whatever the key count: its ``error_rate``.

    A binary fuse filter's is ``2**-f`` for ``f``-bit fingerprints (Graf &
    Lemire 2022).
    """
    if num_items is None:
        num_items = len(filter_)
    right = int(max_items or max(2 * num_items, 1))
    rate = float(filter_.error_rate)

    figure, ax = _new_axes(ax, (7, 4.2))
    ax.plot([0, right], [rate, rate], color="C0", label=f"theory: error_rate {rate:.3g}, fixed at build")
    _measured_point(ax, filter_, num_items, probes)
    _finish_fpr_axes(
        ax,
        (0, right),
        "distinct keys it was built from (n)",
        f"{type(filter_).__name__}: false-positive rate (frozen, error_rate {rate:.3g})",
        bottom=rate / 10,
        top=min(1.0, max(rate, 3 / probes) * 10),
    )
    return figure


def _cuckoo_curve(filter_, probes, ax):
    """Cuckoo filter: false-positive bound against load factor, with the filter's measured rate."""
    bits, bucket_size = int(filter_.fingerprint_bits), int(filter_.bucket_size)
    loads = np.linspace(0.0, 1.0, 200)
    theory = [calc.cuckoo_false_positive_rate(bits, bucket_size, float(load)) for load in loads]

    figure, ax = _new_axes(ax, (7, 4.2))
    ax.plot(loads, theory, color="C0", label=rf"bound $1-(1-1/(2^f-1))^{{2b\alpha}}$, f={bits}, b={bucket_size}")
    ax.axhline(
        filter_.error_rate, color="grey", linestyle=":", linewidth=1, label=f"target error rate {filter_.error_rate:g}"
    )
    sizing_load = calc.CUCKOO_SIZING_LOAD[bucket_size][0]
    ax.axvline(sizing_load, color="grey", linestyle="--", linewidth=1, label=f"sizing load {sizing_load:g} (capacity)")
    if len(filter_):
        _measured_point(ax, filter_, filter_.load_factor, probes)
    stages = f", {filter_.num_stages} stages" if filter_.num_stages > 1 else ""
    _finish_fpr_axes(
        ax,
        (0, 1),
        "load factor α (fingerprints stored / slots)",
        f"CuckooFilter: false-positive rate against load{stages}",
        bottom=max(theory[1], filter_.error_rate * 1e-3),
        top=min(1.0, 10 * max(theory[-1], filter_.error_rate)),
    )
    return figure


def _log_floor(curve, target):
    """The bottom of a log rate axis: the curve's smallest positive value, at most four decades below the target."""
    return max(min((value for value in curve if value > 0), default=1e-12), target * 1e-4)


def _finish_fpr_axes(ax, xlim, xlabel, title, **ylim):
    """The axes every false-positive figure shares: a log rate axis, labels, grid and legend."""
    ax.set_yscale("log")
    ax.set_ylim(**ylim)
    ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("false-positive rate")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")


def _measured_point(ax, filter_, num_items, probes):
    rate = measure_fpr(filter_, probes)
    if rate > 0:
        lower, upper = _wilson_interval(rate, probes)
        ax.errorbar(
            [num_items],
            [rate],
            yerr=[[rate - lower], [upper - rate]],
            fmt="o",
            color="C3",
            capsize=4,
            label=f"measured {rate:.3g} ({probes:,} absent keys, 95 % CI)",
        )
    else:
        # No false positive seen: plot the "rule of three" 95 % upper bound.
        ax.plot(
            [num_items],
            [3 / probes],
            marker="v",
            color="C3",
            linestyle="none",
            label=f"measured 0 of {probes:,} (95 % bound {3 / probes:.2g})",
        )


def _wilson_interval(rate, trials, z=1.96):
    """95 % Wilson score interval of a binomial proportion (stays above 0, unlike p ± 1.96σ)."""
    denominator = 1 + z * z / trials
    center = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return center - half, center + half


def cuckoo_bits_per_key(error_rate, bucket_size=4, load_factor=None):
    """Bits per key of a cuckoo filter: ``(log2(1/ε) + log2(2b)) / α`` (Fan et al. 2014, eq. 6).

    ``b`` is the bucket size, ``α`` the load factor reached (default
    :data:`CUCKOO_LOAD_FACTOR` for ``b``). Accepts scalars or arrays.
    """
    if load_factor is None:
        if bucket_size not in CUCKOO_LOAD_FACTOR:
            raise ValueError(f"no default load factor for bucket_size={bucket_size}; pass load_factor")
        load_factor = CUCKOO_LOAD_FACTOR[bucket_size]
    error_rate = np.asarray(error_rate, dtype=float)
    return (np.log2(1.0 / error_rate) + math.log2(2 * bucket_size)) / load_factor


def bits_per_key(error_rates=None, *, bucket_size=4, load_factor=None, keys=1_000_000, ax=None):
    """Memory per key against false-positive rate: Bloom vs cuckoo filters.

    * bloomkit's real sizing, from :mod:`bloomkit.calc` (``bloom_params``,
      ``cuckoo_params``) for ``keys`` keys: whole hash counts and
      fingerprint bits, cuckoo tables at their sizing load — solid lines.
    * The textbook formulas, dashed: Bloom with optimal k
      ``log2(1/ε) / ln 2 ≈ 1.44 log2(1/ε)``; cuckoo
      ``(log2(1/ε) + log2(2b)) / α`` (Fan et al. 2014).
    * The information-theoretic floor ``log2(1/ε)``.

    The crossover marked is :func:`sizing_crossover`: below it bloomkit's
    CuckooFilter is smaller than its BloomFilter for the same request.

    Parameters
    ----------
    error_rates : array-like, optional
        The x values; default 200 rates from 10 % down to 1e-7.
    bucket_size : int, default 4
        Cuckoo bucket size b.
    load_factor : float, optional
        α of the cuckoo *formula*; default by ``bucket_size`` (0.955 for b=4).
    keys : int, default 1_000_000
        Capacity the real sizing is computed for.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    rates = np.logspace(-1, -7, 200) if error_rates is None else np.asarray(error_rates, dtype=float)
    if rates.size == 0 or np.any((rates <= 0) | (rates >= 1)):
        raise ValueError("error_rates must be non-empty and every rate in (0, 1)")
    information = np.log2(1.0 / rates)
    bloom = information / math.log(2.0)
    cuckoo = cuckoo_bits_per_key(rates, bucket_size, load_factor)
    alpha = load_factor or CUCKOO_LOAD_FACTOR[bucket_size]
    bloom_real = [_bloom_sizing(float(rate), keys) for rate in rates]
    cuckoo_real = [_cuckoo_sizing(float(rate), bucket_size, keys) for rate in rates]

    figure, ax = _new_axes(ax, (7, 4.2))
    ax.plot(rates, bloom_real, color="C0", label=f"bloomkit BloomFilter ({keys:,} keys)")
    ax.plot(rates, cuckoo_real, color="C1", label=f"bloomkit CuckooFilter b={bucket_size} ({keys:,} keys)")
    ax.plot(
        rates, bloom, color="C0", linestyle="--", linewidth=1, label=r"Bloom formula $\log_2(1/\varepsilon)\,/\ln 2$"
    )
    ax.plot(
        rates,
        cuckoo,
        color="C1",
        linestyle="--",
        linewidth=1,
        label=rf"cuckoo formula $(\log_2(1/\varepsilon)+\log_2 2b)\,/\,\alpha$, α={alpha:g}",
    )
    ax.plot(rates, information, color="grey", linestyle=":", linewidth=1, label=r"lower bound $\log_2(1/\varepsilon)$")
    crossing = sizing_crossover(bucket_size, keys)
    if rates.min() < crossing.always_below < rates.max():
        ax.axvspan(crossing.first, crossing.always_below, color="C2", alpha=0.12, linewidth=0)
        ax.axvline(crossing.always_below, color="C2", linestyle=":", linewidth=1)
        # In the lower right corner: with the x axis inverted that is the
        # strictest rates, where every curve is high (above log2(1/ε) bits)
        # and the legend (upper left) is far; next to the line the label sat
        # on the curves.
        ax.text(
            0.98,
            0.04,
            f"bloomkit cuckoo smaller below ε ≈ {crossing.always_below:.2g} (dotted)\n"
            f"alternating from ε ≈ {crossing.first:.2g} (shaded)",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize="small",
            color="C2",
        )
    ax.set_xscale("log")
    ax.invert_xaxis()  # stricter rates to the right
    ax.set_xlabel("false-positive rate ε")
    ax.set_ylabel("bits per key")
    ax.set_title("Memory per key: Bloom vs cuckoo")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return figure


class Crossover(NamedTuple):
    """Where bloomkit's CuckooFilter becomes smaller than its BloomFilter (see :func:`sizing_crossover`)."""

    always_below: float  # cuckoo is smaller at every rate below this
    first: float  # the loosest rate at which cuckoo is smaller at all


def sizing_crossover(bucket_size=4, keys=1_000_000, low=1e-7, high=0.1, points=2000) -> Crossover:
    """Rates where bloomkit's CuckooFilter needs fewer bytes than its BloomFilter for the same request.

    Computed from :func:`bloomkit.calc.bloom_params` and
    :func:`bloomkit.calc.cuckoo_params` for ``keys`` keys on a log grid of
    ``points`` rates in ``[low, high]``. The cuckoo size is a staircase
    (whole fingerprint bits) against the Bloom filter's smooth curve, so
    between the two crossings they alternate: ``first`` is the loosest rate
    at which cuckoo is smaller, ``always_below`` the rate below which it is
    smaller everywhere. Both are ``low`` if cuckoo is never smaller.
    """
    return _sizing_crossover(bucket_size, keys, low, high, points)


@functools.lru_cache(maxsize=16)  # a pure function of its arguments; each call sizes ~2000 filters
def _sizing_crossover(bucket_size, keys, low, high, points) -> Crossover:
    rates = np.logspace(math.log10(low), math.log10(high), points)
    smaller = [_cuckoo_sizing(float(rate), bucket_size, keys) < _bloom_sizing(float(rate), keys) for rate in rates]
    always = low
    for rate, is_smaller in zip(rates, smaller):
        if not is_smaller:
            break
        always = float(rate)
    first = max((float(rate) for rate, is_smaller in zip(rates, smaller) if is_smaller), default=low)
    return Crossover(always, first)


def _bloom_sizing(rate, keys=1_000_000) -> float:
    """Bits per key of bloomkit's BloomFilter sizing."""
    return 8 * calc.bloom_params(keys, rate).nbytes / keys


def _cuckoo_sizing(rate, bucket_size=4, keys=1_000_000) -> float:
    """Bits per key bloomkit's cuckoo sizing gives; NaN (a gap) where it rejects the rate."""
    try:
        return 8 * calc.cuckoo_params(keys, rate, bucket_size=bucket_size).nbytes / keys
    except ValueError:
        return float("nan")
