from types import TracebackType
from typing import Any, Callable, TypeVar

_T = TypeVar("_T")
_F = TypeVar("_F", bound=FileBacked)

MODES: tuple[str, str, str]

def open_bloom(
    cls: type[_T],
    path: Any,
    mode: str,
    capacity: Any,
    error_rate: float,
    seed: int,
    layout: str | None,
    verify: bool,
    exact: bool = True,
) -> _T: ...
def open_mapped(
    cls: type[_T], path: Any, mode: str, create: Callable[..., Any] | None, verify: bool, exact: bool = True
) -> _T: ...
def reduce_mapped(instance: FileBacked) -> tuple[Callable[..., Any], tuple[Any, ...]]: ...
def reopen(cls: type[_T], path: str, mode: str, exact: bool, identity: tuple[int, int]) -> _T: ...

class FileBacked:
    _file: Any
    _shared_as: tuple[str, str, tuple[int, int]] | None
    def flush(self: Any) -> None: ...
    def close(self: Any) -> None: ...
    def __enter__(self: _F) -> _F: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
    def __reduce_ex__(self, protocol: Any) -> Any: ...
    def _display_rows(self: Any) -> dict[str, Any]: ...
