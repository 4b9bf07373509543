"""Sizing formulas for Bloom and cuckoo filters.

The Bloom filter formulas are the classical ones (Bloom 1970; see also
Broder & Mitzenmacher, "Network Applications of Bloom Filters", 2004):

* after ``n`` distinct insertions into ``m`` bits with ``k`` hash positions
  per key, a key never inserted tests positive with probability
  ``p = (1 - exp(-k n / m)) ** k``;
* for a target ``p`` the size minimising memory is
  ``m = ceil(-n ln p / (ln 2) ** 2)`` with ``k = max(1, round(m / n * ln 2))``.

Because ``k`` must be an integer the rate these parameters predict at full
capacity can differ from the request in the third significant digit (n=100,
p=0.05 gives m=624, k=4 and a predicted 0.0502); the ``error_rate`` field of
:class:`BloomParams` is that honest prediction, not the request echoed back.

The cuckoo filter formulas follow Fan et al., "Cuckoo Filter: Practically
Better Than Bloom" (CoNEXT 2014), section 4; see docs/cuckoo.md:

* a lookup compares an ``f``-bit fingerprint (uniform over the ``2^f - 1``
  non-zero values) with at most ``2b`` stored ones, so an absent key tests
  positive with probability at most ``1 - (1 - 1/(2^f - 1)) ** (2 b)``,
  about ``2b / 2^f``;
* for a target ``p`` that gives ``f = ceil(log2(2b / p))``;
* ``num_buckets`` holds ``capacity`` keys at a load factor the eviction walk
  reliably reaches for that bucket size (93 % for ``b = 4`` and large
  tables, less for small ones; :func:`cuckoo_num_buckets`). bloomkit's tables
  need not be powers of two (the alternate bucket is
  ``(hash(fp) - i) mod m``), so no capacity is rounded up to twice its size.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

__all__ = [
    "BloomParams",
    "CuckooParams",
    "cuckoo_false_positive_rate",
    "cuckoo_num_buckets",
    "cuckoo_params",
    "stage_false_positive_rate",
    "bloom_params",
    "false_positive_rate",
    "bloom_capacity",
    "check_capacity",
    "check_error_rate",
    "check_seed",
    "check_bucket_size",
    "check_fingerprint_bits",
]

LN2 = math.log(2.0)


class BloomParams(NamedTuple):
    """Parameters of a Bloom filter sized for a capacity and error rate."""

    num_bits: int
    num_hashes: int
    bits_per_key: float
    nbytes: int
    error_rate: float


def check_capacity(capacity, name: str = "capacity") -> int:
    """Return ``capacity`` as a positive int, accepting integral floats like 1e6."""
    if isinstance(capacity, bool) or not isinstance(capacity, numbers.Real) and not hasattr(capacity, "__index__"):
        raise TypeError(f"{name} must be a positive integer, got {type(capacity).__name__}")
    if not hasattr(capacity, "__index__"):  # float, np.float32, ...: integral values only
        capacity = float(capacity)
        if not math.isfinite(capacity) or not capacity.is_integer():
            raise ValueError(f"{name} must be a positive integer, got {capacity!r}")
        capacity = int(capacity)
    capacity = int(capacity)
    if capacity <= 0:
        raise ValueError(f"{name} must be a positive integer, got {capacity}")
    if capacity >= 2**63:
        raise ValueError(f"{name} must be below 2**63, got {capacity}")
    return capacity


def check_error_rate(error_rate, name: str = "error_rate") -> float:
    """Return ``error_rate`` as a float strictly between 0 and 1."""
    # numbers.Real covers int, float and NumPy's scalars (np.float32 is not a float subclass).
    if isinstance(error_rate, bool) or not isinstance(error_rate, numbers.Real):
        raise TypeError(f"{name} must be a float in (0, 1), got {type(error_rate).__name__}")
    error_rate = float(error_rate)
    if not (0.0 < error_rate < 1.0):
        raise ValueError(f"{name} must be in (0, 1) exclusive, got {error_rate!r}")
    return error_rate


def check_seed(seed) -> int:
    """Return ``seed`` as an int in [0, 2**32) (MurmurHash3's seed width)."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"seed must be an int in [0, 2**32), got {type(seed).__name__}")
    seed = int(seed.__index__())
    if not (0 <= seed < 2**32):
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return seed


def false_positive_rate(num_bits: int, num_items: int, num_hashes: int) -> float:
    """Probability that an absent key tests positive: ``(1 - e^(-k n / m)) ** k``.

    Parameters
    ----------
    num_bits : int
        Filter size ``m`` in bits (> 0).
    num_items : int
        Number ``n`` of distinct keys inserted (>= 0).
    num_hashes : int
        Positions ``k`` per key (>= 1).

    Examples
    --------
    >>> round(false_positive_rate(624, 100, 4), 4)
    0.0502
    """
    if num_bits <= 0:
        raise ValueError(f"num_bits must be positive, got {num_bits}")
    if num_items < 0:
        raise ValueError(f"num_items must be >= 0, got {num_items}")
    if num_hashes < 1:
        raise ValueError(f"num_hashes must be >= 1, got {num_hashes}")
    return (-math.expm1(-num_hashes * num_items / num_bits)) ** num_hashes


def _optimal_hashes(num_bits: int, capacity: int) -> int:
    return max(1, round(num_bits / capacity * LN2))


def bloom_params(capacity, error_rate) -> BloomParams:
    """Bloom filter parameters for ``capacity`` keys at ``error_rate``.

    ``m = ceil(-n ln p / (ln 2)^2)`` and ``k = max(1, round(m / n ln 2))``.

    Examples
    --------
    >>> bloom_params(100, 0.05)[:2]
    (624, 4)
    """
    n = check_capacity(capacity)
    p = check_error_rate(error_rate)
    num_bits = max(1, math.ceil(-n * math.log(p) / (LN2 * LN2)))
    if num_bits >= 2**63:
        raise ValueError(
            f"capacity {n:,} at error_rate {p!r} needs {num_bits:,} bits; at most 2**63 - 1 are supported "
            "(a ScalableBloomFilter, or several filters, can hold more keys)"
        )
    num_hashes = _optimal_hashes(num_bits, n)
    if num_hashes > 64:
        raise ValueError(f"error_rate {p!r} needs {num_hashes} hash functions; at most 64 are supported")
    return BloomParams(
        num_bits=num_bits,
        num_hashes=num_hashes,
        bits_per_key=num_bits / n,
        nbytes=8 * ((num_bits + 63) // 64),
        error_rate=false_positive_rate(num_bits, n, num_hashes),
    )


def bloom_capacity(num_bits, error_rate) -> int:
    """The most keys a ``num_bits`` filter holds at or below ``error_rate``.

    Uses the optimal integer ``k`` for each candidate ``n`` and returns the
    largest ``n`` whose predicted rate does not exceed ``error_rate``
    (0 when not even one key fits).
    """
    m = check_capacity(num_bits, "num_bits")
    p = check_error_rate(error_rate)
    n = max(1, math.floor(m * LN2 * LN2 / -math.log(p)))

    def fits(items: int) -> bool:
        return false_positive_rate(m, items, _optimal_hashes(m, items)) <= p

    while n > 0 and not fits(n):
        n -= 1
    while fits(n + 1):
        n += 1
    return n


# --- cuckoo filters ------------------------------------------------------

CUCKOO_MIN_FINGERPRINT_BITS = 4
CUCKOO_MAX_FINGERPRINT_BITS = 32
CUCKOO_MAX_BUCKET_SIZE = 8
CUCKOO_MAX_BUCKETS = 2**48

# Sizing: the load factor planned for a table of m buckets of b slots is
# L_b - k_b / sqrt(m). L_b sits a little under the highest load the 500-kick
# walk reaches before its first failure in large tables (paper, Table 2:
# ~84 % at b=2, ~95 % at b=4, ~98 % at b=8); the k_b / sqrt(m) term covers
# the wider spread of small tables. Both were fitted to the 0.1 % quantile
# of the first-failure load measured over thousands of seeds per (b, m)
# (docs/cuckoo.md), so ``capacity`` keys fit on practically every seed.
# b=1 is not offered: it wastes half the table (~50 % load) and its walks
# fail early with noticeable probability at any size.
CUCKOO_SIZING_LOAD = {
    2: (0.83, 2.0),
    3: (0.90, 1.5),
    4: (0.93, 1.0),
    5: (0.95, 0.8),
    6: (0.955, 0.8),
    7: (0.96, 0.7),
    8: (0.965, 0.6),
}
CUCKOO_MIN_BUCKET_SIZE = 2


def cuckoo_num_buckets(capacity, bucket_size: int = 4) -> int:
    """Buckets for ``capacity`` keys: the least ``m`` with ``m b (L_b - k_b / sqrt(m)) >= capacity``.

    Solving the quadratic in ``x = sqrt(m)``:
    ``x = (k + sqrt(k^2 + 4 L n / b)) / (2 L)``, ``m = ceil(x^2)``; for
    ``b = 4`` that is ``capacity / 3.72`` buckets for large capacities
    (93 % load), a little more for small ones; rounded up to even.
    """
    n = check_capacity(capacity)
    b = check_bucket_size(bucket_size)
    load, spread = CUCKOO_SIZING_LOAD[b]
    x = (spread + math.sqrt(spread * spread + 4.0 * load * n / b)) / (2.0 * load)
    num_buckets = math.ceil(x * x)
    # Even, so that no fingerprint has a bucket that is its own alternate
    # (see CuckooTable::alternate in cpp/include/bloomkit/cuckoo.hpp).
    return num_buckets + (num_buckets & 1)


class CuckooParams(NamedTuple):
    """Parameters of a cuckoo filter sized for a capacity and error rate.

    ``error_rate`` is the false-positive bound of these parameters with every
    slot full (for ``auto_grow``, summed over every stage the filter may
    grow), which is at most the requested rate.
    """

    num_buckets: int
    fingerprint_bits: int
    nbytes: int
    error_rate: float


def _check_int(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int in [{low}, {high}], got {type(value).__name__}")
    value = int(value.__index__())
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def check_bucket_size(bucket_size) -> int:
    """Return ``bucket_size`` as an int in [2, 8]."""
    return _check_int(bucket_size, "bucket_size", CUCKOO_MIN_BUCKET_SIZE, CUCKOO_MAX_BUCKET_SIZE)


def check_fingerprint_bits(fingerprint_bits) -> int:
    """Return ``fingerprint_bits`` as an int in [4, 32]."""
    return _check_int(fingerprint_bits, "fingerprint_bits", CUCKOO_MIN_FINGERPRINT_BITS, CUCKOO_MAX_FINGERPRINT_BITS)


def cuckoo_false_positive_rate(fingerprint_bits: int, bucket_size: int = 4, load_factor: float = 1.0) -> float:
    """False-positive bound of one cuckoo table: ``1 - (1 - 1/(2^f - 1)) ** (2 b α)``.

    An absent key is compared with the fingerprints in its two buckets,
    ``2 b α`` of them on average at load factor ``α``; each matches with
    probability ``1 / (2^f - 1)`` (fingerprints are uniform and never 0).
    At ``α = 1`` this is the paper's bound, about ``2b / 2^f``.

    Examples
    --------
    >>> round(cuckoo_false_positive_rate(12, 4), 6)
    0.001952
    """
    return stage_false_positive_rate(fingerprint_bits, 0, bucket_size, load_factor)


def stage_false_positive_rate(fingerprint_bits: int, stage: int, bucket_size: int = 4, load_factor: float = 1.0) -> float:
    """The bound of :func:`cuckoo_false_positive_rate` for stage ``s`` of a grown filter.

    Stage ``s`` stores ``f + s``-bit fingerprints that refine the stage-0
    ones (docs/cuckoo.md): ``(2^f - 1) 2^s`` equally likely values, so one
    comparison matches with probability ``1 / ((2^f - 1) 2^s)``.
    """
    if not 0.0 <= load_factor <= 1.0:
        raise ValueError(f"load_factor must be in [0, 1], got {load_factor!r}")
    match = 1.0 / ((2.0**fingerprint_bits - 1.0) * 2.0**stage)
    return -math.expm1(2.0 * bucket_size * load_factor * math.log1p(-match))


def _chain_false_positive_rate(fingerprint_bits: int, bucket_size: int) -> float:
    # Every stage an auto_grow filter can ever open, all full: stage s has
    # f + s bits, up to 32.
    return sum(
        stage_false_positive_rate(fingerprint_bits, stage, bucket_size)
        for stage in range(CUCKOO_MAX_FINGERPRINT_BITS - fingerprint_bits + 1)
    )


def _cuckoo_bound(fingerprint_bits: int, bucket_size: int, auto_grow: bool) -> float:
    if auto_grow:
        return _chain_false_positive_rate(fingerprint_bits, bucket_size)
    return cuckoo_false_positive_rate(fingerprint_bits, bucket_size)


def cuckoo_params(capacity, error_rate=None, bucket_size=4, *, fingerprint_bits=None, auto_grow=False) -> CuckooParams:
    """Cuckoo filter parameters for ``capacity`` keys at ``error_rate``.

    Parameters
    ----------
    capacity : int
        Keys the filter must hold (> 0).
    error_rate : float, optional
        Target false-positive rate in (0, 1). Sets the fingerprint width
        ``f = ceil(log2(2 b / error_rate))`` (Fan et al. 2014, eq. 6), raised
        by one if the exact bound still exceeds the target. With
        ``auto_grow`` the target covers every stage the filter may grow,
        which costs about one more bit.
    bucket_size : int, default 4
        Slots per bucket ``b``, in [2, 8].
    fingerprint_bits : int, keyword-only, optional
        An explicit ``f`` in [4, 32] instead of one derived from
        ``error_rate``; if both are given, ``f`` must meet the rate.
    auto_grow : bool, keyword-only, default False
        Size for a filter that grows (see :class:`bloomkit.CuckooFilter`).

    Returns
    -------
    CuckooParams
        ``num_buckets``: :func:`cuckoo_num_buckets`, about
        ``capacity / (0.93 b)`` for ``b = 4``;
        ``nbytes``: ``ceil(num_buckets * b * f / 8)``; ``error_rate``: the
        bound these parameters guarantee.

    Examples
    --------
    >>> p = cuckoo_params(1_000_000, 0.01)
    >>> p.num_buckets, p.fingerprint_bits, p.nbytes, round(p.error_rate, 5)
    (269376, 10, 1346880, 0.00779)
    """
    n = check_capacity(capacity)
    b = check_bucket_size(bucket_size)
    if fingerprint_bits is not None:
        f = check_fingerprint_bits(fingerprint_bits)
        if error_rate is not None:
            p = check_error_rate(error_rate)
            bound = _cuckoo_bound(f, b, auto_grow)
            if bound > p:
                needed = cuckoo_params(n, p, b, auto_grow=auto_grow).fingerprint_bits
                raise ValueError(
                    f"fingerprint_bits={f} bounds the false-positive rate by {bound:.3g}, above error_rate={p!r}; "
                    f"use at least {needed} bits or omit one of the two"
                )
    else:
        if error_rate is None:
            raise TypeError("cuckoo_params needs error_rate or fingerprint_bits")
        p = check_error_rate(error_rate)
        # log2(2b) - log2(p), not log2(2b / p): 2b / p overflows to inf for
        # subnormal p (error_rate=1e-320), and such rates need > 32 bits anyway.
        f = max(CUCKOO_MIN_FINGERPRINT_BITS, math.ceil(math.log2(2 * b) - math.log2(p)))
        while f <= CUCKOO_MAX_FINGERPRINT_BITS and _cuckoo_bound(f, b, auto_grow) > p:
            f += 1
        if f > CUCKOO_MAX_FINGERPRINT_BITS:
            raise ValueError(
                f"error_rate={p!r} needs fingerprints wider than {CUCKOO_MAX_FINGERPRINT_BITS} bits "
                f"with bucket_size={b}{' and auto_grow' if auto_grow else ''}; the lowest supported rate is "
                f"{_cuckoo_bound(CUCKOO_MAX_FINGERPRINT_BITS, b, auto_grow):.3g}"
            )
    num_buckets = cuckoo_num_buckets(n, b)
    if num_buckets > CUCKOO_MAX_BUCKETS:
        raise ValueError(f"capacity {n} needs {num_buckets} buckets; at most 2**48 are supported")
    return CuckooParams(
        num_buckets=num_buckets,
        fingerprint_bits=f,
        nbytes=(num_buckets * b * f + 7) // 8,
        error_rate=_cuckoo_bound(f, b, auto_grow),
    )
