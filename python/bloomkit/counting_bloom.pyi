from typing import Any, SupportsIndex, overload

from . import _core
from ._algebra import UnionMixin
from ._base import FilterBase
from ._fill import FillEstimates
from ._removal import RemovalMixin
from .bloom import BloomFilter
from .calc import _Count

# The C++ core class(es) of this type (cpp/bindings/), re-exported by _core.pyi under the
# name without the underscore (tests/typing/stub_lists.py).
class _CountingBloomCore(_core._RemovalCore, _core._FilterCore):
    @overload
    def __init__(
        self, num_bits: int, num_hashes: int, seed: int, capacity: int, error_rate: float, counter_bits: int
    ) -> None: ...
    @overload
    def __init__(self, other: _CountingBloomCore) -> None: ...
    @overload
    def __init__(self, *, fd: int, key: bytes | None = None) -> None: ...
    @overload
    def __init__(self, *, parts: Any, key: bytes | None = None, live: Any = None, check: int | None = None) -> None: ...
    @overload
    def __init__(self, frame: object, *, key: bytes | None = None) -> None: ...
    @property
    def num_bits(self) -> int: ...
    @property
    def num_hashes(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def error_rate(self) -> float: ...
    @property
    def counter_bits(self) -> int: ...
    @property
    def _nonzero_counters(self) -> int: ...
    def _union_update(self, arg0: _CountingBloomCore, /) -> None: ...
    def _to_bloom_core(self) -> _core.BloomCore: ...

__all__ = ["CountingBloomFilter"]

COUNTER_WIDTHS: tuple[int, ...]

def check_counter_bits(counter_bits: SupportsIndex) -> int: ...

class CountingBloomFilter(FillEstimates, UnionMixin, RemovalMixin, FilterBase, _CountingBloomCore):
    def __init__(
        self,
        capacity: _Count,
        error_rate: float = 0.01,
        *,
        seed: int = 0,
        counter_bits: int = 4,
        secret_key: bytes | None = None,
    ) -> None: ...
    @property
    def _occupied(self) -> int: ...
    def to_bloom(self) -> BloomFilter: ...
