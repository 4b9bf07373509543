from typing import Any, Literal

from .calc import _Count

__all__ = ["dedup_mask"]

def dedup_mask(
    values: Any,
    capacity: _Count | None = None,
    error_rate: float = 0.001,
    *,
    subset: Any = None,
    keep: Literal["first", "last"] = "first",
    kind: Literal["bloom", "cuckoo"] = "bloom",
    seed: int = 0,
) -> Any: ...
