from . import _core
from ._algebra import UnionMixin
from ._fill import FillEstimates
from ._foreign import ForeignFormatFilter
from .calc import _Count

__all__ = ["SparkBloomFilter", "spark_bloom_params"]

def spark_bloom_params(capacity: _Count, error_rate: float) -> tuple[int, int]: ...

class SparkBloomFilter(FillEstimates, UnionMixin, ForeignFormatFilter, _core.SparkBloomCore):
    def __init__(self, capacity: _Count, error_rate: float = 0.01, *, seed: int = 0, version: int = 2) -> None: ...
    @classmethod
    def from_spark_bytes(cls, data: bytes | bytearray | memoryview) -> SparkBloomFilter: ...
    @property
    def _occupied(self) -> int: ...
