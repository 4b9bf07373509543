"""The contract every filter type keeps (docs/DESIGN.md), run on every registered type and variant.

The cases are support.FILTER_CASES: every row of bloomkit/_types.py in every
variant (the three Bloom layouts of the Bloom and scalable rows). What a
test expects comes from the row's capability flags, never from its class:
a frozen row refuses inserts with a TypeError naming ``build``, a removable
row removes all-or-nothing, an exact-count row counts exactly, an
order-free row gives the same bytes in any order, a framed row's bytes are
a checksummed frame that refuses every corruption.

No false negatives; batch == scalar for every key kind; bad input raises the
right error and leaves the filter unchanged; byte-exact round trips through
bytes, files, pickle and copies; no lost keys under threads; equality; repr;
positional-only single-key methods. What only one type does lives in its own
tests/test_<type>.py.
"""

from __future__ import annotations

import ast
import collections
import copy
import inspect
import io
import pickle
import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bloomkit
from support import (
    FILTER_CASES,
    FILTER_TYPES,
    disjoint_random_u64,
    fpr_upper_bound,
    fuzz_corruptions,
    random_strings,
    run_threads,
    url_keys,
)

ROWS = [pytest.param(row, id=row.name) for row in FILTER_CASES]
MUTABLE = [pytest.param(row, id=row.name) for row in FILTER_CASES if row.row.mutable]
REMOVERS = [pytest.param(row, id=row.name) for row in FILTER_CASES if row.row.removable]
FRAMED = [pytest.param(row, id=row.name) for row in FILTER_CASES if row.row.framed]


def filled(row, keys=None, capacity=5000, error_rate=0.01, seed=3):
    return row.build(keys if keys is not None else ["a", b"b", 3, -4] + url_keys(0, 1000), capacity, error_rate, seed)


# ---------------------------------------------------------------- membership


@pytest.mark.parametrize("row", ROWS)
def test_no_false_negatives_and_the_requested_false_positive_rate(row):
    present, absent = disjoint_random_u64(20_000, 100_000, seed=11)
    strings = random_strings(10_000, seed=12)
    f = row.build(np.concatenate([present.astype(object), np.array(strings, dtype=object)]), 30_000, 0.01, 5)
    assert f.contains_many(present).all()
    assert f.contains_many(strings).all()
    assert all(key in f for key in strings[:2000])
    assert all(f.contains(int(key)) for key in present[:2000])
    measured = f.contains_many(absent).mean()
    assert measured <= fpr_upper_bound(0.01, len(absent))


@pytest.mark.parametrize("row", MUTABLE)
def test_add_many_of_distinct_keys_reports_present_below_the_error_rate(row):
    # add_many's "already present" for a distinct key is a false positive of
    # the filter as it fills, so over a fill to capacity it stays below the
    # final rate; an exact-count row counts those keys too (they are stored).
    keys = random_strings(50_000, seed=1)
    f = row.make(50_000, 0.001, 0)
    assert f.add_many(keys).mean() < 0.001
    assert f.contains_many(keys).all()
    assert all(key in f for key in keys[:1000])
    if row.row.exact_count:
        assert len(f) == 50_000


@pytest.mark.parametrize("row", ROWS)
def test_an_empty_filter_contains_nothing(row):
    f = row.build([], 1000, 0.01, 0)
    assert not f.contains_many(url_keys(0, 5000)).any()
    assert not f.contains_many(np.arange(100_000, dtype=np.uint64)).any()
    assert "a" not in f and len(f) == 0


@pytest.mark.parametrize("row", ROWS)
def test_inserts_are_allowed_exactly_when_the_row_is_mutable(row):
    f = filled(row)
    before = f.to_bytes()
    inserts = [lambda: f.add("new"), lambda: f.add_many(["new"]), lambda: f.update(["new"])]
    if row.row.mutable:
        for insert in inserts:
            insert()
        assert "new" in f and f.to_bytes() != before
        return
    for insert in inserts:
        with pytest.raises(TypeError, match=r"build\("):
            insert()
    assert f.to_bytes() == before


@pytest.mark.parametrize("row", ROWS)
def test_a_key_is_the_same_key_in_every_form(row):
    # An int is its 8-byte little-endian two's complement whatever its
    # Python or NumPy type; a str is its UTF-8 bytes (docs/DESIGN.md, keys).
    f = row.build([5, "é", 2**64 - 1], 1000, 0.01, 1)
    assert all(form in f for form in (5, np.uint64(5), np.int8(5), np.int32(5), "é", "é".encode(), -1))
    assert f.contains_many(np.array([5], dtype=np.int32)).all() and f.contains_many([b"\xc3\xa9"]).all()


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
        chunked = pa.chunked_array([words[:3], words[3:]], type=pa.large_string())
        kinds.append(("pyarrow chunked large_string", chunked, words))
    try:
        import pandas as pd
    except ImportError:
        pass
    else:
        kinds.append(("pandas object Series", pd.Series(words), words))
    return kinds


@pytest.mark.parametrize("row", ROWS)
def test_batch_lookups_equal_single_lookups_for_every_key_kind(row):
    kinds = key_kinds()
    f = row.build([key for _, _, scalars in kinds for key in scalars[::2]], 1000, 0.01, 9)
    for name, batch, scalars in kinds:
        assert f.contains_many(batch).tolist() == [f.contains(key) for key in scalars], name


@pytest.mark.parametrize("row", MUTABLE)
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


def key_identity(row):
    """What makes two keys the same key for a row's hashing (docs/DESIGN.md, keys)."""
    if row.row.hashing in ("spark", "orc"):
        return lambda key: (isinstance(key, int), bloomkit.canonical_bytes(key))
    return bloomkit.canonical_bytes


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
    # A cuckoo filter stores a key at most 2 * bucket_size = 8 times (a
    # multiset with bounded copies; TooManyCopiesError is tests/test_cuckoo.py's).
    assume(max(collections.Counter(map(bloomkit.canonical_bytes, batch)).values(), default=0) <= 8)
    for row in (case for case in FILTER_CASES if case.row.mutable):
        scalar = row.make(200, 0.05, seed)
        expected = [scalar.add(k) for k in batch]
        batched = row.make(200, 0.05, seed)
        assert batched.add_many(batch).tolist() == expected, row.name
        assert batched == scalar, row.name
        assert batched.contains_many(batch).all(), row.name
        # A key already seen earlier in the batch always reports True (with
        # Spark's hashing an int and its 8 bytes are two keys).
        seen = set()
        for key, was_present in zip(map(key_identity(row), batch), expected):
            assert was_present or key not in seen, row.name
            seen.add(key)
        assert row.cls.from_bytes(batched.to_bytes()).to_bytes() == batched.to_bytes()


@pytest.mark.parametrize("row", MUTABLE)
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
@pytest.mark.parametrize("row", MUTABLE)
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
    # A copy and a reloaded filter continue exactly like the original.
    copied, reloaded = f.copy(), row.cls.from_bytes(f.to_bytes())
    for g in (f, copied, reloaded):
        g.remove_many(keys)
    assert f == copied == reloaded == row.make(4000, 0.01, 2)
    assert f.discard("twice") is False


@pytest.mark.parametrize("row", REMOVERS)
def test_an_absent_key_is_not_removed_and_a_present_one_loses_one_copy(row):
    f = row.make(100, 0.01, 0)
    f.update(["a", "b", "b"])
    before = f.to_bytes()
    with pytest.raises(KeyError, match=r"^'zzz'$"):
        f.remove("zzz")
    with pytest.raises(KeyError, match=r"^b'zzz'$"):
        f.remove(b"zzz")
    assert f.to_bytes() == before
    assert f.discard("zzz") is False and f.to_bytes() == before
    assert f.discard("b") is True and f.count("b") == 1
    f.remove("b")
    assert f.count("b") == 0 and "b" not in f
    if row.row.exact_count:
        assert len(f) == 1
    f.remove("a")
    assert len(f) == 0 and f == row.make(100, 0.01, 0)


@pytest.mark.parametrize("row", REMOVERS)
def test_remove_many_is_all_or_nothing_and_takes_one_copy_per_occurrence(row):
    f = row.make(1000, 0.01, 0)
    f.update([f"k{i}" for i in range(500)])
    f.add("k0")
    before = f.to_bytes()
    with pytest.raises(KeyError, match=r"^'key at index 2 is not in the filter; nothing was removed'$"):
        f.remove_many(["k1", "k2", "absent", "k3"])
    # A key removed twice needs two stored copies.
    with pytest.raises(KeyError, match=r"^'key at index 2 is not in the filter; nothing was removed'$"):
        f.remove_many(["k5", "k0", "k5"])
    assert f.to_bytes() == before
    f.remove_many(["k0", "k0", "k1"])
    assert (f.count("k0"), f.count("k1")) == (0, 0)
    if row.row.exact_count:
        assert len(f) == 498
    after = f.to_bytes()
    f.remove_many([])
    assert f.to_bytes() == after


@pytest.mark.parametrize("row", REMOVERS)
def test_remove_many_error_index_counts_across_arrow_chunks(row):
    pa = pytest.importorskip("pyarrow")
    f = row.make(1000, 0.01, 0)
    f.update([f"k{i}" for i in range(300)])
    before = f.to_bytes()
    chunks = pa.chunked_array([[f"k{i}" for i in range(200)], ["k200", "missing"]])
    with pytest.raises(KeyError, match=r"^'key at index 201 is not in the filter; nothing was removed'$"):
        f.remove_many(chunks)
    assert f.to_bytes() == before


# ------------------------------------------------------- round trips


@pytest.mark.parametrize("row", ROWS)
def test_an_empty_filter_round_trips(row):
    f = row.build([], 1000, 0.01, 7)
    blob = f.to_bytes()
    g = row.cls.from_bytes(blob)
    assert g == f and g.to_bytes() == blob and pickle.loads(pickle.dumps(f)) == f


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
    if row.row.framed:
        for loaded in (bloomkit.load(path), bloomkit.load(blob)):
            assert type(loaded) is row.cls and loaded == f
    else:  # another system's bytes: no bloomkit frame to dispatch on
        for source in (path, blob):
            with pytest.raises(ValueError, match="not a bloomkit filter"):
                bloomkit.load(source)
    with pytest.raises(TypeError, match="expected a bytes-like object, got 'int'"):
        row.cls.from_bytes(5)
    # A loaded filter behaves as the original from then on.
    more = url_keys(10_000, 3000)
    if row.row.mutable:
        assert g.add_many(more).tolist() == f.add_many(more).tolist()
        assert g.to_bytes() == f.to_bytes()
    assert g.contains_many(more).tolist() == f.contains_many(more).tolist()


MAPPABLE = [pytest.param(row, id=row.name) for row in FILTER_CASES if row.row.mappable]


@pytest.mark.parametrize("row", MAPPABLE)
def test_a_mappable_row_opens_its_saved_file_read_only_in_place(row, tmp_path):
    f = filled(row, seed=77)
    path = tmp_path / f"{row.name}.bkf"
    f.save(path)
    before = path.read_bytes()
    mapped = row.cls.open(path)  # mode "r" is every mappable type's default
    probes = url_keys(0, 6000)
    assert type(mapped) is row.cls and mapped == f and mapped.to_bytes() == before
    assert mapped.contains_many(probes).tolist() == f.contains_many(probes).tolist()
    assert pickle.loads(pickle.dumps(mapped)) == f
    if row.row.mutable:  # a read-only mapping refuses writes before they happen
        with pytest.raises(io.UnsupportedOperation, match="read-only"):
            mapped.add("x")
    assert path.read_bytes() == before


@pytest.mark.parametrize("row", ROWS)
def test_copies_are_equal_and_independent(row):
    f = filled(row)
    blob = f.to_bytes()
    for duplicate in (f.copy(), copy.copy(f), copy.deepcopy(f)):
        assert type(duplicate) is row.cls and duplicate == f and duplicate.to_bytes() == blob
        if row.row.mutable:
            duplicate.update(url_keys(50_000, 500))
            assert duplicate != f
        else:
            del duplicate
        assert f.to_bytes() == blob


@pytest.mark.parametrize("row", ROWS)
def test_another_types_bytes_are_refused(row):
    for other in FILTER_TYPES:
        if other.row is not row.row:
            if row.row.framed and other.row.framed:
                message = f"data holds a {other.cls.__name__}, not a {row.cls.__name__}"
            elif row.row.framed:
                message = "not a bloomkit filter: bad magic bytes"
            else:  # a foreign format's reader names its format ("Spark Bloom filter", "ORC BloomFilter")
                message = rf"\b{row.cls._format_name} Bloom ?[Ff]ilter"
            with pytest.raises(ValueError, match=message):
                row.cls.from_bytes(filled(other).to_bytes())


@pytest.mark.parametrize("row", FRAMED)
def test_every_corruption_of_a_frame_is_refused(row):
    # Truncations, extensions, bit flips and scribbles over the header, the
    # params and the payload, in a subprocess (a crash fails the test, not the
    # run): each raises ValueError, whatever the type (the checksum, then each
    # field's validation). The fuzzer (fuzz/) goes further on the same loaders.
    blob = filled(row, keys=url_keys(0, 300), capacity=400, seed=5).to_bytes()
    outcomes = ast.literal_eval(
        fuzz_corruptions(blob, f"bloomkit.{row.cls.__name__}.from_bytes", trials=1200, seed=len(row.name)).strip()
    )
    assert outcomes["rejected"] >= 1150 and sum(outcomes.values()) == 1200
    fuzz_corruptions(blob, "bloomkit.load", trials=300, seed=2)


@pytest.mark.parametrize("row", MUTABLE)
def test_clear_gives_an_empty_filter_of_the_same_parameters(row):
    f = filled(row)
    f.clear()
    assert f == row.make(5000, 0.01, 3)
    assert len(f) == 0 and "a" not in f
    assert f.add("a") is False


# ------------------------------------------------------- threads


@pytest.mark.parametrize("row", MUTABLE)
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
    if row.row.exact_count:
        assert len(f) == total
    if row.row.order_free:
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
    if row.row.exact_count:
        assert len(f) == len(keep)
    if row.row.order_free:
        assert f == reference


# ------------------------------------------------------- equality, display, signatures


@pytest.mark.parametrize("row", ROWS)
def test_equality_is_type_parameters_and_contents(row):
    f, g = filled(row), filled(row)
    assert f == g and not (f != g)
    assert f != filled(row, keys=["a", b"b", 3, -4, "one more key"] + url_keys(0, 1000))
    if row.row.seeded:
        assert filled(row, seed=4) != f  # same keys, another seed
    if row.row.mutable:  # a frozen type is sized by its keys, not by a request
        assert f != filled(row, capacity=6000)  # another sizing request
    assert (f == f.to_bytes()) is False and f != "filter"
    for other in FILTER_TYPES:
        if other.row is not row.row:
            assert f != filled(other)
    with pytest.raises(TypeError, match="unhashable"):
        hash(f)


@pytest.mark.parametrize("row", ROWS)
def test_repr_is_one_line_and_html_is_a_table(row):
    f = filled(row, seed=77)
    text = repr(f)
    assert text.startswith(f"<{row.cls.__name__} ") and text.endswith(">") and "\n" not in text
    # A frozen type's rate is its fingerprint width's, not a request.
    assert (
        ("seed=77" in text or not row.row.seeded)
        and ("error_rate=0.01" if row.row.mutable else "error_rate=") in text
        and "nbytes=" in text
    )
    html = f._repr_html_()
    assert html.startswith("<table") and f"<b>{row.cls.__name__}</b>" in html
    labels = re.findall(r"<th style='text-align:left'>([^<]+)</th>", html)
    assert len(labels) >= 8 and all(f" {label}=" in text for label in labels)  # one row per repr field


@pytest.mark.parametrize("row", ROWS)
def test_single_key_methods_are_positional_only(row):
    methods = ["add", "contains"] + (["remove", "discard", "count"] if row.row.removable else [])
    for name in methods:
        assert str(inspect.signature(getattr(row.cls, name))) == "(self, key, /)", name
        with pytest.raises(TypeError):
            getattr(row.build([], 10, 0.01, 0), name)(key="a")


def test_every_exported_filter_type_has_a_case():
    exported = {
        obj for name in bloomkit.__all__ if isinstance(obj := getattr(bloomkit, name), type) and name.endswith("Filter")
    }
    assert exported == {row.cls for row in FILTER_TYPES} == {case.cls for case in FILTER_CASES}
