"""``union``/``|``/``|=`` and ``intersection``/``&``/``&=`` over a filter core's in-place merges.

A class using these sets ``_algebra_class`` (the type both operands must
be) and its core provides ``_union_update(other)`` (and
``_intersection_update(other)``), which check that the geometries match and
raise ``ValueError`` otherwise, leaving the filter as it was.
"""

from __future__ import annotations


class UnionMixin:
    __slots__ = ()
    _algebra_class: type = object

    def _check_other(self, other, operation: str) -> None:
        if not isinstance(other, self._algebra_class):
            raise TypeError(f"{operation} needs another {self._algebra_class.__name__}, got {type(other).__name__}")

    def union(self, *others):
        """A new filter holding the keys of this and every other filter.

        The filters must have equal geometries (the class notes say which
        parameters), else ``ValueError``.
        """
        result = self.copy()
        for other in others:
            result |= other
        return result

    def __ior__(self, other):
        self._check_other(other, "union")
        self._union_update(other)
        return self

    def __or__(self, other):
        if not isinstance(other, self._algebra_class):
            return NotImplemented
        return self.union(other)


class SetAlgebraMixin(UnionMixin):
    __slots__ = ()

    def intersection(self, *others):
        """A new filter with the bits common to this and every other filter (bitwise AND)."""
        result = self.copy()
        for other in others:
            result &= other
        return result

    def __iand__(self, other):
        self._check_other(other, "intersection")
        self._intersection_update(other)
        return self

    def __and__(self, other):
        if not isinstance(other, self._algebra_class):
            return NotImplemented
        return self.intersection(other)
