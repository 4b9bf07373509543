from typing import Any, Literal

from ._base import FilterBase
from .bloom import BloomFilter

__all__ = ["build_filter", "dedup_mask", "might_contain"]

def build_filter(
    data: Any, column: Any = None, capacity: int | float | None = None, error_rate: float = 0.01, *, seed: int = 0
) -> BloomFilter: ...
def might_contain(filter: FilterBase, data: Any, column: Any = None) -> Any: ...
def dedup_mask(
    data: Any,
    capacity: int | float | None = None,
    error_rate: float = 0.001,
    *,
    subset: Any = None,
    keep: Literal["first", "last"] = "first",
    seed: int = 0,
) -> Any: ...
