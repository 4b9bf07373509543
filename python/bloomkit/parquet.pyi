import os
from typing import IO, Any, Iterable

import numpy as np
import numpy.typing as npt

from . import _core

__all__ = ["ParquetBloomFilter", "candidates", "read_bloom_filter"]

_Source = str | os.PathLike[str] | IO[bytes]

class ParquetBloomFilter(_core.ParquetBloomCore):
    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        column: str,
        physical_type: str,
        value_type: Any,
        type_length: int = 0,
    ) -> None: ...
    @property
    def column(self) -> str: ...
    @property
    def physical_type(self) -> str: ...
    @property
    def value_type(self) -> Any: ...
    @property
    def fill_ratio(self) -> float: ...
    def contains_many(self, keys: Any) -> npt.NDArray[np.bool_]: ...
    def contains(self, key: Any, /) -> bool: ...
    def __contains__(self, key: object) -> bool: ...
    def __eq__(self, other: object) -> bool: ...
    __hash__: None  # type: ignore[assignment]

def read_bloom_filter(source: _Source, column: str, row_group: int = 0) -> ParquetBloomFilter: ...
def candidates(sources: Iterable[_Source], column: str, keys: Any) -> list[tuple[Any, int]]: ...
