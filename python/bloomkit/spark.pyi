from typing import Any

from .bloom import BloomFilter
from .spark_sketch import SparkBloomFilter

__all__ = ["build_filter", "might_contain", "register"]

COLLECT_BYTES: int

def build_filter(
    df: Any, column: Any, capacity: int | float | None = None, error_rate: float = 0.01, *, seed: int = 0
) -> BloomFilter: ...
def might_contain(filter: BloomFilter | SparkBloomFilter, column: Any) -> Any: ...
def register(spark: Any, name: str, filter: BloomFilter | SparkBloomFilter) -> None: ...
