"""The contract every filter type keeps (docs/DESIGN.md), run on every row of support.FILTER_TYPES.

No false negatives; batch == scalar for every key kind; bad input raises the
right error and leaves the filter unchanged; byte-exact round trips through
bytes, files, pickle and copies; no lost keys under threads; equality; repr;
positional-only single-key methods. What only one type does lives in its own
tests/test_<type>.py.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from support import FILTER_TYPES, disjoint_random_u64, fpr_upper_bound, random_strings, run_threads, url_keys

ROWS = [pytest.param(row, id=row.name) for row in FILTER_TYPES]
REMOVERS = [pytest.param(row, id=row.name) for row in FILTER_TYPES if row.removes]


def filled(row, keys=None, capacity=5000, error_rate=0.01, seed=3):
    f = row.make(capacity, error_rate, seed)
    f.update(keys if keys is not None else ["a", b"b", 3, -4] + url_keys(0, 1000))
    return f


# ---------------------------------------------------------------- membership


@pytest.mark.parametrize("row", ROWS)
def test_no_false_negatives_and_the_requested_false_positive_rate(row):
    present, absent = disjoint_random_u64(20_000, 100_000, seed=11)
    strings = random_strings(10_000, seed=12)
    f = row.make(30_000, 0.01, 5)
    f.update(present)
    f.update(strings)
    assert f.contains_many(present).all()
    assert f.contains_many(strings).all()
    assert all(key in f for key in strings[:2000])
    assert all(f.contains(int(key)) for key in present[:2000])
    measured = f.contains_many(absent).mean()
    assert measured <= fpr_upper_bound(0.01, len(absent))


@pytest.mark.parametrize("row", ROWS)
def test_an_empty_filter_contains_nothing(row):
    f = row.make(1000, 0.01, 0)
    assert not f.contains_many(url_keys(0, 5000)).any()
    assert "a" not in f and len(f) == 0


# ------------------------------------------------------- batch == scalar


def key_kinds():
    """(name, batch, the same keys as the scalars a Python loop would pass), with repeats."""
    words = ["alpha", "beta", "gamma", "alpha", "é", "", "beta", "ünïcode-" * 3]
    ints = [0, 1, -1, 2**63, 2**64 - 1, -(2**63), 12345, 1, 0]
    u64 = np.array([5, 2**63 + 7, 5, 0, 2**64 - 1], dtype=np.uint64)
    i64 = np.array([-5, 7, -5, 2**62], dtype=np.int64)
    i32 = np.array([-5, 7, -5, 9], dtype=np.int32)
    fixed = np.array([b"ab", b"abc", b"ab", b"zz"], dtype="S4")
    rows = np.array([[0, 1, 2, 0], [0, 1, 2, 0], [255, 0, 0, 0], [7, 7, 7, 7]], dtype=np.uint8)
    unicode = np.array(["ab", "é", "ab", "naïve"], dtype="U6")
    objects = np.array(["x", b"y", 3, "x"], dtype=object)
    kinds = [
        ("list[str]", list(words), words),
        ("list[bytes]", [w.encode() for w in words], [w.encode() for w in words]),
        ("list[int]", list(ints), ints),
        ("tuple", tuple(words), words),
        ("generator", (w for w in words), words),
        ("uint64 array", u64, list(u64)),
        ("int64 array", i64, list(i64)),
        ("strided int32 array", np.repeat(i32, 2)[::2], list(i32)),
        ("S array", fixed, list(fixed)),
        ("U array", unicode, list(unicode)),
        ("V array (binary, NULs kept)", rows.view("V4").ravel(), [row.tobytes() for row in rows]),
        ("2-D uint8 array (one key per row)", rows, [row.tobytes() for row in rows]),
        ("object array", objects, list(objects)),
    ]
    try:
        import pyarrow as pa
    except ImportError:
        pass
    else:
        kinds.append(("pyarrow string", pa.array(words), words))
        kinds.append(("pyarrow int64", pa.array([-5, 7, -5], pa.int64()), [-5, 7, -5]))
    try:
        import pandas as pd
    except ImportError:
        pass
    else:
        kinds.append(("pandas object Series", pd.Series(words), words))
    return kinds


@pytest.mark.parametrize("row", ROWS)
def test_batch_equals_scalar_for_every_key_kind(row):
    names = [name for name, _, _ in key_kinds()]
    assert "pyarrow string" in names and "pandas object Series" in names  # CI has both
    for name, batch, scalars in key_kinds():
        one = row.make(1000, 0.01, 9)
        expected = [one.add(key) for key in scalars]
        many = row.make(1000, 0.01, 9)
        assert many.add_many(batch).tolist() == expected, name
        assert many.to_bytes() == one.to_bytes(), name
        fresh = {n: b for n, b, _ in key_kinds()}[name]  # generators are consumed by add_many
        assert many.contains_many(fresh).tolist() == [one.contains(key) for key in scalars], name


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(
        st.one_of(
            st.text(max_size=30).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
            st.binary(max_size=30),
            st.integers(min_value=-(2**63), max_value=2**64 - 1),
        ),
        max_size=60,
    ),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_batch_equals_sequential_scalar_model_for_any_keys(batch, seed):
    for row in FILTER_TYPES:
        scalar = row.make(200, 0.05, seed)
        expected = [scalar.add(k) for k in batch]
        batched = row.make(200, 0.05, seed)
        assert batched.add_many(batch).tolist() == expected, row.name
        assert batched == scalar, row.name
        assert batched.contains_many(batch).all(), row.name
        # A key already seen earlier in the batch always reports True.
        seen = set()
        for key, was_present in zip(map(bloomkit.canonical_bytes, batch), expected):
            assert was_present or key not in seen, row.name
            seen.add(key)
        assert row.cls.from_bytes(batched.to_bytes()).to_bytes() == batched.to_bytes()


@pytest.mark.parametrize("row", ROWS)
def test_update_equals_add_many(row):
    keys = url_keys(0, 3000) + url_keys(0, 300)
    a, b = row.make(4000, 0.01, 1), row.make(4000, 0.01, 1)
    a.update(keys)
    b.add_many(keys)
    assert a.to_bytes() == b.to_bytes()


# ------------------------------------------------------- bad input


BAD_INPUT = [
    (lambda f: f.add(1j), TypeError, "key has unsupported type 'complex'"),
    (lambda f: f.add(None), TypeError, "key has unsupported type 'NoneType'"),
    (lambda f: f.add(True), TypeError, "key has unsupported type 'bool'"),
    (lambda f: f.add(2**64), ValueError, r"key is an int outside \[-2\*\*63, 2\*\*64\)"),
    (lambda f: f.add(-(2**63) - 1), ValueError, r"key is an int outside \[-2\*\*63, 2\*\*64\)"),
    (lambda f: f.add("\ud800"), ValueError, "surrogate"),
    (lambda f: f.contains(object()), TypeError, "key has unsupported type 'object'"),
    (lambda f: 1j in f, TypeError, "key has unsupported type 'complex'"),
    (lambda f: f.add_many(["a", b"b", 3, 4j]), TypeError, "key at index 3 has unsupported type 'complex'"),
    (lambda f: f.update(["new-1", "new-2", None]), TypeError, "key at index 2 has unsupported type 'NoneType'"),
    (
        lambda f: f.add_many(np.zeros((3, 1), np.int64)),
        ValueError,
        r"key arrays must be 1-D \(or 2-D uint8, one binary key per row\), got a 2-D array",
    ),
    (lambda f: f.add_many(np.array([1j])), TypeError, "unsupported key array dtype 'complex128'"),
    (lambda f: f.update(b"bytes"), TypeError, "expected an iterable of keys, got a single 'bytes'"),
    (lambda f: f.add_many("abc"), TypeError, "expected an iterable of keys, got a single 'str'"),
    (lambda f: f.add_many(5), TypeError, "expected an iterable of keys, got 'int'"),
    (lambda f: f.contains_many([1, None]), TypeError, "key at index 1 has unsupported type 'NoneType'"),
]

REMOVAL_BAD_INPUT = [
    (lambda f: f.remove(None), TypeError, "unsupported type 'NoneType'"),
    (lambda f: f.discard(1j), TypeError, "unsupported type 'complex'"),
    (lambda f: f.discard(2**64), ValueError, r"int outside \[-2\*\*63, 2\*\*64\)"),
    (lambda f: f.remove_many(["a", True]), TypeError, "key at index 1 has unsupported type 'bool'"),
    (lambda f: f.count([1]), TypeError, "unsupported type 'list'"),
    (lambda f: f.remove("never added"), KeyError, "never added"),
    (lambda f: f.remove_many(["a", None]), TypeError, "key at index 1 has unsupported type 'NoneType'"),
    (lambda f: f.remove_many(["a", 3, "never added"]), KeyError, "2"),
    (lambda f: f.remove_many(["a", "a"]), KeyError, "1"),
    (lambda f: f.remove_many("a"), TypeError, "expected an iterable of keys, got a single 'str'"),
    (lambda f: f.remove_many(np.zeros(3, dtype=complex)), TypeError, "unsupported key array dtype 'complex128'"),
]


@pytest.mark.parametrize("call, error, message", BAD_INPUT)
@pytest.mark.parametrize("row", ROWS)
def test_bad_input_raises_and_changes_nothing(row, call, error, message):
    f = filled(row)
    before = f.to_bytes()
    with pytest.raises(error, match=message):
        call(f)
    assert f.to_bytes() == before


@pytest.mark.parametrize("call, error, message", REMOVAL_BAD_INPUT)
@pytest.mark.parametrize("row", REMOVERS)
def test_bad_removals_raise_and_change_nothing(row, call, error, message):
    f = filled(row)
    before = f.to_bytes()
    with pytest.raises(error, match=message):
        call(f)
    assert f.to_bytes() == before


@pytest.mark.parametrize("row", REMOVERS)
def test_removal_undoes_insertion(row):
    keys = url_keys(0, 2000)
    f = row.make(4000, 0.01, 2)
    f.update(keys)
    f.add("twice")
    f.add("twice")
    assert f.count("twice") >= 2
    f.remove("twice")
    assert "twice" in f
    assert f.discard("twice") is True
    f.remove_many(keys)
    assert f == row.make(4000, 0.01, 2)
    assert f.discard("twice") is False


# ------------------------------------------------------- round trips


@pytest.mark.parametrize("row", ROWS)
def test_round_trips_are_byte_exact(row, tmp_path):
    f = filled(row, seed=12345)
    blob = f.to_bytes()
    g = row.cls.from_bytes(blob)
    assert type(g) is row.cls and g == f and g.to_bytes() == blob
    assert row.cls.from_bytes(bytearray(blob)) == f and row.cls.from_bytes(memoryview(blob)) == f
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(f, protocol)).to_bytes() == blob
    path = tmp_path / f"{row.name}.bkf"
    f.save(path)
    assert path.read_bytes() == blob
    assert row.cls.load(path).to_bytes() == blob
    assert row.cls.load(str(path)) == f
    for loaded in (bloomkit.load(path), bloomkit.load(blob)):
        assert type(loaded) is row.cls and loaded == f
    # A loaded filter behaves as the original from then on.
    more = url_keys(10_000, 3000)
    assert g.add_many(more).tolist() == f.add_many(more).tolist()
    assert g.to_bytes() == f.to_bytes()


@pytest.mark.parametrize("row", ROWS)
def test_copies_are_equal_and_independent(row):
    f = filled(row)
    blob = f.to_bytes()
    for duplicate in (f.copy(), copy.copy(f), copy.deepcopy(f)):
        assert type(duplicate) is row.cls and duplicate == f and duplicate.to_bytes() == blob
        duplicate.update(url_keys(50_000, 500))
        assert duplicate != f
        assert f.to_bytes() == blob


@pytest.mark.parametrize("row", ROWS)
def test_another_types_frame_is_refused(row):
    for other in FILTER_TYPES:
        if other is not row:
            with pytest.raises(ValueError, match=f"data holds a {other.cls.__name__}, not a {row.cls.__name__}"):
                row.cls.from_bytes(filled(other).to_bytes())


@pytest.mark.parametrize("row", ROWS)
def test_clear_gives_an_empty_filter_of_the_same_parameters(row):
    f = filled(row)
    f.clear()
    assert f == row.make(5000, 0.01, 3)
    assert len(f) == 0 and "a" not in f
    assert f.add("a") is False


# ------------------------------------------------------- threads


@pytest.mark.parametrize("row", ROWS)
def test_concurrent_batches_and_single_keys_lose_nothing(row):
    chunks = [np.arange(i * 40_000, (i + 1) * 40_000, dtype=np.uint64) for i in range(4)]
    scalar_keys = [f"s{i}" for i in range(5000)]
    f = row.make(200_000, 0.01, 4)

    def batch_writer(chunk):
        return lambda: [f.update(chunk[j : j + 2000]) for j in range(0, len(chunk), 2000)]

    def scalar_writer():
        for key in scalar_keys:
            f.add(key)

    def reader():
        for _ in range(20):
            f.contains_many(chunks[0])
            f.to_bytes()
            repr(f)

    run_threads([batch_writer(c) for c in chunks] + [scalar_writer, reader])
    for chunk in chunks:
        assert f.contains_many(chunk).all()
    assert f.contains_many(scalar_keys).all()
    total = sum(len(c) for c in chunks) + len(scalar_keys)
    if row.exact_len:
        assert len(f) == total
    if row.order_free:
        reference = row.make(200_000, 0.01, 4)
        for chunk in chunks:
            reference.update(chunk)
        reference.update(scalar_keys)
        assert f == reference


@pytest.mark.parametrize("row", REMOVERS)
def test_concurrent_removals_lose_nothing_else(row):
    keep = np.arange(0, 20_000, dtype=np.uint64)
    drop = [np.arange(100_000 + i * 10_000, 100_000 + (i + 1) * 10_000, dtype=np.uint64) for i in range(3)]
    f = row.make(100_000, 0.01, 6)
    f.update(keep)
    for chunk in drop:
        f.update(chunk)
    reference = row.make(100_000, 0.01, 6)
    reference.update(keep)

    def remover(chunk):
        return lambda: [f.remove_many(chunk[j : j + 1000]) for j in range(0, len(chunk), 1000)]

    run_threads([remover(c) for c in drop] + [lambda: [f.contains_many(keep) for _ in range(10)]])
    assert f.contains_many(keep).all()
    if row.exact_len:
        assert len(f) == len(keep)
    if row.order_free:
        assert f == reference


# ------------------------------------------------------- equality, display, signatures


@pytest.mark.parametrize("row", ROWS)
def test_equality_is_type_parameters_and_contents(row):
    f, g = filled(row), filled(row)
    assert f == g and not (f != g)
    g.add("one more key")
    assert f != g
    assert filled(row, seed=4) != f  # same keys, another seed
    assert f != filled(row, capacity=6000)  # another sizing request
    assert (f == f.to_bytes()) is False and f != "filter"
    for other in FILTER_TYPES:
        if other is not row:
            assert f != filled(other)
    with pytest.raises(TypeError, match="unhashable"):
        hash(f)


@pytest.mark.parametrize("row", ROWS)
def test_repr_is_one_line_and_html_is_a_table(row):
    f = filled(row, seed=77)
    text = repr(f)
    assert text.startswith(f"<{row.cls.__name__} ") and text.endswith(">") and "\n" not in text
    assert "seed=77" in text and "error_rate=0.01" in text and "nbytes=" in text
    html = f._repr_html_()
    assert html.startswith("<table") and f"<b>{row.cls.__name__}</b>" in html
    labels = re.findall(r"<th style='text-align:left'>([^<]+)</th>", html)
    assert len(labels) >= 8 and all(f" {label}=" in text for label in labels)  # one row per repr field


@pytest.mark.parametrize("row", ROWS)
def test_single_key_methods_are_positional_only(row):
    methods = ["add", "contains"] + (["remove", "discard", "count"] if row.removes else [])
    for name in methods:
        assert str(inspect.signature(getattr(row.cls, name))) == "(self, key, /)", name
        with pytest.raises(TypeError):
            getattr(row.make(10, 0.01, 0), name)(key="a")


def test_every_exported_filter_type_has_a_row():
    exported = {
        obj for name in bloomkit.__all__ if isinstance(obj := getattr(bloomkit, name), type) and name.endswith("Filter")
    }
    # BinaryFuseFilter is frozen (built from every key at once): it cannot run
    # the insert-based rows until the rows state capabilities; test_binary_fuse.py.
    assert exported - {bloomkit.BinaryFuseFilter} == {row.cls for row in FILTER_TYPES}
