"""DataFrames and Arrow as people use them: row dedup, keep/subset, Arrow capsules,
float and datetime keys, bounded object batches, cuckoo test-and-add."""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bloomkit
from bloomkit import _core

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")

EXACT = 1e-9  # error rate at which a few thousand rows give exact masks


def mixed_frame(rows=6_000, seed=0):
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, 900, size=rows)  # many repeated rows
    floats = (pick % 7) / 4.0
    floats[pick % 11 == 0] = np.nan
    return pd.DataFrame(
        {
            "url": [f"https://example.com/{p % 300}" for p in pick],
            "status": (pick % 3).astype(np.int64) * 100 + 200,
            "score": floats,
            "when": np.datetime64("2024-01-01", "s") + (pick % 5).astype("timedelta64[h]"),
            "ok": pick % 2 == 0,
            "tag": pd.array([f"t{p % 4}" for p in pick], dtype="string[pyarrow]"),
        },
        index=pd.RangeIndex(100, 100 + rows),
    )


def digest_bytes(key, seed=0) -> bytes:
    h = bloomkit.hash128(key, seed)
    return struct.pack("<QQ", h & (2**64 - 1), h >> 64)


# ---------------------------------------------------------------- row keys


def test_dedup_mask_on_whole_rows_matches_duplicated():
    frame = mixed_frame()
    for keep in ("first", "last"):
        mask = bloomkit.dedup_mask(frame, error_rate=EXACT, keep=keep)
        expected = ~frame.duplicated(keep=keep)
        assert isinstance(mask, pd.Series) and mask.dtype == bool
        assert mask.index.equals(frame.index)
        assert mask.equals(expected), keep
        assert 0 < mask.sum() < len(frame)


def test_subset_and_column_order():
    frame = mixed_frame(seed=1)
    for subset in ("url", ["url", "status"], ["status", "url"], ["score", "when", "ok"]):
        for keep in ("first", "last"):
            mask = bloomkit.dedup_mask(frame, subset=subset, keep=keep, error_rate=EXACT)
            assert mask.equals(~frame.duplicated(subset=subset, keep=keep)), (subset, keep)
    unique = frame[bloomkit.dedup_mask(frame, subset=["url"], error_rate=EXACT)]
    assert unique.equals(frame.drop_duplicates(subset=["url"]))
    with pytest.raises(KeyError, match=r"\['nope'\].*columns: \['url'"):
        bloomkit.dedup_mask(frame, subset=["url", "nope"])
    with pytest.raises(ValueError, match="keep must be 'first' or 'last'"):
        bloomkit.dedup_mask(frame, keep=False)
    with pytest.raises(TypeError, match="subset= needs a DataFrame"):
        bloomkit.dedup_mask(frame["url"], subset="url")


def test_row_key_definition_is_murmur_of_the_column_digests():
    urls = ["a", "b", "a", "c"]
    codes = np.array([1, 2, 1, 1], dtype=np.int64)
    for seed in (0, 7):
        by_rows = bloomkit.BloomFilter(100, 0.01, seed=seed)
        seen = by_rows.add_many(_core.RowBatch([urls, codes], ["'url'", "'code'"]))
        assert seen.tolist() == [False, False, True, False]
        by_definition = bloomkit.BloomFilter(100, 0.01, seed=seed)
        by_definition.update([digest_bytes(u, seed) + digest_bytes(int(c), seed) for u, c in zip(urls, codes)])
        assert by_rows.to_bytes() == by_definition.to_bytes()
    # Column order matters: (a, 1) and (1, a) are different rows.
    forward = bloomkit.BloomFilter(100, 0.001)
    forward.update(_core.RowBatch([["a"], [1]], ["x", "y"]))
    assert not forward.contains_many(_core.RowBatch([[1], ["a"]], ["y", "x"]))[0]
    assert forward.contains_many(_core.RowBatch([np.array(["a"]), np.array([1], dtype=np.uint8)], ["x", "y"]))[0]


def test_equal_rows_are_equal_keys_across_dtypes():
    # The same values in different column dtypes are the same row key.
    a = pd.DataFrame({"s": ["x", "y"], "n": np.array([1, 2], dtype=np.int32)})
    b = pd.DataFrame({"s": pd.Series(["x", "y"], dtype="string[pyarrow]"), "n": np.array([1.0, 2.0])})
    f = bloomkit.BloomFilter(100, 0.001)
    f.update(_core.RowBatch([a["s"].to_numpy(), a["n"].to_numpy()], ["s", "n"]))
    from bloomkit import _batch

    assert f.contains_many(_core.RowBatch([_batch.single_batch(b["s"]), b["n"].to_numpy()], ["s", "n"])).all()


def test_row_errors_name_the_column_and_row_and_change_nothing():
    f = bloomkit.BloomFilter(100, 0.01)
    before = f.to_bytes()
    with pytest.raises(TypeError, match=r"column 'b': key at index 1 has unsupported type 'NoneType'"):
        f.update(_core.RowBatch([["x", "y"], ["p", None]], ["'a'", "'b'"]))
    with pytest.raises(ValueError, match=r"column 'b': has 1 rows, column 'a' has 2"):
        f.update(_core.RowBatch([["x", "y"], ["p"]], ["'a'", "'b'"]))
    frame = pd.DataFrame({"a": ["x", None], "b": [1, 2]})
    with pytest.raises((TypeError, ValueError), match=r"column 'a': key at index 1"):
        bloomkit.dedup_mask(frame)
    assert f.to_bytes() == before


def test_dataframe_rows_do_not_go_through_hash_pandas_object(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("hash_pandas_object must not be used")

    monkeypatch.setattr(pd.util, "hash_pandas_object", refuse)
    frame = mixed_frame(2_000)
    assert bloomkit.dedup_mask(frame, error_rate=EXACT).equals(~frame.duplicated())


def test_return_types():
    values = ["a", "b", "a"]
    series = pd.Series(values, index=["x", "y", "z"])
    mask = bloomkit.dedup_mask(series)
    assert (
        isinstance(mask, pd.Series) and mask.index.tolist() == ["x", "y", "z"] and mask.tolist() == [True, True, False]
    )
    assert series[mask].tolist() == ["a", "b"]
    for container in (np.array(values), pa.array(values), pl.Series(values), values, pd.Index(values)):
        result = bloomkit.dedup_mask(container)
        assert isinstance(result, np.ndarray) and result.tolist() == [True, True, False], type(container)


def test_polars_and_arrow_tables_dedup_by_rows():
    # polars and pyarrow read pandas' NaN as null (a missing value): fill it.
    frame = mixed_frame(3_000, seed=2).drop(columns=["tag"]).fillna({"score": -1.0})
    expected = (~frame.duplicated()).to_numpy()
    for table in (pl.from_pandas(frame), pa.Table.from_pandas(frame, preserve_index=False)):
        for keep in ("first", "last"):
            mask = bloomkit.dedup_mask(table, error_rate=EXACT, keep=keep)
            want = expected if keep == "first" else (~frame.duplicated(keep="last")).to_numpy()
            assert isinstance(mask, np.ndarray) and np.array_equal(mask, want), (type(table), keep)


# ------------------------------------------------------- Arrow, zero-copy


def test_arrow_capsule_inputs():
    values = [f"k{i % 50}" for i in range(400)]
    expected = ~pd.Series(values).duplicated().to_numpy()
    nanoarrow = pytest.importorskip("nanoarrow")
    duckdb = pytest.importorskip("duckdb")
    tbl = pa.table({"k": values, "n": range(400)})
    containers = {
        "polars str": pl.Series(values),
        "polars categorical": pl.Series(values, dtype=pl.Categorical),
        "pyarrow array": pa.array(values),
        "pyarrow chunked": pa.chunked_array([values[:100], values[100:]]),
        "pyarrow large_string": pa.array(values, pa.large_string()),
        "pyarrow string_view": pa.array(values, pa.string_view()),
        "Table column": tbl["k"],
        "RecordBatch column": tbl.to_batches()[0].column("k"),
        "nanoarrow": nanoarrow.Array(values, nanoarrow.string()),
        "duckdb column": duckdb.sql("select * from tbl").to_arrow_table()["k"],
    }
    for name, container in containers.items():
        f = bloomkit.BloomFilter(1000, EXACT)
        assert np.array_equal(~f.add_many(container), expected), name
        assert f.contains_many(container).all(), name
    ints = pl.Series(np.arange(300) % 70)
    assert np.array_equal(
        bloomkit.dedup_mask(ints, error_rate=EXACT), ~pd.Series(np.arange(300) % 70).duplicated().to_numpy()
    )


def test_string_view_arrays_are_read_in_place():
    values = ["short", "exactly12byt", "a string longer than twelve bytes", "", "é" * 20] * 50
    view = pa.array(values, pa.string_view())
    batch = _batch_of(view)
    assert isinstance(batch, _core.ViewBatch) and len(batch) == len(values)
    f = bloomkit.BloomFilter(1000, 1e-9)
    assert np.array_equal(~f.add_many(view), ~pd.Series(values).duplicated().to_numpy())
    reference = bloomkit.BloomFilter(1000, 1e-9)
    reference.update(values)
    assert f.to_bytes() == reference.to_bytes()
    assert f.contains_many(view.slice(3, 7)).all() and f.contains_many(pa.array(values, pa.binary_view())).all()
    series = pl.Series(values)
    assert isinstance(_batch_of(series), _core.ViewBatch)
    # A view pointing outside its buffers is refused before any use.
    views = np.frombuffer(view.buffers()[1], dtype=np.uint8).copy()
    views[2 * 16 + 12 : 2 * 16 + 16] = np.frombuffer(np.int32(10**6).tobytes(), np.uint8)  # offset of key 2
    data = [np.frombuffer(b, np.uint8) for b in view.buffers()[2:]]
    with pytest.raises(ValueError, match="view 2 points outside its data buffers"):
        _core.ViewBatch(views, data)


def test_view_batch_holds_its_buffers_and_checks_views_at_use():
    values = ["a string longer than twelve bytes", "tiny"] * 10
    view = pa.array(values, pa.string_view())
    views = bytearray(np.frombuffer(view.buffers()[1], np.uint8).tobytes())
    data = [bytearray(np.frombuffer(b, np.uint8).tobytes()) for b in view.buffers()[2:]]
    batch = _core.ViewBatch(views, data)
    with pytest.raises(BufferError):
        views.extend(b"x" * 4096)  # the batch holds the export: no resize under it
    with pytest.raises(BufferError):
        data[0].clear()
    f = bloomkit.BloomFilter(100, 1e-9)
    f.update(batch)
    assert f.contains_many(values).all()
    views[12:16] = np.int32(10**6).tobytes()  # key 0's offset, changed after validation
    f.update(batch)  # no out-of-bounds read: that view hashes as the empty key
    assert b"" in f
    del batch
    views.extend(b"x")  # released with the batch


def _batch_of(keys):
    from bloomkit import _batch

    return _batch.single_batch(keys)


def test_polars_series_is_not_iterated_in_python(monkeypatch):
    def refuse(self):
        raise AssertionError("polars Series iterated as Python objects")

    monkeypatch.setattr(pl.Series, "__iter__", refuse)
    monkeypatch.setattr(pl.Series, "to_list", refuse)
    series = pl.Series([f"u{i % 10}" for i in range(100)])
    assert bloomkit.dedup_mask(series).sum() == 10
    f = bloomkit.BloomFilter(100, 0.001)
    f.update(series)
    assert f.contains_many(series).all()


def test_tables_given_as_a_column_name_the_column_to_pass():
    f = bloomkit.BloomFilter(100, 0.01)
    cases = [
        (
            pl.DataFrame({"url": ["a"], "n": [1]}),
            "polars DataFrame with columns ['url', 'n']: pass one column, e.g. frame['url']",
        ),
        (
            pa.table({"url": ["a"], "n": [1]}),
            "pyarrow Table with columns ['url', 'n']: pass one column, e.g. frame['url']",
        ),
        (pa.record_batch({"url": ["a"]}), "pyarrow RecordBatch with columns ['url']"),
        (pd.DataFrame({"url": ["a"]}), "pandas DataFrame with columns ['url']"),
    ]
    for table, message in cases:
        for operation in (f.add_many, f.update, f.contains_many):
            with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
                operation(table)
    duckdb = pytest.importorskip("duckdb")
    with pytest.raises(TypeError, match=r"struct with fields \['u', 'n'\]: pass one column"):
        f.update(duckdb.sql("select 'x' as u, 1 as n"))
    assert bloomkit.dedup_mask(duckdb.sql("select * from (values ('x',1),('y',2),('x',1)) t(u,n)")).tolist() == [
        True,
        True,
        False,
    ]


def test_arrow_nulls_are_refused():
    with pytest.raises(ValueError, match="key at index 1 is null"):
        bloomkit.dedup_mask(pl.Series(["a", None]))


# ------------------------------------------------------------- key dtypes


def test_float_keys_canonical_encoding():
    f = bloomkit.BloomFilter(1000, 1e-6)
    assert bloomkit.canonical_bytes(5.0) == bloomkit.canonical_bytes(5) == (5).to_bytes(8, "little")
    assert bloomkit.canonical_bytes(-0.0) == bloomkit.canonical_bytes(0)
    assert bloomkit.canonical_bytes(-3.0) == (2**64 - 3).to_bytes(8, "little")
    assert bloomkit.canonical_bytes(float(2**63)) == bloomkit.canonical_bytes(2**63)
    assert bloomkit.canonical_bytes(0.5) == struct.pack("<d", 0.5)
    assert bloomkit.canonical_bytes(float(2**64)) == struct.pack("<d", 2.0**64)
    assert bloomkit.canonical_bytes(float("inf")) == struct.pack("<d", float("inf"))
    nan_bytes = struct.pack("<Q", 0x7FF8000000000000)
    other_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]
    assert bloomkit.canonical_bytes(float("nan")) == bloomkit.canonical_bytes(other_nan) == nan_bytes
    assert bloomkit.canonical_bytes(np.float32(0.5)) == bloomkit.canonical_bytes(0.5)
    values = np.array([5.0, 0.5, -0.0, np.nan, 1e300, -2.5, 2.0**63])
    f.update(values.astype(np.float64))
    for key in (5, 5.0, np.float32(5), 0.5, 0, float("nan"), 1e300, -2.5, 2**63):
        assert key in f, key
    assert f.contains_many(np.array([0.5, -2.5], dtype=np.float32)).all()
    assert f.contains_many(values[::2]).all()  # strided
    assert 0.25 not in f and 6 not in f


def test_float_series_dedup_matches_pandas_with_nan():
    values = np.random.default_rng(3).integers(0, 40, 3_000) / 8.0
    values[::17] = np.nan
    series = pd.Series(values)
    assert bloomkit.dedup_mask(series, error_rate=EXACT).equals(~series.duplicated())
    assert np.array_equal(
        bloomkit.dedup_mask(pa.array(values, from_pandas=False), error_rate=EXACT), ~series.duplicated().to_numpy()
    )


def test_datetime_keys_are_nanoseconds_in_any_unit():
    seconds = np.array(["2024-03-01T12:00:00", "1999-12-31T23:59:59"], dtype="datetime64[s]")
    f = bloomkit.BloomFilter(1000, 1e-6)
    f.update(seconds)
    as_ns = seconds.astype("datetime64[ns]")
    assert f.contains_many(as_ns).all() and f.contains_many(seconds.astype("datetime64[ms]")).all()
    assert f.contains_many(as_ns.astype(np.int64)).all()  # the key is the ns count
    assert int(as_ns[0].astype(np.int64)) in f
    assert f.contains_many(pd.Series(pd.to_datetime(as_ns))).all()
    assert f.contains_many(pd.Series(pd.to_datetime(as_ns)).dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo")).all()
    assert f.contains_many(pa.array(as_ns)).all()
    assert f.contains_many(pa.array(seconds.astype("datetime64[us]"), pa.timestamp("us", tz="Europe/Paris"))).all()
    assert f.contains_many(pl.Series(as_ns)).all()
    days = np.array(["2024-03-01", "2024-04-01"], dtype="datetime64[D]")
    f.update(days)
    assert f.contains_many(days.astype("datetime64[M]")).all()  # calendar unit, converted
    assert f.contains_many(pa.array(days.astype("datetime64[D]"), pa.date32())).all()
    week = np.array([1], dtype="timedelta64[W]")
    f.update(week)
    assert f.contains_many(week.astype("timedelta64[s]")).all() and 7 * 86400 * 10**9 in f
    assert not f.contains_many(np.array(["2024-03-01T12:00:01"], dtype="datetime64[s]"))[0]


def test_nat_is_one_key_and_out_of_range_is_refused():
    f = bloomkit.BloomFilter(100, 1e-6)
    f.update(np.array(["NaT"], dtype="datetime64[s]"))
    assert f.contains_many(np.array(["NaT"], dtype="datetime64[ns]"))[0]
    assert f.contains_many(np.array(["NaT"], dtype="timedelta64[D]"))[0]
    assert -(2**63) in f
    series = pd.Series(pd.to_datetime(["2024-01-01", None, "2024-01-01", None]))
    assert bloomkit.dedup_mask(series).tolist() == [True, True, False, False]
    before = f.to_bytes()
    with pytest.raises(ValueError, match="key at index 1 is a datetime64/timedelta64 outside"):
        f.update(np.array(["2000-01-01", "3000-01-01"], dtype="datetime64[s]"))
    with pytest.raises(TypeError, match="unit from weeks to nanoseconds"):
        f.update(np.array([1], dtype="datetime64[ps]"))
    assert f.to_bytes() == before


# ----------------------------------------------------- bounded object batches


def test_object_batches_hold_o_block_digests_not_o_n():
    # Peak RSS growth of update() over 3M Python ints: one digest per key
    # would be +46 MiB; a block of digests is 256 KiB.
    script = textwrap.dedent(
        """
        import resource, bloomkit
        keys = list(range(3_000_000))
        f = bloomkit.BloomFilter(3_000_000, 0.01)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        f.update(keys)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert all(f.contains_many(keys[:1000]))
        print((after - before) / 1024)
        """
    )
    growth_mib = float(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    )
    assert growth_mib < 12, growth_mib


def test_object_batches_are_exact_across_blocks():
    keys = [f"key-{i}" for i in range(40_000)] + list(range(40_000)) + [float(i) + 0.5 for i in range(1000)]
    f = bloomkit.BloomFilter(100_000, 1e-7)
    seen = f.add_many(keys + keys[:20_000])
    assert not seen[: len(keys)].any() and seen[len(keys) :].all()
    reference = bloomkit.BloomFilter(100_000, 1e-7)
    for key in keys:
        reference.add(key)
    assert reference.to_bytes() == f.to_bytes()
    # A bad key in a later block still fails before anything is inserted.
    g = bloomkit.BloomFilter(100_000, 0.01)
    with pytest.raises(TypeError, match="key at index 70000 has unsupported type 'NoneType'"):
        g.update(keys[:70_000] + [None])
    assert g.to_bytes() == bloomkit.BloomFilter(100_000, 0.01).to_bytes()
    # NumPy scalars (whose conversion may run Python code) take the up-front path, same keys.
    h = bloomkit.BloomFilter(100_000, 1e-7)
    h.update([np.int64(i) for i in range(40_000)])
    assert h.contains_many(np.arange(40_000)).all()


# ------------------------------------------------------------- cuckoo dedup


def test_cuckoo_add_new_many_stores_each_key_once():
    keys = ["a"] * 100 + ["b"] * 3 + ["c"]
    multiset = bloomkit.CuckooFilter(1000)
    with pytest.raises(bloomkit.TooManyCopiesError, match="2\\*bucket_size"):
        multiset.add_many(keys)
    f = bloomkit.CuckooFilter(1000)
    seen = f.add_new_many(keys)
    assert seen.tolist() == [False] + [True] * 99 + [False, True, True, False]
    assert len(f) == 3 and f.count("a") == 1
    f.update_new(keys)
    assert len(f) == 3
    grown = bloomkit.CuckooFilter(100, 1e-6, auto_grow=True)
    repeated = np.repeat(np.arange(1_000), 20)
    assert (~grown.add_new_many(repeated)).sum() == 1_000 and len(grown) == 1_000 and grown.num_stages > 1


def test_cuckoo_dedup_mask_with_many_repeats():
    values = np.random.default_rng(4).integers(0, 2_000, size=50_000)  # ~25 repeats each
    mask = bloomkit.dedup_mask(pd.Series(values), kind="cuckoo", error_rate=1e-6)
    assert mask.equals(~pd.Series(values).duplicated())
    last = bloomkit.dedup_mask(values, kind="cuckoo", keep="last", error_rate=1e-6)
    assert np.array_equal(last, ~pd.Series(values).duplicated(keep="last").to_numpy())
    with pytest.raises(ValueError, match="kind must be 'bloom' or 'cuckoo'"):
        bloomkit.dedup_mask(values, kind="set")
