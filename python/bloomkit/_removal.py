"""Batch deletion shared by the filters that support removal.

The single-key methods ``remove``, ``discard`` and ``count`` and the batch
primitive ``_remove_many`` are bound in C++ (cpp/bindings/removal.hpp); this
mixin adds the batch entry point for every input kind.
"""

from __future__ import annotations

from . import _batch


class RemovalMixin:
    """Mixin adding :meth:`remove_many`; see the concrete classes."""

    __slots__ = ()

    def remove_many(self, keys) -> None:
        """Remove one copy of every key, all or nothing.

        Keys are removed in order, so a key listed twice needs two stored
        copies. If any key is definitely not in the filter (counting the
        copies earlier keys of the same batch removed), ``KeyError`` names
        its index and *nothing* is removed: the filter is left exactly as it
        was. Bad key types raise ``TypeError``/``ValueError``, also without
        any change. To remove what is present and skip the rest, loop over
        :meth:`discard`.
        """
        self._remove_many(_batch.single_batch(keys))
