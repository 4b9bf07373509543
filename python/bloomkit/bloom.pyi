import os
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _core
from ._algebra import SetAlgebraMixin
from ._base import FilterBase
from ._fill import FillEstimates as FillEstimates
from ._fill import estimate_cardinality as estimate_cardinality
from ._mapped import FileBacked
from .calc import _Count, _Layout
from .orc_bloom import OrcBloomFilter
from .spark_sketch import SparkBloomFilter

__all__ = ["BloomFilter", "estimate_union_size", "estimate_intersection_size", "jaccard"]

class BloomFilter(FileBacked, FillEstimates, SetAlgebraMixin, FilterBase, _core.BloomCore):
    # hashing="spark" returns a bloomkit.spark_sketch.SparkBloomFilter instead (__new__),
    # hashing="orc" a bloomkit.orc_bloom.OrcBloomFilter.
    def __new__(
        cls, *args: Any, hashing: Literal["bloomkit", "spark", "orc"] = "bloomkit", **kwargs: Any
    ) -> BloomFilter: ...
    def __init__(
        self,
        capacity: _Count,
        error_rate: float = 0.01,
        *,
        seed: int = 0,
        layout: _Layout | None = None,
        secret_key: bytes | None = None,
        hashing: Literal["bloomkit"] = "bloomkit",
    ) -> None: ...
    @classmethod
    def from_params(
        cls,
        num_bits: int,
        num_hashes: int,
        *,
        seed: int = 0,
        layout: _Layout = "classic",
        secret_key: bytes | None = None,
    ) -> BloomFilter: ...
    @staticmethod
    def from_spark_bytes(data: bytes | bytearray | memoryview) -> SparkBloomFilter: ...
    @staticmethod
    def from_orc_bytes(data: bytes | bytearray | memoryview) -> OrcBloomFilter: ...
    _file: _core.MappedFile | None
    _shared_as: tuple[str, str, tuple[int, int]] | None
    @classmethod
    def open(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        mode: Literal["r", "r+", "w+"] = "r",
        *,
        capacity: _Count | None = None,
        error_rate: float = 0.01,
        seed: int = 0,
        layout: Literal["classic", "blocked512", "split_block"] | None = None,
        verify: bool = False,
        exact: bool = True,
    ) -> BloomFilter: ...
    def _check_capacity(self, stacklevel: int = 1) -> None: ...
    def _display_rows(self) -> dict[str, Any]: ...
    def _positions_many(self, keys: Any) -> npt.NDArray[np.uint64]: ...
    @property
    def _occupied(self) -> int: ...

def estimate_union_size(a: BloomFilter, b: BloomFilter) -> int: ...
def estimate_intersection_size(a: BloomFilter, b: BloomFilter) -> int: ...
def jaccard(a: BloomFilter, b: BloomFilter) -> float: ...
