from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._base import FilterBase, _Keys
from ._core import FilterFullError as FilterFullError
from ._core import TooManyCopiesError as TooManyCopiesError
from ._removal import RemovalMixin
from .calc import _Count

__all__ = ["CuckooFilter", "FilterFullError", "TooManyCopiesError", "DEFAULT_ERROR_RATE"]

DEFAULT_ERROR_RATE: float

class CuckooFilter(RemovalMixin, FilterBase, _core.CuckooCore):
    def __init__(
        self,
        capacity: _Count,
        error_rate: float | None = None,
        *,
        fingerprint_bits: int | None = None,
        bucket_size: int = 4,
        seed: int = 0,
        auto_grow: bool = False,
        secret_key: bytes | None = None,
    ) -> None: ...
    def add_many(self, keys: _Keys) -> npt.NDArray[np.bool_]: ...
    def update(self, keys: _Keys) -> None: ...
    def add_new_many(self, keys: _Keys) -> npt.NDArray[np.bool_]: ...
    def update_new(self, keys: _Keys) -> None: ...
    @property
    def num_stages(self) -> int: ...
    @property
    def load_factor(self) -> float: ...
    def estimated_fpr(self) -> float: ...
    def _summary(self) -> dict[str, Any]: ...
