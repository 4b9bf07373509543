from typing import Any, NamedTuple, overload

from . import _core
from ._base import FilterBase
from .calc import _Count, _Layout

# The C++ core class(es) of this type (cpp/bindings/), re-exported by _core.pyi under the
# name without the underscore (tests/typing/stub_lists.py).
class _ScalableBloomCore(_core._FilterCore):
    @overload
    def __init__(
        self,
        initial_capacity: int,
        error_rate: float,
        growth: float,
        tightening: float,
        seed: int,
        layout: str = "classic",
    ) -> None: ...
    @overload
    def __init__(self, other: _ScalableBloomCore) -> None: ...
    @overload
    def __init__(self, *, fd: int, key: bytes | None = None) -> None: ...
    @overload
    def __init__(self, *, parts: Any, key: bytes | None = None, live: Any = None, check: int | None = None) -> None: ...
    @overload
    def __init__(self, frame: object, *, key: bytes | None = None) -> None: ...
    @property
    def layout(self) -> str: ...
    @property
    def initial_capacity(self) -> int: ...
    @property
    def error_rate(self) -> float: ...
    @property
    def growth(self) -> float: ...
    @property
    def tightening(self) -> float: ...
    @property
    def num_slices(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def _count(self) -> int: ...
    def _slice_info(self) -> list[tuple[int, float, int, int, int, int, int]]: ...

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

class ScalableBloomFilter(FilterBase, _ScalableBloomCore):
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
