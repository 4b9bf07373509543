import os
from typing import IO, Any, NamedTuple

from .orc_bloom import OrcBloomFilter

__all__ = ["StrideFilter", "candidates", "read_bloom_filters"]

_Source = str | os.PathLike[str] | IO[bytes]

class StrideFilter(NamedTuple):
    stripe: int
    stride: int
    filter: OrcBloomFilter

def read_bloom_filters(source: _Source, column: str) -> list[StrideFilter]: ...
def candidates(sources: _Source | list[_Source], column: str, keys: Any) -> list[tuple[_Source, int]]: ...
