"""The refusals shared by the filters built once from all their keys.

A frozen type (a registry row with ``mutable=False``, bloomkit/_types.py)
answers lookups only: every insert and ``clear`` raises ``TypeError``
naming how to build one instead. Its pickles keep the frame's whole
checksum (``_frozen``, bloomkit/_base.py): nothing can change the memory a
protocol 5 pickle views.
"""

from __future__ import annotations


class FrozenMixin:
    """Mixin refusing ``add``, ``add_many``, ``update`` and ``clear``; see the concrete classes."""

    __slots__ = ()
    _frozen = True
    # How to make one, for the refusal: "BinaryFuseFilter.build(keys) (or ...)".
    _build_advice = ""

    def _immutable(self, name: str) -> TypeError:
        return TypeError(
            f"{type(self).__name__} is immutable: {name}() is not supported; build a new filter from every key with "
            f"{self._build_advice}"
        )

    def add(self, key, /):
        """Not supported: raises ``TypeError`` (the filter is frozen; use ``build``)."""
        raise self._immutable("add")

    def add_many(self, keys):
        """Not supported: raises ``TypeError`` (the filter is frozen; use ``build``)."""
        raise self._immutable("add_many")

    def update(self, keys):
        """Not supported: raises ``TypeError`` (the filter is frozen; use ``build``)."""
        raise self._immutable("update")

    def clear(self):
        """Not supported: raises ``TypeError`` (the filter is frozen; use ``build``)."""
        raise self._immutable("clear")

    def _first_seen_many(self, batch):
        # The deduplicating test-and-set (bloomkit dedup --filter): nothing can be stored.
        raise self._immutable("add_many")
