from typing import Any, NamedTuple

from . import _core
from ._base import FilterBase
from .calc import _Count, _Layout

__all__ = ["ScalableBloomFilter", "SliceInfo"]

class SliceInfo(NamedTuple):
    capacity: int
    error_rate: float
    num_bits: int
    num_hashes: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, as at runtime
    fill_ratio: float
    nbytes: int

def check_growth(growth: float) -> float: ...

class ScalableBloomFilter(FilterBase, _core.ScalableBloomCore):
    def __init__(
        self,
        initial_capacity: _Count = 1000,
        error_rate: float = 0.01,
        *,
        growth: float = 2,
        tightening: float = 0.85,
        seed: int = 0,
        layout: _Layout | None = None,
        secret_key: bytes | None = None,
    ) -> None: ...
    @property
    def slices(self) -> list[SliceInfo]: ...
    def __len__(self) -> int: ...
    def estimated_fpr(self) -> float: ...
    def _summary(self) -> dict[str, Any]: ...
    def _display_rows(self) -> dict[str, Any]: ...
