from typing import Any, overload

import numpy as np
import numpy.typing as npt

from . import _core
from ._base import FilterBase, _Keys
from ._core import FilterFullError as FilterFullError
from ._core import TooManyCopiesError as TooManyCopiesError
from ._removal import RemovalMixin
from .calc import _Count

# The C++ core class(es) of this type (cpp/bindings/), re-exported by _core.pyi under the
# name without the underscore (tests/typing/stub_lists.py).
class _CuckooCore(_core._RemovalCore, _core._FilterCore):
    @overload
    def __init__(
        self,
        num_buckets: int,
        bucket_size: int,
        fingerprint_bits: int,
        seed: int,
        capacity: int,
        error_rate: float,
        auto_grow: bool,
    ) -> None: ...
    @overload
    def __init__(self, other: _CuckooCore) -> None: ...
    @overload
    def __init__(self, *, fd: int, key: bytes | None = None) -> None: ...
    @overload
    def __init__(self, *, parts: Any, key: bytes | None = None, live: Any = None, check: int | None = None) -> None: ...
    @overload
    def __init__(self, frame: object, *, key: bytes | None = None) -> None: ...
    def __len__(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def error_rate(self) -> float: ...
    @property
    def bucket_size(self) -> int: ...
    @property
    def fingerprint_bits(self) -> int: ...
    @property
    def auto_grow(self) -> bool: ...
    @property
    def num_buckets(self) -> int: ...
    @property
    def is_full(self) -> bool: ...
    @property
    def _stages(self) -> list[tuple[int, int, int, bool]]: ...

__all__ = ["CuckooFilter", "FilterFullError", "TooManyCopiesError", "DEFAULT_ERROR_RATE"]

DEFAULT_ERROR_RATE: float

class CuckooFilter(RemovalMixin, FilterBase, _CuckooCore):
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
