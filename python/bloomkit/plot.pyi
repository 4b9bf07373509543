# bloomkit.plot needs the [plot] extra (matplotlib); figures are typed loosely
# so that the stubs do not require matplotlib to be installed.
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .calc import _Count

__all__ = [
    "fpr_curve",
    "bits_per_key",
    "sizing_crossover",
    "Crossover",
    "measure_fpr",
    "cuckoo_bits_per_key",
    "CUCKOO_LOAD_FACTOR",
]

CUCKOO_LOAD_FACTOR: dict[int, float]

def measure_fpr(filter_: Any, probes: int = 100_000, seed: int = 0) -> float: ...
def fpr_curve(
    capacity: _Count | None = None,
    error_rate: float = 0.01,
    *,
    filter: Any = None,
    num_items: Any = None,
    max_items: _Count | None = None,
    probes: int = 100_000,
    ax: Any = None,
) -> Any: ...
def cuckoo_bits_per_key(
    error_rate: float | npt.ArrayLike, bucket_size: int = 4, load_factor: float | None = None
) -> npt.NDArray[np.float64]: ...
def bits_per_key(
    error_rates: npt.ArrayLike | None = None,
    *,
    bucket_size: int = 4,
    load_factor: float | None = None,
    keys: int = 1_000_000,
    ax: Any = None,
) -> Any: ...

class Crossover(NamedTuple):
    always_below: float
    first: float

def sizing_crossover(
    bucket_size: int = 4, keys: int = 1_000_000, low: float = 1e-7, high: float = 0.1, points: int = 2000
) -> Crossover: ...
