"""``dedup_mask``: first-occurrence masks for columns and whole rows, in one call into C++."""

from __future__ import annotations

import numpy as np

from . import _batch, _core
from .bloom import BloomFilter

__all__ = ["dedup_mask"]

_KEEP = ("first", "last")
_KINDS = ("bloom", "cuckoo")


def dedup_mask(values, capacity=None, error_rate=0.001, *, subset=None, keep="first", kind="bloom", seed=0):
    """Boolean mask that is True at the first (or last) occurrence of each value or row.

    Like ``~obj.duplicated(subset, keep=keep)``, but in memory bounded by a
    filter (about 1.9 bytes per row at ``error_rate=0.001``) instead of a
    hash table of every distinct value, in one call into C++ over the whole
    input (GIL released).

    Parameters
    ----------
    values : column or table
        A column: pandas Series / Index, NumPy array, pyarrow (chunked)
        array, polars Series, any object with the Arrow PyCapsule interface,
        or a list, by the key rules of ``bloomkit`` (str, bytes, int, float,
        datetime64/timedelta64). A table: pandas / polars DataFrame, pyarrow
        Table or RecordBatch — deduplicated by whole rows (or ``subset``),
        each row's key combining its columns' key digests in the core
        (docs/decisions.md, "Row keys"). Missing values (None, pd.NA, Arrow
        nulls) are refused with the row position; NaN and NaT are values.
    capacity : int, optional
        Distinct values the filter is sized for; defaults to ``len(values)``,
        an upper bound that needs no guess.
    error_rate : float, default 0.001
        Chance that a first occurrence is wrongly marked as a duplicate
        (False). Repeats are never marked True: filters have no false negatives.
    subset : column label or list of labels, keyword-only, optional
        For a table: the columns that identify a row (default all), in the
        given order.
    keep : {"first", "last"}, keyword-only, default "first"
        Which occurrence is marked True. ``"last"`` walks the rows backwards
        (a view for NumPy data; Arrow string columns are copied reversed once).
    kind : {"bloom", "cuckoo"}, keyword-only, default "bloom"
        ``"cuckoo"`` uses a :class:`~bloomkit.CuckooFilter` and its
        test-and-add (``add_new_many``), which stores each distinct key once
        however often it repeats.
    seed : int, keyword-only, default 0
        Hash seed.

    Returns
    -------
    pandas.Series of bool aligned to the input's index for a pandas Series or
    DataFrame; otherwise a NumPy bool array. Index a frame with it: ``df[mask]``.

    Examples
    --------
    >>> dedup_mask(["a", "b", "a", "c", "b"]).tolist()
    [True, True, False, True, False]
    >>> dedup_mask(["a", "b", "a", "c", "b"], keep="last").tolist()
    [False, False, True, True, True]
    """
    if keep not in _KEEP:
        raise ValueError(f"keep must be 'first' or 'last', got {keep!r}")
    if kind not in _KINDS:
        raise ValueError(f"kind must be 'bloom' or 'cuckoo', got {kind!r}")
    keys, count = _keys_of(values, subset, reverse=keep == "last")
    if count == 0:
        mask = np.zeros(0, dtype=bool)
    else:
        filter_ = _new_filter(kind, count if capacity is None else capacity, error_rate, seed)
        seen = filter_._first_seen_many(keys)
        filter_._check_capacity(2)
        mask = ~seen
        if keep == "last":
            mask = np.ascontiguousarray(mask[::-1])
    return _aligned(values, mask)


def _new_filter(kind, capacity, error_rate, seed):
    if kind == "cuckoo":
        from .cuckoo import CuckooFilter

        return CuckooFilter(capacity, error_rate, seed=seed)
    return BloomFilter(capacity, error_rate, seed=seed)


def _keys_of(values, subset, reverse):
    """(one batch for the core, row count): a column's keys, or a ``RowBatch`` of a table's key columns."""
    names = _batch.frame_columns(values)
    if names is None and _batch.is_foreign_arrow(values):
        # Anything else with the Arrow PyCapsule interface (a DuckDB relation,
        # nanoarrow, ...), imported once; a struct stream is a table.
        values = _batch.import_arrow(values, allow_struct=True)
        names = _batch.frame_columns(values)
    if names is None:
        if subset is not None:
            raise TypeError(f"subset= needs a DataFrame or table, got {type(values).__name__}")
        batch = _batch.single_batch(_reversed(values) if reverse else values)
        return batch, len(batch)
    chosen = _chosen_columns(values, names, subset)
    columns = [_row_key_column(_column(values, name), name, reverse) for name in chosen]
    rows = _row_count(values)
    if len(columns) == 1:
        # One key column: its own keys mark the same rows, without combining.
        return columns[0], rows
    return _core.RowBatch(columns, [repr(name) for name in chosen]), rows


def _chosen_columns(table, names, subset):
    # pandas labels may be non-strings; polars and pyarrow names are the strings.
    labels = list(table.columns) if (type(table).__module__ or "").startswith("pandas") else names
    if subset is None:
        chosen = labels
    elif isinstance(subset, (list, tuple)):
        chosen = list(subset)
    else:
        chosen = [subset]
    if not chosen:
        raise ValueError("subset= names no column: give at least one")
    missing = [name for name in chosen if name not in labels]
    if missing:
        raise KeyError(f"subset= names {missing!r}, not columns of the table (columns: {names!r})")
    return chosen


def _column(table, name):
    module = type(table).__module__ or ""
    if module.startswith("pandas"):
        # .iloc by position: a label may be repeated in pandas.
        return table.iloc[:, list(table.columns).index(name)]
    if module.startswith("pyarrow"):
        return table.column(name)
    return table[name]  # polars and other tables


def _row_count(table) -> int:
    shape = getattr(table, "shape", None)
    return int(shape[0]) if shape is not None else int(table.num_rows)


def _row_key_column(column, name, reverse):
    """A column as one batch for a row key. Booleans are allowed here (as 0/1), unlike plain keys:
    a frame's flag column is part of what makes a row."""
    try:
        batch = _batch.single_batch(_bools_as_uint8(_reversed(column) if reverse else column))
    except (TypeError, ValueError) as error:
        raise type(error)(f"column {name!r}: {error}") from None
    if isinstance(batch, np.ndarray) and batch.dtype == bool:
        batch = batch.view(np.uint8)
    return batch


def _bools_as_uint8(column):
    """Arrow and polars boolean columns as 0/1 (NumPy ones are viewed after conversion)."""
    module = type(column).__module__ or ""
    if module.startswith("pyarrow"):
        import pyarrow as pa

        if pa.types.is_boolean(column.type):
            return column.cast(pa.uint8())
    elif module.startswith("polars") and str(column.dtype) == "Boolean":
        import polars as pl

        return column.cast(pl.UInt8)
    return column


def _reversed(values):
    module = type(values).__module__ or ""
    if isinstance(values, np.ndarray):
        return values[::-1]
    if module.startswith("pandas"):
        return values.iloc[::-1] if hasattr(values, "iloc") else values[::-1]
    if module.startswith("polars"):
        return values.reverse()
    if module.startswith("pyarrow") or hasattr(values, "__arrow_c_stream__") or hasattr(values, "__arrow_c_array__"):
        return _batch.reversed_arrow(values if module.startswith("pyarrow") else _batch.import_arrow(values))
    return list(values)[::-1]


def _aligned(values, mask):
    module = type(values).__module__ or ""
    if module.startswith("pandas"):
        import pandas as pd

        if isinstance(values, (pd.Series, pd.DataFrame)):
            return pd.Series(mask, index=values.index, copy=False)
    return mask
