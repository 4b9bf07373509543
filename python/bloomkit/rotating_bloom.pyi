import datetime
import os
from functools import cached_property
from typing import Any, Callable, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from . import _core
from ._base import FilterBase, _Key
from ._mapped import FileBacked
from ._window import WindowSpec
from .calc import _Count, _Layout

__all__ = ["GenerationInfo", "RotatingBloomFilter"]

class GenerationInfo(NamedTuple):
    generation: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, as at runtime
    fill_ratio: float

class RotatingBloomFilter(FileBacked, FilterBase, _core.RotatingBloomCore):
    def __init__(
        self,
        capacity: _Count,
        error_rate: float = 0.01,
        *,
        window: str | int | float | datetime.timedelta | _core.WindowSpec,
        generations: int = ...,
        clock: Callable[[], float] = ...,
        seed: int = 0,
        layout: _Layout | None = None,
        secret_key: bytes | None = None,
    ) -> None: ...
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
        window: str | int | float | datetime.timedelta | _core.WindowSpec | None = None,
        generations: int | None = None,
        clock: Callable[[], float] = ...,
        seed: int = 0,
        layout: _Layout | None = None,
        verify: bool = False,
    ) -> RotatingBloomFilter: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None: ...
    @property
    def window(self) -> WindowSpec: ...
    @cached_property
    def _timed(self) -> bool: ...
    def _tick(self) -> None: ...
    def add(self, key: _Key, /) -> bool: ...  # type: ignore[override]
    def contains(self, key: _Key, /) -> bool: ...  # type: ignore[override]
    def __contains__(self, key: object, /) -> bool: ...
    def _add_many(self, keys: object) -> npt.NDArray[np.bool_]: ...
    def _update(self, keys: object) -> None: ...
    def _contains_many(self, keys: object) -> npt.NDArray[np.bool_]: ...
    @property
    def generations_info(self) -> list[GenerationInfo]: ...
    def __len__(self) -> int: ...
    def estimated_fpr(self) -> float: ...
    def _summary(self) -> dict[str, Any]: ...
    def _display_rows(self) -> dict[str, Any]: ...
