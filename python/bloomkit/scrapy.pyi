from typing import Any

__all__ = ["BloomDupeFilter"]

DEFAULT_CAPACITY: int
DEFAULT_ERROR_RATE: float
JOBDIR_FILE: str

class BloomDupeFilter:
    seen: Any
    fingerprinter: Any
    path: str | None
    debug: bool
    logdupes: bool
    logger: Any
    def __init__(self, seen: Any, *, fingerprinter: Any, path: str | None = None, debug: bool = False) -> None: ...
    @classmethod
    def from_crawler(cls, crawler: Any) -> BloomDupeFilter: ...
    def request_seen(self, request: Any) -> bool: ...
    def open(self) -> Any: ...
    def close(self, reason: str) -> None: ...
    def log(self, request: Any, spider: Any) -> None: ...
