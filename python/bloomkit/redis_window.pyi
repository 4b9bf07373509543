import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ._window import WindowSpec

__all__ = ["RedisWindowFilter"]

class RedisWindowFilter:
    key: str
    spec: WindowSpec
    num_bits: int
    num_hashes: int
    nbytes: int
    def __init__(
        self,
        client: Any,
        key: str,
        capacity: int | float | None = None,
        error_rate: float = 0.01,
        *,
        window: str | datetime.timedelta = "7d",
        generations: int = 5,
        seed: int = 0,
        num_hashes: int | None = None,
        clock: Callable[[], float] = ...,
        clock_skew: float = 60.0,
    ) -> None: ...
    @property
    def capacity(self) -> int: ...
    @property
    def error_rate(self) -> float: ...
    def generation_key(self, generation: int) -> str: ...
    def add_many(self, keys: object) -> npt.NDArray[np.bool_]: ...
    def update(self, keys: object) -> None: ...
    def add(self, key: object) -> bool: ...
    def contains_many(self, keys: object) -> npt.NDArray[np.bool_]: ...
    def contains(self, key: object) -> bool: ...
    def __contains__(self, key: object) -> bool: ...
    def delete(self) -> None: ...
