"""``dedup_mask``: first-occurrence masks for pandas and NumPy, in one call into C++."""

from __future__ import annotations

import numpy as np

from .bloom import BloomFilter

__all__ = ["dedup_mask"]


def _as_keys(values):
    """One key per row. A DataFrame's rows become 64-bit row hashes (see ``dedup_mask``)."""
    module = type(values).__module__ or ""
    if module.startswith("pandas") and hasattr(values, "columns"):
        import pandas as pd

        return pd.util.hash_pandas_object(values, index=False).to_numpy()
    return values


def dedup_mask(values, capacity=None, error_rate=0.001, *, seed=0) -> np.ndarray:
    """Boolean mask that is True at the first occurrence of each value.

    Like ``~series.duplicated()``, but in memory bounded by a Bloom filter
    (about 1.8 bytes per row at ``error_rate=0.001``) instead of a hash
    table of every distinct value, and in one call into C++ over the whole
    input (``BloomFilter.add_many``, GIL released).

    Parameters
    ----------
    values : pandas Series / Index / DataFrame, NumPy array, pyarrow array, list
        The keys, by the key rules of ``bloomkit`` (str, bytes, int; NumPy
        and Arrow string/integer arrays; pandas ``object``, ``string``,
        ``string[pyarrow]`` and integer dtypes). Missing values (None, NaN,
        NA) are rejected with ``TypeError``/``ValueError``. A DataFrame is
        deduplicated by whole rows, each row hashed to 64 bits with
        ``pandas.util.hash_pandas_object(df, index=False)`` (two distinct
        rows collide with probability ~2**-64).
    capacity : int, optional
        Distinct values the filter is sized for; defaults to ``len(values)``,
        an upper bound that needs no guess.
    error_rate : float, default 0.001
        Chance that a first occurrence is wrongly marked as a duplicate
        (False). Repeats are never marked True: a Bloom filter has no false
        negatives.
    seed : int, keyword-only, default 0
        Hash seed.

    Returns
    -------
    numpy.ndarray of bool
        ``mask[i]`` is True when ``values[i]`` was (probably) not seen at
        any earlier position. Index a DataFrame with it: ``df[mask]``.

    Examples
    --------
    >>> dedup_mask(["a", "b", "a", "c", "b"]).tolist()
    [True, True, False, True, False]
    """
    keys = _as_keys(values)
    count = len(keys)
    if count == 0:
        return np.zeros(0, dtype=bool)
    filter_ = BloomFilter(count if capacity is None else capacity, error_rate, seed=seed)
    return ~filter_.add_many(keys)
