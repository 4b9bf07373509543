"""bloomkit.parquet: Parquet's split-block Bloom filters read from files real writers wrote.

Files are written by pyarrow (``bloom_filter_options``) and DuckDB (``COPY
... (FORMAT parquet)``, which writes a filter for dictionary-encoded
columns), 100,000 keys of each supported type in three row groups. Every
written key is found; the answers equal DuckDB's own ``parquet_bloom_probe``
for present and absent keys on files of both writers; hostile filter bytes
are refused with ValueError; keys of the wrong type raise TypeError.
"""

from __future__ import annotations

import datetime
import decimal
import io
import re

import numpy as np
import pytest

from bloomkit import _core
from bloomkit.parquet import ParquetBloomFilter, candidates, read_bloom_filter
from support import fpr_upper_bound

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N = 100_000
ROW_GROUP = 40_000  # three row groups: 40,000 + 40,000 + 20,000
FPP = 0.01


def _typed_columns(start: int, n: int) -> dict:
    """n distinct values of each supported type, the i-th built from start + i."""
    i = np.arange(start, start + n, dtype=np.int64)
    text = [f"user-{v:09d}-é" for v in i.tolist()]
    return {
        "i32": pa.array((i * 7 - 3_000_000).astype(np.int32)),
        "i64": pa.array(i * 1_000_003 - 2**40),
        "u32": pa.array((i * 40_001 + 2**31).astype(np.uint32)),
        "f32": pa.array((i * 0.5 - 17.25).astype(np.float32)),
        "f64": pa.array(i * 1e-3 + 0.1),
        "text": pa.array(text, pa.string()),
        "blob": pa.array([t.encode() for t in text], pa.binary()),
        "fixed": pa.array([int(v).to_bytes(16, "big") for v in i.tolist()], pa.binary(16)),
        "day": pa.array((i - 50_000).astype(np.int32), pa.int32()).cast(pa.date32()),
        "when": pa.array(i * 1_000_000_007, pa.int64()).cast(pa.timestamp("us")),
        "price": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in i.tolist()], pa.decimal128(12, 2)),
    }


@pytest.fixture(scope="module")
def pyarrow_file(tmp_path_factory):
    table = pa.table(_typed_columns(0, N))
    path = tmp_path_factory.mktemp("parquet") / "pyarrow.parquet"
    options = {name: {"ndv": ROW_GROUP, "fpp": FPP} for name in table.column_names}
    pq.write_table(table, path, row_group_size=ROW_GROUP, bloom_filter_options=options)
    return path, table


DUCKDB_COLUMNS = {
    "i32": "(i * 7 - 3000000)::INTEGER",
    "i64": "(i * 1000003 - 1099511627776)::BIGINT",
    "f32": "(i * 0.5 - 17.25)::FLOAT",
    "f64": "(i * 0.001 + 0.1)::DOUBLE",
    "text": "printf('user-%09d-é', i)",
    "blob": "encode(printf('user-%09d-é', i))",
    "day": "DATE '1970-01-01' + (i - 50000)::INTEGER",
    "when": "make_timestamp(i * 1000000007)",
}


@pytest.fixture(scope="module")
def duckdb_file(tmp_path_factory):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path_factory.mktemp("parquet") / "duckdb.parquet"
    select = ", ".join(f"{expr} AS {name}" for name, expr in DUCKDB_COLUMNS.items())
    with duckdb.connect() as con:
        con.execute(
            f"COPY (SELECT {select} FROM range({N}) t(i) ORDER BY i) TO '{path}' (FORMAT parquet, "
            f"ROW_GROUP_SIZE {ROW_GROUP}, DICTIONARY_SIZE_LIMIT {N}, "
            f"STRING_DICTIONARY_PAGE_SIZE_LIMIT 100000000, BLOOM_FILTER_FALSE_POSITIVE_RATIO {FPP})"
        )
    return path, pq.read_table(path)


# ---------------------------------------------------------------- the hash


def test_xxhash64_gives_the_published_vectors():
    # xxHash's and python-xxhash's README values.
    assert _core.xxhash64(b"") == 0xEF46DB3751D8E999
    assert _core.xxhash64(b"a") == 0xD24EC4F1A98C6E5B
    assert _core.xxhash64(b"abc") == 0x44BC2CF5AD770999
    assert _core.xxhash64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1


def test_xxhash64_equals_the_xxhash_package_for_every_length_and_seed():
    xxhash = pytest.importorskip("xxhash")
    data = np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8).tobytes()
    for seed in (0, 1, 2**64 - 1):
        for length in range(len(data) + 1):
            assert _core.xxhash64(data[:length], seed) == xxhash.xxh64_intdigest(data[:length], seed), (length, seed)
    values = np.arange(1000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # the batch paths, by width
    raw = values.view(np.uint8)
    for width in (4, 8, 16, 5):
        usable = raw[: len(raw) // width * width]
        expected = [xxhash.xxh64_intdigest(usable[i : i + width].tobytes()) for i in range(0, len(usable), width)]
        assert _core.parquet_hash_fixed(usable, width).tolist() == expected


# ------------------------------------------------------------ no false negatives


@pytest.mark.parametrize("column", list(_typed_columns(0, 1)))
def test_every_key_pyarrow_wrote_is_found_in_its_row_group(pyarrow_file, column):
    path, table = pyarrow_file
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    for row_group in range(3):
        f = read_bloom_filter(path, column, row_group)
        chunk = table.column(column).slice(row_group * ROW_GROUP, ROW_GROUP)
        assert f.contains_many(chunk).all()  # an Arrow column
        assert f.contains_many(chunk.to_pylist()).all()  # the Python values users pass
        first = chunk[0].as_py()
        assert first in f and f.contains(first)


@pytest.mark.parametrize("column", list(DUCKDB_COLUMNS))
def test_every_key_duckdb_wrote_is_found_in_its_row_group(duckdb_file, column):
    path, table = duckdb_file
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.names.index(column)
    start = 0
    for row_group in range(meta.num_row_groups):
        rows = meta.row_group(row_group).num_rows
        f = read_bloom_filter(path, column, row_group)
        assert meta.row_group(row_group).column(index).bloom_filter_offset is not None
        assert f.contains_many(table.column(column).slice(start, rows).to_pylist()).all()
        start += rows
    assert start == N


def test_numpy_arrays_are_keys_of_their_column(pyarrow_file):
    path, table = pyarrow_file
    f = read_bloom_filter(path, "i32", 1)
    keys = table.column("i32").to_numpy()[ROW_GROUP : 2 * ROW_GROUP]
    assert keys.dtype == np.int32 and f.contains_many(keys).all()
    assert f.contains_many(keys.astype(np.int64)).all()  # the same values in a wider dtype
    unsigned = table.column("u32").to_numpy()[ROW_GROUP : 2 * ROW_GROUP]  # values above 2**31: stored as their bits
    assert unsigned.max() >= 2**31 and read_bloom_filter(path, "u32", 1).contains_many(unsigned).all()
    text = read_bloom_filter(path, "text", 0)
    assert text.contains_many(np.array(table.column("text").to_pylist()[:1000])).all()


# -------------------------------------------------- the same answers as DuckDB


def _duckdb_says_maybe(con, path, column, value) -> list:
    rows = con.execute(
        "SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?)", [str(path), column, value]
    ).fetchall()
    return [not excludes for _, excludes in sorted(rows)]


@pytest.mark.parametrize("writer", ["pyarrow", "duckdb"])
@pytest.mark.parametrize("column", ["i32", "i64", "f64", "text", "day"])
def test_answers_equal_duckdbs_parquet_bloom_probe_for_present_and_absent_keys(writer, column, request):
    duckdb = pytest.importorskip("duckdb")
    path, table = request.getfixturevalue(f"{writer}_file")
    present = table.column(column).to_pylist()[::4001]
    absent = _typed_columns(N, 3000)[column].to_pylist()[::100] + _typed_columns(3 * N, 3000)[column].to_pylist()[::100]
    filters = [read_bloom_filter(path, column, g) for g in range(pq.ParquetFile(path).metadata.num_row_groups)]
    ours_said_no = 0
    with duckdb.connect() as con:
        for key in present + absent:
            ours = [key in f for f in filters]
            assert ours == _duckdb_says_maybe(con, path, column, key), key
            ours_said_no += ours.count(False)
    assert ours_said_no > len(absent) * len(filters) * 0.9  # the absent keys were mostly excluded: both said no


# ------------------------------------------------------------ false positives


@pytest.mark.statistical
@pytest.mark.parametrize("writer", ["pyarrow", "duckdb"])
@pytest.mark.parametrize("column", ["i64", "text", "f32", "day"])
def test_false_positive_rate_is_within_the_requested_rate(writer, column, request):
    path, _ = request.getfixturevalue(f"{writer}_file")
    absent = _typed_columns(10 * N, 200_000)[column]
    f = read_bloom_filter(path, column, 0)  # a 40,000-key row group sized for 40,000 at FPP
    measured = f.contains_many(absent).mean()
    assert measured <= fpr_upper_bound(FPP, len(absent))


def test_a_full_row_group_keeps_a_low_false_positive_rate(pyarrow_file):
    path, _ = pyarrow_file
    absent = _typed_columns(10 * N, 20_000)["i64"]
    measured = read_bloom_filter(path, "i64", 0).contains_many(absent).mean()
    # The filter answers "absent" for the keys it never saw (a filter that
    # always said yes would give 1.0); the statistical test checks the rate.
    assert measured < 0.05


# ------------------------------------------------------------------ keys


def test_keys_of_the_wrong_type_raise_type_error(pyarrow_file):
    path, _ = pyarrow_file
    ints = read_bloom_filter(path, "i64")
    text = read_bloom_filter(path, "text")
    day = read_bloom_filter(path, "day")
    with pytest.raises(TypeError, match=r"key of type string cannot be a value of column 'i64' \(int64"):
        "5" in ints  # noqa: B015
    with pytest.raises(TypeError, match=r"key of type int64 cannot be a value of column 'text'"):
        text.contains_many([5])
    with pytest.raises(TypeError, match=r"key of type binary cannot be a value of column 'text'"):
        b"user" in text  # noqa: B015
    with pytest.raises(TypeError, match=r"key of type timestamp\[us\] cannot be a value of column 'day'"):
        datetime.datetime(2000, 1, 1) in day  # noqa: B015
    with pytest.raises(TypeError, match="not all of one type"):
        ints.contains_many([1, "2"])
    with pytest.raises(TypeError, match="None is not a key"):
        ints.contains_many([1, None])
    with pytest.raises(TypeError, match="got a single 'str'"):
        text.contains_many("user")
    with pytest.raises(TypeError, match="key of type bool"):
        True in ints  # noqa: B015


def test_a_key_outside_the_columns_range_is_a_value_error(pyarrow_file):
    path, _ = pyarrow_file
    with pytest.raises(ValueError, match=r"cannot be stored exactly in column 'i32'"):
        2**40 in read_bloom_filter(path, "i32")  # noqa: B015
    with pytest.raises(ValueError, match=r"cannot be stored exactly in column 'fixed'"):
        b"short" in read_bloom_filter(path, "fixed")  # noqa: B015


def test_dates_timestamps_and_decimals_are_found_as_python_values(pyarrow_file):
    path, table = pyarrow_file
    assert datetime.date(1970, 1, 1) + datetime.timedelta(days=-50_000) in read_bloom_filter(path, "day")
    assert table.column("when")[3].as_py() in read_bloom_filter(path, "when")
    price = read_bloom_filter(path, "price")
    assert decimal.Decimal("0.03") in price and 0 in price  # an int is the decimal of the same value
    assert price.contains_many(table.column("price").slice(0, 1000)).all()


# ------------------------------------------------------------ hostile bytes


def _filter_bytes(path, column, row_group=0) -> tuple:
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.names.index(column)
    c = meta.row_group(row_group).column(index)
    data = path.read_bytes()
    return data, c.bloom_filter_offset, c.bloom_filter_length


def test_every_truncation_of_a_filter_is_refused(pyarrow_file):
    path, _ = pyarrow_file
    data, offset, length = _filter_bytes(path, "i64")
    whole = data[offset : offset + length]
    assert _core.ParquetBloomCore(whole).nbytes == length - _core.parquet_bloom_header(whole)[0]
    for cut in [*range(0, 40), length - 1, length - 32]:
        with pytest.raises(ValueError, match="Parquet Bloom filter"):
            _core.ParquetBloomCore(whole[:cut])
    with pytest.raises(ValueError, match="bytes follow it"):
        _core.ParquetBloomCore(whole + b"\0")


def test_every_corruption_of_a_header_is_refused_or_read_as_declared(pyarrow_file):
    path, _ = pyarrow_file
    data, offset, length = _filter_bytes(path, "text")
    whole = data[offset : offset + length]
    header_size, num_bytes = _core.parquet_bloom_header(whole)
    refused = 0
    for position in range(header_size):
        for flip in (0x01, 0x10, 0x80, 0xFF):
            bad = bytearray(whole)
            bad[position] ^= flip
            try:
                f = _core.ParquetBloomCore(bytes(bad))
            except ValueError as error:
                assert str(error).startswith("Parquet Bloom filter")
                refused += 1
            else:  # still a valid header (an unknown field skipped): it declared the bytes that follow
                assert f.nbytes == len(bad) - _core.parquet_bloom_header(bytes(bad))[0]
    assert refused >= header_size * 3


def test_a_hostile_header_in_a_file_is_refused_with_the_file_and_chunk_named(pyarrow_file, tmp_path):
    path, _ = pyarrow_file
    data, offset, length = _filter_bytes(path, "i64", 1)
    assert data[offset] == 0x15  # field 1, i32: numBytes as a zigzag varint
    bad = bytearray(data)
    bad[offset + 1] |= 0x7E  # a larger size in the same varint length: more than the recorded length holds
    target = tmp_path / "hostile.parquet"
    target.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"hostile.parquet: column 'i64', row group 1: Parquet Bloom filter"):
        read_bloom_filter(target, "i64", 1)
    with pytest.raises(ValueError, match="row group 1: Parquet Bloom filter"):
        candidates([target], "i64", [1])
    end = offset + 1
    while data[end] & 0x80:
        end += 1
    bad[offset + 1 : end] = b"\xff" * (end - offset - 1)  # the varint's top value, same length: zigzag -> negative
    with pytest.raises(ValueError, match=r"numBytes -\d+ is not a whole number of 32-byte blocks"):
        read_bloom_filter(io.BytesIO(bytes(bad)), "i64", 1)


def test_a_filter_without_a_recorded_length_is_read_by_its_header(pyarrow_file, duckdb_file):
    from bloomkit.parquet import _OpenSource

    for path, _ in (pyarrow_file, duckdb_file):
        data, offset, length = _filter_bytes(path, "text")
        with _OpenSource(path) as opened:
            assert opened.filter_bytes_at(offset, None, "here") == data[offset : offset + length]
    # The same filter at the end of a cut file: the header's size runs past the end.
    with _OpenSource(io.BytesIO(data)) as opened:
        opened.size = offset + length - 1
        with pytest.raises(ValueError, match="here: the header declares a .*truncated"):
            opened.filter_bytes_at(offset, None, "here")


# ------------------------------------------------------------ the file API


def test_unknown_columns_row_groups_and_chunks_without_a_filter(pyarrow_file, tmp_path):
    path, table = pyarrow_file
    with pytest.raises(KeyError, match="has no column 'nope'"):
        read_bloom_filter(path, "nope")
    with pytest.raises(IndexError, match="row_group 3 is out of range: .* has 3 row groups"):
        read_bloom_filter(path, "i64", 3)
    plain = tmp_path / "plain.parquet"
    pq.write_table(table.slice(0, 10), plain)
    with pytest.raises(ValueError, match="column 'i64', row group 0 has no Bloom filter"):
        read_bloom_filter(plain, "i64")
    with pytest.raises(TypeError, match="expected a path or a binary file-like object"):
        read_bloom_filter(42, "i64")


def test_a_file_like_object_reads_the_same_filter(pyarrow_file):
    path, _ = pyarrow_file
    handle = io.BytesIO(path.read_bytes())
    assert read_bloom_filter(handle, "text", 2) == read_bloom_filter(path, "text", 2)
    assert not handle.closed
    assert read_bloom_filter(path, "text", 2) != read_bloom_filter(path, "text", 1)


def test_candidates_never_miss_a_row_group_holding_a_key(tmp_path):
    sources = []
    truth: dict = {}
    for file_index in range(6):
        ids = np.arange(file_index * 30_000, (file_index + 1) * 30_000, dtype=np.int64)
        path = tmp_path / f"part-{file_index}.parquet"
        table = pa.table({"id": ids, "name": [f"n{v}" for v in ids.tolist()]})
        options = {"id": {"ndv": 10_000, "fpp": FPP}} if file_index != 4 else None  # file 4 has no filter
        pq.write_table(table, path, row_group_size=10_000, bloom_filter_options=options)
        sources.append(path)
        for g in range(3):
            for key in ids[g * 10_000 : (g + 1) * 10_000].tolist():
                truth.setdefault(key, set()).add((path, g))
    wanted = [5, 45_001, 179_999, 10**9, -1]
    found = candidates(sources, "id", wanted)
    holding = set().union(*(truth.get(k, set()) for k in wanted))
    assert holding <= set(found)
    assert {(sources[4], g) for g in range(3)} <= set(found)  # no filter: always a candidate
    assert len(found) < 6 * 3  # most other row groups were skipped
    exact = {
        (s, g)
        for s in sources
        for g in range(3)
        if s != sources[4] and read_bloom_filter(s, "id", g).contains_many(wanted).any()
    }
    assert set(found) == exact | {(sources[4], g) for g in range(3)}
    assert candidates([io.BytesIO(sources[0].read_bytes())], "id", iter([5]))[0][1] == 0
    with pytest.raises(TypeError, match="wrap one source in a list"):
        candidates(sources[0], "id", [5])
    with pytest.raises(TypeError, match="key of type string"):
        candidates(sources, "id", ["5"])


def test_a_read_filter_is_read_only_and_describes_itself(pyarrow_file):
    path, _ = pyarrow_file
    f = read_bloom_filter(path, "text", 0)
    assert isinstance(f, ParquetBloomFilter)
    assert (f.column, f.physical_type, str(f.value_type)) == ("text", "BYTE_ARRAY", "string")
    assert f.nbytes % 32 == 0 and f.num_blocks == f.nbytes // 32
    assert 0.0 < f.fill_ratio < 0.6
    assert not hasattr(f, "add") and not hasattr(f, "update")
    assert repr(f).startswith("<ParquetBloomFilter column='text' type=string (BYTE_ARRAY) nbytes=")


# ------------------------------------------------------- footers read by the core


def test_candidates_read_footers_as_pyarrow_does_flat_and_inside_a_struct(tmp_path):
    ids = np.arange(20_000, dtype=np.int64)
    table = pa.table(
        {"s": pa.StructArray.from_arrays([pa.array(ids)], ["id"]), "name": [f"n{i}" for i in ids.tolist()]}
    )
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, row_group_size=5_000, bloom_filter_options={"s.id": {"ndv": 5_000, "fpp": FPP}})
    meta = pq.ParquetFile(path).metadata
    _, _, signature, chunks = _core.parquet_column_filters(pq_footer(path), ["s", "id"])
    assert [
        (c.bloom_filter_offset, c.bloom_filter_length) for c in (meta.row_group(g).column(0) for g in range(4))
    ] == [tuple(chunk) for chunk in chunks]
    assert _core.parquet_column_filters(pq_footer(path), ["name"])[3] == [(-1, -1)] * 4  # no filter on name
    found = candidates([path], "s.id", [7_000, 19_999])
    exact = [(path, g) for g in range(4) if read_bloom_filter(path, "s.id", g).contains_many([7_000, 19_999]).any()]
    assert found == exact and {(path, 1), (path, 3)} <= set(found)
    assert candidates([path], "name", ["n3"]) == [(path, g) for g in range(4)]  # no filter: every row group
    assert read_bloom_filter(path, "s.id", 2).contains_many(ids[10_000:15_000]).all()
    with pytest.raises(KeyError, match="has no column 's'"):
        candidates([path], "s", [1])


def pq_footer(path) -> bytes:
    data = path.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length : -8]


def test_a_damaged_footer_is_a_value_error_naming_the_file(pyarrow_file):
    path, _ = pyarrow_file
    data = path.read_bytes()
    for bad, message in (
        (data[:-1], "no PAR1 magic"),
        (data[:-8] + b"PARE", "encrypted footer"),
        (data[:-8] + (len(data)).to_bytes(4, "little") + b"PAR1", "footer length .* does not fit"),
        (b"PAR1", r"not a Parquet file \(4 bytes\)"),
    ):
        with pytest.raises(ValueError, match=message):
            candidates([io.BytesIO(bad)], "i64", [1])
    footer = pq_footer(path)
    for cut in range(0, len(footer), max(1, len(footer) // 200)):
        with pytest.raises(ValueError, match="Parquet footer: "):
            _core.parquet_column_filters(footer[:cut], ["i64"])


def test_random_damage_to_a_footer_is_refused_or_read_never_a_crash(pyarrow_file):
    path, _ = pyarrow_file
    footer = pq_footer(path)
    rng = np.random.default_rng(5)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(3000):
        bad = bytearray(footer)
        for position in rng.integers(0, len(bad), size=rng.integers(1, 4)):
            bad[position] = int(rng.integers(0, 256))
        try:
            found, _, _, chunks = _core.parquet_column_filters(bytes(bad), ["i64"])
        except ValueError as error:
            assert str(error).startswith("Parquet footer: ")
            outcomes["refused"] += 1
        else:
            assert all(offset >= -1 and length >= -1 for offset, length in chunks)
            outcomes["read"] += 1
    assert outcomes["refused"] > 100 and outcomes["read"] > 100


def _refusal(source):
    try:
        candidates([source], "i64", [1, 2])
    except (ValueError, KeyError) as error:
        return type(error), str(error)
    return None


def test_damaged_files_on_disk_are_refused_as_file_objects_are(pyarrow_file, tmp_path):
    """Local paths go through the core's walk, file objects through Python: same checks, same messages."""
    path, _ = pyarrow_file
    data = path.read_bytes()
    footer_length = int.from_bytes(data[-8:-4], "little")
    _, offset, _ = _filter_bytes(path, "i64", 1)
    header_bad = bytearray(data)
    header_bad[offset + 1] |= 0x7E  # numBytes larger than the recorded length holds
    damaged = {
        "cut-tail": data[:-1],
        "encrypted": data[:-8] + b"PARE",
        "footer-too-long": data[:-8] + len(data).to_bytes(4, "little") + b"PAR1",
        "tiny": b"PAR1",
        "footer-cut": data[: -8 - footer_length] + data[-8 - footer_length + 10 : -8] + data[-8:],
        "header": bytes(header_bad),
    }
    rng = np.random.default_rng(11)
    for i in range(40):  # random damage to the footer
        bad = bytearray(data)
        for position in rng.integers(len(data) - 8 - footer_length, len(data) - 8, size=3):
            bad[position] = int(rng.integers(0, 256))
        damaged[f"random-{i}"] = bytes(bad)
    refused = 0
    for name, content in damaged.items():
        target = tmp_path / f"{name}.parquet"
        target.write_bytes(content)
        from_disk = _refusal(target)
        handle = io.BytesIO(content)
        from_object = _refusal(handle)
        if from_object is not None:
            from_object = (from_object[0], from_object[1].replace("BytesIO", str(target)))
            refused += 1
        assert from_disk == from_object, name
        if from_disk is None:  # read: both routes found the same row groups
            assert [g for _, g in candidates([target], "i64", [1, 2])] == [
                g for _, g in candidates([io.BytesIO(content)], "i64", [1, 2])
            ]
    assert refused >= 10
    assert re.search(r"row group 1: Parquet Bloom filter", _refusal(tmp_path / "header.parquet")[1])


def test_paths_and_file_objects_mix_in_order_and_system_errors_name_the_path(pyarrow_file, tmp_path):
    import os

    path, table = pyarrow_file
    wanted = table.column("i64").to_pylist()[::ROW_GROUP]  # one id in every row group
    handle = io.BytesIO(path.read_bytes())
    mixed = candidates([path, handle, str(path)], "i64", wanted)
    alone = candidates([path], "i64", wanted)
    assert [g for s, g in mixed if s is path] == [g for _, g in alone]
    assert [s for s, _ in mixed] == [path] * len(alone) + [handle] * len(alone) + [str(path)] * len(alone)
    assert len(alone) == pq.ParquetFile(path).metadata.num_row_groups
    with pytest.raises(FileNotFoundError) as missing:
        candidates([path, tmp_path / "missing.parquet"], "i64", wanted)
    assert missing.value.filename == str(tmp_path / "missing.parquet")
    with pytest.raises(IsADirectoryError):
        candidates([tmp_path], "i64", wanted)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="Illegal seek"):  # refused at once: no writer is waited for
        candidates([fifo], "i64", wanted)
    with pytest.raises(KeyError, match="has no column 'nope'"):
        candidates([path], "nope", wanted)


# ------------------------------------------------------------ Spark's writer

SPARK_COLUMNS = {
    "id": "id",
    "text": "format_string('user-%09d-é', id)",
    "i32": "CAST(id * 7 - 3000000 AS INT)",
    "f64": "id * 0.001D + 0.1D",
    "day": "date_add(DATE '1970-01-01', CAST(id - 50000 AS INT))",
}


@pytest.fixture(scope="module")
def spark_file(tmp_path_factory):
    """100,000 rows written by Spark (parquet-mr) in one file of several row groups, a filter on every column."""
    import os
    import shutil
    import sys

    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("a JDK is needed for the Spark writer")
    import subprocess

    out = tmp_path_factory.mktemp("parquet") / "spark"
    options = "".join(
        f".option('parquet.bloom.filter.enabled#{name}', 'true')"
        f".option('parquet.bloom.filter.expected.ndv#{name}', '{ROW_GROUP}')"
        f".option('parquet.bloom.filter.fpp#{name}', '{FPP}')"
        for name in SPARK_COLUMNS
    )
    columns = [f"{expr} AS {name}" for name, expr in SPARK_COLUMNS.items()]
    # Spark runs in a child process: a JVM started in the test process would be
    # reused by every later SparkSession there, whose classpath options
    # (tests/test_spark.py's) would then be ignored.
    script = f"""
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "1g").appName("bloomkit-tests-parquet").getOrCreate())
frame = spark.range({N}).selectExpr(*{columns!r})
frame.coalesce(1).write.option("parquet.block.size", 1_000_000){options}.parquet({str(out)!r})
spark.stop()
"""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=600, env=env)
    (path,) = out.glob("*.parquet")
    return path, pq.read_table(path)


@pytest.mark.integration
def test_every_key_spark_wrote_is_found_and_duckdb_agrees(spark_file):
    duckdb = pytest.importorskip("duckdb")
    path, table = spark_file
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups >= 3 and meta.created_by.startswith("parquet-mr")
    for column in SPARK_COLUMNS:
        start = 0
        filters = []
        for row_group in range(meta.num_row_groups):
            rows = meta.row_group(row_group).num_rows
            f = read_bloom_filter(path, column, row_group)
            assert f.contains_many(table.column(column).slice(start, rows)).all(), (column, row_group)
            filters.append(f)
            start += rows
        absent = list(range(2 * N, 2 * N + 2000)) if column == "id" else _typed_columns(2 * N, 2000)[column].to_pylist()
        sample = table.column(column).to_pylist()[::9973] + absent[::200]
        with duckdb.connect() as con:
            for key in sample:
                assert [key in f for f in filters] == _duckdb_says_maybe(con, path, column, key), (column, key)
    assert {g for _, g in candidates([path], "id", [5, N - 1])} >= {0, meta.num_row_groups - 1}
