from ._base import _Keys

class RemovalMixin:
    def remove_many(self, keys: _Keys) -> None: ...
