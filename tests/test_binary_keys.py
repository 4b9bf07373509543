"""Fixed-width binary keys in batches are lossless (issue 10, defect 8).

NumPy 'S' items drop trailing NUL bytes (numpy.bytes_ semantics, which the
key follows so text in S arrays matches the same Python bytes). Binary data
goes through a 'V<n>' view or a 2-D uint8 array instead, where every byte
counts; an 'S' array that visibly holds binary data gets a warning saying so.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

import bloomkit
from support import FILTER_TYPES


def digests(count: int) -> list:
    return [hashlib.md5(str(i).encode()).digest() for i in range(count)]


@pytest.mark.parametrize("case", FILTER_TYPES, ids=lambda case: case.name)
def test_md5_digests_as_v16_and_uint8_rows_are_all_found_as_bytes(case):
    keys = digests(100_000)
    trailing_nul = sum(k.endswith(b"\0") for k in keys)
    assert trailing_nul > 300  # ~1/256 of them: the keys 'S16' loses
    rows = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 16)
    for batch in (rows.view("V16").ravel(), rows):
        f = case.row.build(batch, 200_000, 0.001)
        assert all(k in f for k in keys)  # no false negatives, NULs included
        assert f.contains_many(keys).all() and f.contains_many(batch).all()
        assert f.contains_many([k[:-1] for k in keys if k.endswith(b"\0")]).mean() < 0.01


def test_rows_and_views_hash_like_bytes():
    keys = [b"\0\0\0\0", b"ab\0\0", b"\0\0ab"]
    rows = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(3, 4)
    expected = [bloomkit.hash128(k) for k in keys]
    f = bloomkit.BloomFilter(100)
    f.update(rows.view("V4").ravel())
    assert [k in f for k in keys] == [True, True, True]
    assert not f.contains_many([b"", b"ab"]).any()
    assert expected[1] != bloomkit.hash128(b"ab")


def test_s_array_with_binary_data_warns_and_points_to_the_lossless_forms():
    array = np.array(digests(1000), dtype="S16")
    f = bloomkit.BloomFilter(10_000)
    with pytest.warns(
        UserWarning,
        match=r"holds binary data .* NumPy 'S' items drop trailing NUL bytes.*view\('V16'\) or as a 2-D uint8 array",
    ):
        f.update(array)


def test_s_array_of_text_does_not_warn_and_keeps_numpy_semantics():
    array = np.array([b"ab", b"abc", b""], dtype="S8")
    f = bloomkit.BloomFilter(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.update(array)
    assert b"ab" in f and b"abc" in f and b"" in f
    assert b"ab\0\0\0\0\0\0" not in f


def test_bad_binary_batches_are_refused():
    f = bloomkit.BloomFilter(100)
    with pytest.raises(ValueError, match="needs contiguous rows"):
        f.update(np.zeros((4, 8), dtype=np.uint8)[:, ::2])
    with pytest.raises(
        ValueError,
        match=r"key arrays must be 1-D \(or 2-D uint8, one binary key per row\), got a 2-D array of dtype 'int32'",
    ):
        f.update(np.zeros((4, 8), dtype=np.int32))
    with pytest.raises(TypeError, match="structured dtype"):
        f.update(np.zeros(3, dtype=[("a", "u1"), ("b", "u2")]))
    assert f.to_bytes() == bloomkit.BloomFilter(100).to_bytes()
