from typing import SupportsIndex

from . import _core
from ._algebra import UnionMixin
from ._base import FilterBase
from ._fill import FillEstimates
from ._removal import RemovalMixin
from .bloom import BloomFilter
from .calc import _Count

__all__ = ["CountingBloomFilter"]

COUNTER_WIDTHS: tuple[int, ...]

def check_counter_bits(counter_bits: SupportsIndex) -> int: ...

class CountingBloomFilter(FillEstimates, UnionMixin, RemovalMixin, FilterBase, _core.CountingBloomCore):
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
