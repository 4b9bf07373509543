from typing import Any

from ._core import SecretKeyError as SecretKeyError

__all__ = ["SecretKeyError", "master_key", "apply", "refuse_pickle"]

MIN_SECRET_BYTES: int

def master_key(secret_key: bytes | bytearray | memoryview | None) -> bytes | None: ...
def apply(filter_: Any, master: bytes | None) -> None: ...
def refuse_pickle(filter_: Any) -> None: ...
