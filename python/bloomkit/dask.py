"""Dask integration: build a Bloom filter from a Dask column, filter and deduplicate with it.

Needs dask (``pip install 'bloomkit[dask]'``; ``dask[distributed]`` for a cluster).
Every function takes a Dask Series (or a DataFrame and a column name) and
returns a Dask collection or a filter; nothing loops over rows in Python —
each partition goes to C++ in one call.

* :func:`build_filter` builds one filter per partition and ORs them in a
  binary tree of tasks (depth ``ceil(log2(partitions))``), so no worker ever
  holds more than three filters. The result is byte-equal to a
  :class:`bloomkit.BloomFilter` of the same capacity, error rate and seed
  built locally from the same values: a Bloom filter's bits do not depend on
  the order keys arrive in, and all partition filters share one geometry.
* :func:`might_contain` maps each partition through ``contains_many``. The
  filter enters the task graph once (one key every partition task depends
  on), so each worker process deserialises it once, not per partition.
* :func:`dedup_mask` keeps the first (or last) occurrence of each value in
  partition order, like ``pandas.Series.duplicated`` over the whole column:
  partition *i*'s mask is the test-and-set answers of its values against the
  OR of the filters of partitions *0 … i-1*. The per-partition filters are
  built in parallel, the prefix ORs are a chain of cheap whole-filter ORs,
  and the masks are computed in parallel again; the result equals
  :func:`bloomkit.dedup_mask` of the whole column computed in one process.
"""

from __future__ import annotations

import math

from .bloom import BloomFilter

__all__ = ["build_filter", "dedup_mask", "might_contain"]

_KEEP = ("first", "last")
# dask's nunique_approx is a HyperLogLog with 2**16 registers: relative
# standard error 1.04 / sqrt(2**16) = 0.4 %. The head-room adds 5 sigma, so an
# underestimate does not cost the requested false-positive rate.
_HEADROOM = 1.02


def _series(data, column):
    """The Dask Series to read: ``data`` itself, or ``data[column]`` of a DataFrame."""
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        if column is None:
            raise TypeError(f"a Dask DataFrame needs a column name; it has {list(data.columns)}")
        return data[column]
    if isinstance(data, dd.Series):
        if column is not None:
            raise TypeError("column is for a Dask DataFrame; a Series is read as it is")
        return data
    raise TypeError(f"expected a dask.dataframe DataFrame or Series, got {type(data).__name__}")


def _present(part):
    """A partition's values without nulls (None, NaN, pd.NA, NaT): nulls are not keys."""
    return part[part.notna()]


def _partition_filter(part, capacity, error_rate, seed):
    built = BloomFilter(capacity, error_rate, seed=seed)
    built.update(_present(part))
    return built


def _union(a, b):
    merged = a.copy()
    merged |= b
    return merged


def _tree_union(filters):
    """The OR of ``filters`` (Delayed) as a balanced binary tree of tasks."""
    import dask

    union = dask.delayed(_union, pure=True)
    while len(filters) > 1:
        paired = [union(filters[i], filters[i + 1]) for i in range(0, len(filters) - 1, 2)]
        if len(filters) % 2:
            paired.append(filters[-1])
        filters = paired
    return filters[0]


def _delayed_filters(series, capacity, error_rate, seed):
    import dask

    build = dask.delayed(_partition_filter, pure=True)
    return [build(part, capacity, error_rate, seed) for part in series.to_delayed()]


def build_filter(data, column=None, capacity=None, error_rate=0.01, *, seed=0) -> BloomFilter:
    """A :class:`bloomkit.BloomFilter` of the non-null values of a Dask column.

    Parameters
    ----------
    data : dask.dataframe.Series or dask.dataframe.DataFrame
        The values, or a frame holding them in ``column``.
    column : str, optional
        The column of a DataFrame.
    capacity : int, optional
        Distinct values the filter is sized for. ``None`` estimates it with
        ``nunique_approx`` (one extra pass) plus 2 % head-room.
    error_rate : float, default 0.01
        Target false-positive rate.
    seed : int, keyword-only, default 0

    Returns
    -------
    BloomFilter
        Byte-equal to ``BloomFilter(capacity, error_rate, seed=seed)`` updated
        with the same values in one process.
    """
    series = _series(data, column)
    if capacity is None:
        estimate = int(series.dropna().nunique_approx().compute())
        capacity = max(1, math.ceil(estimate * _HEADROOM))
    empty = BloomFilter(capacity, error_rate, seed=seed)  # validates the arguments before any task runs
    filters = _delayed_filters(series, empty.capacity, empty.error_rate, seed)
    if not filters:
        return empty
    return _tree_union(filters).compute()


def _contains(part, filter):
    import pandas as pd

    present = part.notna().to_numpy()
    result = pd.Series(False, index=part.index, dtype=bool, name=part.name)
    if present.any():
        result[present] = filter.contains_many(part[present])
    return result


def might_contain(filter, data, column=None):
    """A Dask boolean Series: whether each value is (probably) in ``filter``.

    Like ``Series.isin``: ``ddf[might_contain(f, ddf["url"])]`` keeps the rows
    that may be in the filter, ``ddf[~might_contain(...)]`` the rows certainly
    not in it (an anti-join). Null values are False (never in a filter), as
    ``isin`` answers for them.

    ``filter`` is any bloomkit filter that can be pickled (a keyed filter
    cannot: its secret key is never serialized).
    """
    import dask

    from ._base import FilterBase

    if not isinstance(filter, FilterBase):
        raise TypeError(f"might_contain needs a bloomkit filter, got {type(filter).__name__}")
    if filter.keyed:
        raise ValueError("might_contain needs an unkeyed filter: a secret_key is never shipped to workers")
    series = _series(data, column)
    # One graph key for the filter: every partition task depends on it, so a
    # worker receives and unpickles it once however many partitions it runs.
    shipped = dask.delayed(filter, pure=True, traverse=False)
    return series.map_partitions(_contains, shipped, meta=(series.name, bool))


def _partition_keys(part, subset, reverse):
    """A partition's keys as one batch for the core, exactly as :func:`bloomkit.dedup_mask` reads them."""
    from .dedup import _keys_of

    return _keys_of(part, subset, reverse)[0]


def _partition_seen(part, capacity, error_rate, seed, subset):
    """A filter of every key of one partition (for the partitions after it in walk order)."""
    seen = BloomFilter(capacity, error_rate, seed=seed)
    if len(part):
        seen._update(_partition_keys(part, subset, False))
    return seen


def _first_mask(part, before, capacity, error_rate, seed, subset, keep):
    """The partition's keep-first (or keep-last) mask against the keys ``before`` it in walk order."""
    import numpy as np
    import pandas as pd

    seen = before.copy() if before is not None else BloomFilter(capacity, error_rate, seed=seed)
    if len(part):
        repeated = seen._add_many(_partition_keys(part, subset, keep == "last"))
        if keep == "last":
            repeated = repeated[::-1]
    else:
        repeated = np.zeros(0, dtype=bool)
    return pd.Series(~repeated, index=part.index)


def dedup_mask(data, capacity=None, error_rate=0.001, *, subset=None, keep="first", seed=0):
    """Boolean Dask Series that is True at the first (or last) occurrence of each value or row.

    Like ``~obj.duplicated(subset, keep=keep)`` over the whole collection in
    partition order, with the memory of a Bloom filter instead of a hash
    table of every distinct value, and equal to :func:`bloomkit.dedup_mask`
    of the whole collection computed in one process with the same
    ``capacity``, ``error_rate`` and ``seed`` (same keys, same rows, same
    errors for missing values). A repeat is never marked True; a first
    occurrence is marked False with probability about ``error_rate``.

    Parameters
    ----------
    data : dask.dataframe.Series or dask.dataframe.DataFrame
        A column, or a frame deduplicated by whole rows (or ``subset``).
    capacity : int, optional
        Distinct values the filter is sized for; defaults to the number of
        rows (``len``: one pass over the partitions).
    error_rate : float, default 0.001
    subset : column label or list of labels, keyword-only, optional
        For a DataFrame: the columns that identify a row (default all).
    keep : {"first", "last"}, keyword-only, default "first"
    seed : int, keyword-only, default 0

    Returns
    -------
    dask.dataframe.Series of bool with the input's index and divisions:
    ``ddf[dedup_mask(ddf["url"])]``.
    """
    import dask
    import dask.dataframe as dd

    if keep not in _KEEP:
        raise ValueError(f"keep must be 'first' or 'last', got {keep!r}")
    if not isinstance(data, (dd.Series, dd.DataFrame)):
        raise TypeError(f"expected a dask.dataframe DataFrame or Series, got {type(data).__name__}")
    if subset is not None and not isinstance(data, dd.DataFrame):
        raise TypeError(f"subset= needs a DataFrame, got {type(data).__name__}")
    if capacity is None:
        capacity = max(1, len(data))
    empty = BloomFilter(capacity, error_rate, seed=seed)  # validates the arguments before any task runs
    capacity, error_rate = empty.capacity, empty.error_rate
    parts = data.to_delayed()
    walk = range(len(parts)) if keep == "first" else reversed(range(len(parts)))
    seen_of = dask.delayed(_partition_seen, pure=True)
    union = dask.delayed(_union, pure=True)
    mask_of = dask.delayed(_first_mask, pure=True)
    masks = [None] * len(parts)
    before = None  # the OR of the filters of every partition earlier in walk order
    for i in walk:
        masks[i] = mask_of(parts[i], before, capacity, error_rate, seed, subset, keep)
        mine = seen_of(parts[i], capacity, error_rate, seed, subset)
        before = mine if before is None else union(before, mine)
    return dd.from_delayed(masks, meta=_bool_meta(data), divisions=data.divisions, verify_meta=False)


def _bool_meta(data):
    import pandas as pd

    return pd.Series([], index=data._meta.index, dtype=bool)  # an empty Series of the right dtype and index type
