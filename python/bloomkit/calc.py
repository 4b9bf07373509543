"""Sizing of Bloom and cuckoo filters: a thin wrapper over the C++ core.

Every formula and limit lives in ``cpp/include/bloomkit/sizing.hpp``; this
module validates Python arguments (types, ranges) and returns named tuples.

Bloom filters come in three layouts (``docs/FORMAT.md``):

* ``"classic"``: after ``n`` keys in ``m`` bits with ``k`` positions an
  absent key tests positive with ``p = (1 - exp(-k n / m)) ** k``; sized with
  ``m = ceil(-n ln p / (ln 2) ** 2)``, ``k = max(1, round(m / n ln 2))``.
  Because ``k`` is an integer the predicted rate can differ from the request
  in the third digit (n=100, p=0.05 gives m=624, k=4 and 0.0502); the
  ``error_rate`` of :class:`BloomParams` is that honest prediction.
* ``"blocked512"`` and ``"split_block"``: every bit of a key is in one block
  (512 or 256 bits). Blocks receive a Poisson-distributed number of keys,
  which costs accuracy; they are sized with that model (at most the
  requested rate at capacity), which takes more memory than classic, and
  more the lower the rate (:func:`layout_table` gives the figures).

A filter built without a layout gets :func:`default_layout`'s choice: the
fastest layout within :data:`DEFAULT_LAYOUT_MEMORY_BOUND` (1.10) times the
classic filter's memory for that capacity and rate.

Cuckoo filters follow Fan et al., "Cuckoo Filter: Practically Better Than
Bloom" (CoNEXT 2014), section 4; see docs/cuckoo.md and sizing.hpp.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from . import _core

__all__ = [
    "BloomParams",
    "DEFAULT_LAYOUT_MEMORY_BOUND",
    "default_layout",
    "LAYOUTS",
    "layout_table",
    "check_layout",
    "CuckooParams",
    "cuckoo_false_positive_rate",
    "cuckoo_max_capacity",
    "cuckoo_num_buckets",
    "cuckoo_params",
    "stage_false_positive_rate",
    "bloom_params",
    "false_positive_rate",
    "bloom_capacity",
    "check_capacity",
    "check_error_rate",
    "check_seed",
    "check_num_hashes",
    "check_counter_bits",
    "classic_params_with_hashes",
    "MAX_CAPACITY",
    "MAX_HASHES",
    "COUNTER_WIDTHS",
    "DEFAULT_COUNTER_BITS",
    "power_of_two",
    "check_bucket_size",
    "check_fingerprint_bits",
    "layout_false_positive_rate",
]

LN2 = math.log(2.0)
LIMITS = _core.LIMITS
LAYOUTS = LIMITS["layouts"]
# The default layout's memory is at most this many times the classic filter's (sizing.hpp).
DEFAULT_LAYOUT_MEMORY_BOUND = LIMITS["default_layout_memory_bound"]
# The core's limits (sizing.hpp), read from it: every Python check and message
# below uses these, so a number is written once, in C++.
MAX_CAPACITY: int = LIMITS["max_capacity"]  # capacities and bit counts are below this (2**63)
MAX_HASHES: int = _core.MAX_HASHES
COUNTER_WIDTHS: tuple = _core.COUNTER_WIDTHS
DEFAULT_COUNTER_BITS: int = _core.DEFAULT_COUNTER_BITS


class BloomParams(NamedTuple):
    """Parameters of a Bloom filter sized for a capacity and error rate.

    ``error_rate`` is the rate predicted at capacity; ``overhead`` is the
    memory relative to a classic filter for the same request
    (``num_bits / classic num_bits - 1``, 0.0 for classic); ``default`` is
    True when ``layout`` is :func:`default_layout`'s choice for the request.
    """

    num_bits: int
    num_hashes: int
    bits_per_key: float
    nbytes: int
    error_rate: float
    layout: str = "classic"
    overhead: float = 0.0
    default: bool = False


def check_layout(layout) -> str:
    """Return ``layout`` if it names a Bloom layout, else ``ValueError``/``TypeError``."""
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a str, one of {', '.join(map(repr, LAYOUTS))}; got {type(layout).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: expected one of {', '.join(map(repr, LAYOUTS))}")
    return layout


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
    if capacity >= MAX_CAPACITY:
        raise ValueError(f"{name} must be below {power_of_two(MAX_CAPACITY)}, got {capacity}")
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


def power_of_two(value: int) -> str:
    """A limit that is a power of two as it reads in messages: ``2**63``."""
    return f"2**{value.bit_length() - 1}" if value > 0 and value & (value - 1) == 0 else f"{value:,}"


def check_num_hashes(num_hashes) -> int:
    """Return ``num_hashes`` as an int in ``[1, MAX_HASHES]`` (NumPy integers too)."""
    if isinstance(num_hashes, bool) or not hasattr(num_hashes, "__index__"):
        raise TypeError(f"num_hashes must be an int in [1, {MAX_HASHES}], got {type(num_hashes).__name__}")
    num_hashes = int(num_hashes.__index__())
    if not 1 <= num_hashes <= MAX_HASHES:
        raise ValueError(f"num_hashes must be in [1, {MAX_HASHES}], got {num_hashes}")
    return num_hashes


def _one_of(values) -> str:
    """``(4, 8, 16)`` as ``"4, 8 or 16"``."""
    *head, last = map(str, values)
    return f"{', '.join(head)} or {last}" if head else last


def check_counter_bits(counter_bits) -> int:
    """Return ``counter_bits`` as an int in :data:`COUNTER_WIDTHS` (a counting filter's counter width)."""
    if isinstance(counter_bits, bool) or not hasattr(counter_bits, "__index__"):
        raise TypeError(f"counter_bits must be an int ({_one_of(COUNTER_WIDTHS)}), got {type(counter_bits).__name__}")
    counter_bits = int(counter_bits.__index__())
    if counter_bits not in COUNTER_WIDTHS:
        raise ValueError(f"counter_bits must be {_one_of(COUNTER_WIDTHS)}, got {counter_bits}")
    return counter_bits


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
    return _core.layout_false_positive_rate("classic", num_bits, num_items, num_hashes)


def default_layout(capacity, error_rate) -> str:
    """The layout a Bloom filter for ``capacity`` keys at ``error_rate`` gets when none is named.

    The fastest of split_block, blocked512 and classic (in that order of
    batch speed) whose size is at most :data:`DEFAULT_LAYOUT_MEMORY_BOUND`
    times the classic size: split_block near 1 %, blocked512 from 0.5 down
    to about 5e-4, classic at lower rates (docs/decisions.md).

    Examples
    --------
    >>> [default_layout(10**6, p) for p in (0.1, 0.01, 0.001, 1e-6)]
    ['blocked512', 'split_block', 'blocked512', 'classic']
    """
    return _core.default_layout_size(check_capacity(capacity), check_error_rate(error_rate))[0]


def bloom_params(capacity, error_rate, layout=None) -> BloomParams:
    """Bloom filter parameters for ``capacity`` keys at ``error_rate`` in ``layout``.

    ``layout`` defaults to :func:`default_layout`'s choice. Classic:
    ``m = ceil(-n ln p / (ln 2)^2)`` and ``k = max(1, round(m / n ln 2))``;
    blocked layouts: the fewest blocks whose Poisson-model rate is at most
    ``p`` (see the module docstring). A blocked layout of 64 MiB or more that
    would need more than ``LIMITS["max_layout_overhead"]`` (16) times the
    classic bits is refused with a ``ValueError`` naming both sizes
    (split_block below about 1e-10: 1,000 keys at 1e-16 would take 295 MB
    instead of 9.6 KB).

    Examples
    --------
    >>> bloom_params(100, 0.05, "classic")[:2]
    (624, 4)
    """
    n = check_capacity(capacity)
    p = check_error_rate(error_rate)
    # The core sizes every layout and refuses (ValueError, saying what the
    # request would need) any geometry past its limits (sizing.hpp).
    if layout is None:
        layout, num_bits, num_hashes, predicted = _core.default_layout_size(n, p)
        chosen = layout
    else:
        layout = check_layout(layout)
        num_bits, num_hashes, predicted = _core.layout_size(layout, n, p)
        try:
            chosen = _core.default_layout_size(n, p)[0]
        except ValueError:  # no default for this request; the named layout may still size it
            chosen = None
    _core.check_layout_overhead(layout, n, p, num_bits)
    classic_bits = num_bits if layout == "classic" else _core.layout_size("classic", n, p)[0]
    return BloomParams(
        num_bits=num_bits,
        num_hashes=num_hashes,
        bits_per_key=num_bits / n,
        nbytes=8 * ((num_bits + 63) // 64),
        error_rate=predicted,
        layout=layout,
        overhead=num_bits / classic_bits - 1.0,
        default=layout == chosen,
    )


def classic_params_with_hashes(capacity, error_rate, num_hashes) -> BloomParams:
    """A classic filter for ``capacity`` keys at ``error_rate`` with ``num_hashes`` chosen, not optimal.

    The fewest bits at which ``k`` hashes meet the rate,
    ``m = ceil(-k n / ln(1 - p^(1/k)))`` (sizing.hpp); more bits than
    :func:`bloom_params` for fewer bit operations per key (a Redis filter's
    ``num_hashes=``).

    Examples
    --------
    >>> classic_params_with_hashes(10**6, 0.005, 2)[:2]
    (27272050, 2)
    """
    n = check_capacity(capacity)
    p = check_error_rate(error_rate)
    num_bits, num_hashes, predicted = _core.classic_size_with_hashes(n, p, check_num_hashes(num_hashes))
    classic_bits = _core.layout_size("classic", n, p)[0]
    return BloomParams(
        num_bits=num_bits,
        num_hashes=num_hashes,
        bits_per_key=num_bits / n,
        nbytes=8 * ((num_bits + 63) // 64),
        error_rate=predicted,
        layout="classic",
        overhead=num_bits / classic_bits - 1.0,
        default=False,
    )


def layout_table(capacity, error_rate) -> list:
    """:func:`bloom_params` for every layout: bits, hashes, bytes, predicted rate, overhead vs classic.

    ``default`` marks the layout a filter built without one gets.

    Examples
    --------
    >>> [(p.layout, p.num_hashes, round(p.overhead, 3), p.default) for p in layout_table(10**6, 0.01)]
    [('classic', 7, 0.0, False), ('blocked512', 6, 0.035, False), ('split_block', 8, 0.099, True)]
    >>> [(p.layout, round(p.overhead, 3), p.default) for p in layout_table(10**6, 1e-6)]
    [('classic', 0.0, True), ('blocked512', 0.351, False), ('split_block', 1.249, False)]
    """
    return [bloom_params(capacity, error_rate, layout) for layout in LAYOUTS]


def layout_false_positive_rate(layout, num_bits: int, num_items: int, num_hashes: int) -> float:
    """Predicted rate of a ``layout`` filter of ``num_bits`` bits and ``num_hashes`` hashes after ``num_items`` keys."""
    return _core.layout_false_positive_rate(check_layout(layout), num_bits, num_items, num_hashes)


def bloom_capacity(num_bits, error_rate) -> int:
    """The most keys a classic ``num_bits`` filter holds at or below ``error_rate``.

    Uses the optimal integer ``k`` for each candidate ``n`` and returns the
    largest ``n`` whose predicted rate does not exceed ``error_rate``
    (0 when not even one key fits).
    """
    return _core.classic_capacity(check_capacity(num_bits, "num_bits"), check_error_rate(error_rate))


# --- cuckoo filters ------------------------------------------------------

CUCKOO_MIN_FINGERPRINT_BITS = LIMITS["cuckoo_min_fingerprint_bits"]
CUCKOO_MAX_FINGERPRINT_BITS = LIMITS["cuckoo_max_fingerprint_bits"]
CUCKOO_MIN_BUCKET_SIZE = LIMITS["cuckoo_min_bucket_size"]
CUCKOO_MAX_BUCKET_SIZE = LIMITS["cuckoo_max_bucket_size"]
CUCKOO_MAX_BUCKETS = LIMITS["cuckoo_max_buckets"]
# b -> (L_b, s_b): the planned load factor is L_b - s_b / sqrt(num_buckets).
CUCKOO_SIZING_LOAD = LIMITS["cuckoo_sizing_load"]


def cuckoo_max_capacity(bucket_size: int = 4) -> int:
    """The most keys a cuckoo filter is sized for: the capacity whose table has ``2**48`` buckets.

    About ``2**48 * b * L_b``; larger capacities are refused by
    :func:`cuckoo_params` (a ScalableBloomFilter, or several filters, can hold
    more keys).
    """
    return _core.cuckoo_max_capacity(check_bucket_size(bucket_size))


def cuckoo_num_buckets(capacity, bucket_size: int = 4) -> int:
    """Buckets for ``capacity`` keys: the least ``m`` with ``m b (L_b - s_b / sqrt(m)) >= capacity``.

    ``L_b`` and ``s_b`` are fitted load factors (sizing.hpp, docs/cuckoo.md);
    for ``b = 4`` that is ``capacity / 3.72`` buckets for large capacities
    (93 % load), a little more for small ones; rounded up to even, so that
    no fingerprint has a bucket that is its own alternate.
    """
    return _core.cuckoo_num_buckets(check_capacity(capacity), check_bucket_size(bucket_size))


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


def stage_false_positive_rate(
    fingerprint_bits: int, stage: int, bucket_size: int = 4, load_factor: float = 1.0
) -> float:
    """The bound of :func:`cuckoo_false_positive_rate` for stage ``s`` of a grown filter.

    Stage ``s`` stores ``f + s``-bit fingerprints that refine the stage-0
    ones (docs/cuckoo.md): ``(2^f - 1) 2^s`` equally likely values, so one
    comparison matches with probability ``1 / ((2^f - 1) 2^s)``.
    """
    if not 0.0 <= load_factor <= 1.0:
        raise ValueError(f"load_factor must be in [0, 1], got {load_factor!r}")
    return _core.cuckoo_stage_false_positive_rate(fingerprint_bits, stage, bucket_size, load_factor)


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
    f = 0 if fingerprint_bits is None else check_fingerprint_bits(fingerprint_bits)
    if error_rate is None and fingerprint_bits is None:
        raise TypeError("cuckoo_params needs error_rate or fingerprint_bits")
    p = 0.0 if error_rate is None else check_error_rate(error_rate)
    num_buckets, f, nbytes, bound = _core.cuckoo_size(n, p, b, f, bool(auto_grow))
    return CuckooParams(num_buckets=num_buckets, fingerprint_bits=f, nbytes=nbytes, error_rate=bound)
