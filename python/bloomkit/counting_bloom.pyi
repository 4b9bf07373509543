from typing import Any, SupportsIndex

from . import _core
from ._base import FilterBase
from ._removal import RemovalMixin
from .bloom import BloomFilter, FillEstimates
from .calc import _Count

__all__ = ["CountingBloomFilter"]

COUNTER_WIDTHS: tuple[int, ...]

def check_counter_bits(counter_bits: SupportsIndex) -> int: ...

class CountingBloomFilter(FillEstimates, RemovalMixin, FilterBase, _core.CountingBloomCore):
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
    def union(self, *others: CountingBloomFilter) -> CountingBloomFilter: ...
    def __ior__(self, other: CountingBloomFilter) -> CountingBloomFilter: ...
    def __or__(self, other: CountingBloomFilter) -> CountingBloomFilter: ...
    def _summary(self) -> dict[str, Any]: ...
