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
p=0.05 gives m=624, k=4 and a predicted 0.0501); the ``error_rate`` field of
:class:`BloomParams` is that honest prediction, not the request echoed back.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = [
    "BloomParams",
    "bloom_params",
    "false_positive_rate",
    "bloom_capacity",
    "check_capacity",
    "check_error_rate",
    "check_seed",
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
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)) and not hasattr(capacity, "__index__"):
        raise TypeError(f"{name} must be a positive integer, got {type(capacity).__name__}")
    if isinstance(capacity, float):
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
    if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)):
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
    0.0501
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
