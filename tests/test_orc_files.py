"""bloomkit.orc: the Bloom filters of ORC files written by real writers (pyarrow's ORC C++ writer, Spark's ORC Java).

Files of 120,000 rows in several stripes, one per compression ORC writers
use, with Bloom filters on int64, string, binary, double and float32
columns: every row's value is in its own stride's filter (no false
negative), the stripes :func:`bloomkit.orc.candidates` returns always
include the stripes holding the keys, the measured false-positive rate is
the writer's requested rate's, and truncated or corrupted files are refused
with ``ValueError``.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

import bloomkit.orc as bo
from bloomkit.orc_bloom import OrcBloomFilter

pa = pytest.importorskip("pyarrow")
orc = pytest.importorskip("pyarrow.orc")

ROWS = 120_000
STRIDE = 10_000
FPP = 0.01
COMPRESSIONS = ["uncompressed", "zlib", "snappy", "lz4", "zstd"]
BLOOM_COLUMNS = ["id", "s", "b", "d", "f"]


def table():
    rng = np.random.default_rng(41)
    ids = rng.integers(-(2**62), 2**62, size=ROWS, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "s": pa.array([f"user-{v:x}" for v in ids]),
            "b": pa.array(
                [int(v).to_bytes(8, "little", signed=True)[: 1 + i % 8] for i, v in enumerate(ids)], pa.binary()
            ),
            "d": rng.normal(0, 1e9, size=ROWS),
            "f": rng.normal(0, 1e4, size=ROWS).astype(np.float32),
            "no_filter": np.arange(ROWS, dtype=np.int64),
        }
    )


TABLE = table()


def write(path, compression, columns=BLOOM_COLUMNS):
    column_ids = [TABLE.column_names.index(name) + 1 for name in columns]  # ORC ids: 0 is the root struct
    orc.write_table(
        TABLE,
        path,
        compression=compression,
        stripe_size=512 * 1024,
        row_index_stride=STRIDE,
        bloom_filter_columns=column_ids,
        bloom_filter_fpp=FPP,
    )
    return path


@pytest.fixture(scope="module", params=COMPRESSIONS)
def orc_file(request, tmp_path_factory):
    if request.param in ("snappy", "lz4", "zstd"):
        pytest.importorskip("cramjam")
    return str(write(tmp_path_factory.mktemp("orc") / f"{request.param}.orc", request.param))


def stripe_rows(path) -> list:
    reader = orc.ORCFile(path)
    return [reader.read_stripe(i).num_rows for i in range(reader.nstripes)]


def keys_of(column: str):
    values = TABLE[column]
    return values.to_numpy() if column in ("id", "d", "f") else values


@pytest.mark.parametrize("column", BLOOM_COLUMNS)
def test_every_row_is_in_its_own_strides_filter(orc_file, column):
    rows = stripe_rows(orc_file)
    assert len(rows) >= 3  # several stripes
    filters = bo.read_bloom_filters(orc_file, column)
    assert len(filters) == sum(-(-n // STRIDE) for n in rows)
    keys = keys_of(column)
    first = np.concatenate([[0], np.cumsum(rows)])
    for entry in filters:
        start = first[entry.stripe] + entry.stride * STRIDE
        end = min(start + STRIDE, first[entry.stripe + 1])
        assert entry.filter.contains_many(keys[start:end]).all(), (entry.stripe, entry.stride)
        assert entry.filter.num_bits == OrcBloomFilter(STRIDE, FPP).num_bits  # ORC sizes each stride's filter


@pytest.mark.parametrize("column", ["id", "s"])
def test_candidates_keep_every_stripe_holding_a_key_and_skip_the_rest(orc_file, column):
    rows = stripe_rows(orc_file)
    first = np.concatenate([[0], np.cumsum(rows)])
    keys = keys_of(column)
    picked = np.random.default_rng(5).choice(ROWS, size=3, replace=False)
    wanted = {int(np.searchsorted(first, r, side="right") - 1) for r in picked}
    found = bo.candidates([orc_file], column, [keys[int(r)].as_py() if column == "s" else keys[int(r)] for r in picked])
    stripes = {stripe for source, stripe in found}
    assert all(source == orc_file for source, _ in found)
    assert wanted <= stripes
    assert len(stripes) <= len(wanted) + 1  # ~1% of stride filters answer a wrong yes
    assert bo.candidates([orc_file], column, []) == []


def test_a_column_without_filters_is_a_candidate_everywhere(tmp_path):
    path = str(write(tmp_path / "f.orc", "zlib"))
    assert bo.read_bloom_filters(path, "no_filter") == []
    assert bo.candidates(path, "no_filter", [-1]) == [(path, i) for i in range(len(stripe_rows(path)))]
    with pytest.raises(
        KeyError, match=r"no column 'nope' \(top-level columns: 'id', 's', 'b', 'd', 'f', 'no_filter'\)"
    ):
        bo.read_bloom_filters(path, "nope")


def test_file_objects_read_like_paths(tmp_path):
    path = str(write(tmp_path / "f.orc", "zlib"))
    with open(path, "rb") as handle:
        data = handle.read()
    from_bytes = bo.read_bloom_filters(io.BytesIO(data), "s")
    assert [(e.stripe, e.stride, e.filter.to_orc_bytes()) for e in from_bytes] == [
        (e.stripe, e.stride, e.filter.to_orc_bytes()) for e in bo.read_bloom_filters(path, "s")
    ]
    source = io.BytesIO(data)
    found = bo.candidates([source], "s", [TABLE["s"][0].as_py()])
    assert found[0] == (source, 0) and all(given is source for given, _ in found)  # sources come back as given


@pytest.mark.parametrize("column", ["id", "s", "d"])
def test_the_core_walk_over_paths_answers_as_the_python_reader(orc_file, column):
    """Local paths are walked in the core (orc_file_skip.hpp); file objects by _OrcFile: same stripes."""
    rng = np.random.default_rng(8)
    present = [TABLE[column][int(r)].as_py() for r in rng.choice(ROWS, size=4, replace=False)]
    absent = ["nobody"] * 3 if column == "s" else [float(v) + 0.5 for v in rng.integers(0, 10**9, 200)]
    for keys in (present, absent, present[:1] + absent):
        keys = [int(k) for k in keys] if column == "id" else keys
        with open(orc_file, "rb") as handle:
            by_python = [stripe for _, stripe in bo.candidates([handle], column, keys)]
        assert [stripe for _, stripe in bo.candidates([orc_file, orc_file], column, keys)] == by_python * 2


def test_many_paths_walked_on_two_threads_answer_in_file_order(tmp_path):
    """From 16 paths on, the core walks the two halves on two threads: same stripes, file order kept."""
    paths = [str(write(tmp_path / f"{c}.orc", c, columns=["id"])) for c in ("uncompressed", "zlib")]
    sources = [paths[i % 2] for i in range(40)]
    keys = TABLE["id"].to_pylist()[:: ROWS // 3]
    with open(paths[0], "rb") as first, open(paths[1], "rb") as second:
        one_each = [[stripe for _, stripe in bo.candidates([handle], "id", keys)] for handle in (first, second)]
    found = bo.candidates(sources, "id", keys)
    assert found == [(source, stripe) for i, source in enumerate(sources) for stripe in one_each[i % 2]]
    assert len(found) >= 40  # every file holds at least one of the keys


def test_damaged_files_on_disk_are_refused_as_file_objects_are(tmp_path):
    """The core leaves any file it cannot read completely to _OrcFile: same errors, same stripes."""
    path = write(tmp_path / "f.orc", "zlib", columns=["id"])
    data = path.read_bytes()
    rng = np.random.default_rng(9)
    damaged = [data[:end] for end in range(0, len(data), max(1, len(data) // 40))]
    damaged += [data[: len(data) - cut] for cut in range(1, 80, 3)]
    for at in rng.integers(0, len(data), size=150):
        bad = bytearray(data)
        bad[int(at)] ^= 1 << int(rng.integers(0, 8))
        damaged.append(bytes(bad))
    keys = TABLE["id"].to_pylist()[::7919]
    outcomes = {"same error": 0, "same stripes": 0}

    def outcome(source):
        try:
            return [stripe for _, stripe in bo.candidates([source], "id", keys)]
        except (ValueError, KeyError) as error:
            return type(error), str(error).replace(repr(source), str(target))

    for i, content in enumerate(damaged):
        target = tmp_path / f"damaged-{i}.orc"
        target.write_bytes(content)
        from_disk, from_object = outcome(target), outcome(io.BytesIO(content))
        assert from_disk == from_object, i
        outcomes["same stripes" if isinstance(from_disk, list) else "same error"] += 1
    assert outcomes["same error"] > 40 and outcomes["same stripes"] > 20, outcomes
    with pytest.raises(FileNotFoundError):
        bo.candidates([path, tmp_path / "missing.orc"], "id", keys)
    with pytest.raises(KeyError, match=r"no column 'nope' \(top-level columns: 'id',"):
        bo.candidates([path], "nope", keys)


@pytest.mark.statistical
@pytest.mark.parametrize("column", ["id", "s", "d"])
def test_false_positive_rate_is_the_writers_requested_rate(tmp_path, column):
    path = str(write(tmp_path / "f.orc", "zlib"))
    rng = np.random.default_rng(77)
    absent = {
        "id": rng.integers(-(2**63), -(2**62) - 1, size=20_000, dtype=np.int64),
        "s": pa.array([f"absent-{i}" for i in range(20_000)]),
        "d": rng.normal(0, 1e9, size=20_000) + 0.5,
    }[column]
    filters = bo.read_bloom_filters(path, column)
    rate = np.mean([entry.filter.contains_many(absent).mean() for entry in filters])
    # Each stride's filter holds 10,000 keys at 1%: the mean over 12+ filters
    # of 20,000 probes each is within a few tenths of a percent of it.
    assert 0.005 < rate < 0.02, rate


# -- truncated and corrupted files: ValueError, never a crash or a wrong "no"
def test_a_file_cut_anywhere_is_refused(tmp_path):
    path = write(tmp_path / "f.orc", "zlib", columns=["id"])
    data = path.read_bytes()
    for end in sorted({*range(0, 64), *range(len(data) - 600, len(data)), *range(0, len(data), len(data) // 50)}):
        with pytest.raises(ValueError, match="not a readable ORC file"):
            bo.read_bloom_filters(io.BytesIO(data[:end]), "id")


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy"])
def test_corrupted_bytes_are_refused_or_read_without_crashing(tmp_path, compression):
    if compression == "snappy":
        pytest.importorskip("cramjam")
    path = write(tmp_path / "f.orc", compression, columns=["id"])
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(3)
    outcomes = {"refused": 0, "read": 0}
    for _ in range(300):
        corrupt = bytearray(data)
        at = int(rng.integers(0, len(data)))
        corrupt[at] ^= 1 << int(rng.integers(0, 8))
        try:
            bo.read_bloom_filters(io.BytesIO(bytes(corrupt)), "id")
            outcomes["read"] += 1
        except (ValueError, KeyError):
            outcomes["refused"] += 1
    # Only ValueError/KeyError escape (anything else fails the test); flips in
    # the tail and the filters' framing are refused, flips inside the bits read.
    assert outcomes["refused"] > 0 and outcomes["read"] > 0, outcomes


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def postscript(*fields, magic=b"ORC") -> bytes:
    """A PostScript of (field number, varint) pairs and the magic, then its 1-byte length."""
    message = b"".join(_varint(n << 3) + _varint(v) for n, v in fields) + _varint(8000 << 3 | 2) + b"\x03" + magic
    return message + bytes([len(message)])


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "0 bytes is too short"),
        (b"PAR1" + bytes(20), "does not start with 'ORC'"),
        (b"ORC" + bytes(10) + b"\x00", "PostScript length 0"),
        (b"ORC" + bytes(4) + b"\xff", "PostScript length 255 does not fit"),
        (b"ORC" + postscript((1, 5)), r"footer \(5 bytes\) and metadata \(0\) do not fit the file"),
        (b"ORC" + bytes(3) + postscript((1, 5), (5, 2)), r"footer \(5 bytes\) and metadata \(2\) do not fit"),
        (b"ORC" + bytes(9) + postscript((1, 1), (2, 3)), "compression LZO is not supported"),
        (b"ORC" + bytes(9) + postscript((1, 1), (3, 2**25)), "block size 33,554,432 is outside"),
        (b"ORC" + bytes(9) + postscript((1, 1), magic=b"ORX"), "does not end with the magic"),
        (b"ORC" + b"\x1a\x02\x08\x01" + postscript((1, 4)), r"stripe 0 \(bytes 1 to 1\) lies outside the data"),
        (b"ORC" + b"\x1a\x09" + postscript((1, 2)), "field 3 claims 9 bytes but 0 are left"),
    ],
)
def test_hostile_tails_are_refused_with_the_reason(data, why):
    with pytest.raises(ValueError, match=why):
        bo.read_bloom_filters(io.BytesIO(data), "id")


def test_a_zlib_chunk_inflating_past_the_block_size_is_refused(tmp_path):
    # A footer whose one chunk inflates to 1 MiB while the file says 4 KiB blocks.
    import zlib

    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = deflate.compress(bytes(1 << 20)) + deflate.flush()
    chunk = (len(bomb) << 1).to_bytes(3, "little") + bomb
    data = b"ORC" + chunk + postscript((1, len(chunk)), (2, 1), (3, 4096))
    with pytest.raises(ValueError, match="truncated or larger than the block size"):
        bo.read_bloom_filters(io.BytesIO(data), "id")


def _footer_message() -> bytes:
    """A Footer of no stripes whose schema is a struct with one long column, "id"."""

    def message(number: int, value: bytes) -> bytes:
        return _varint(number << 3 | 2) + _varint(len(value)) + value

    root = _varint(1 << 3) + _varint(12) + message(2, b"\x01") + message(3, b"id")  # STRUCT, subtype 1, "id"
    long_type = _varint(1 << 3) + _varint(4)  # LONG
    return message(4, root) + message(4, long_type)


def _file_with_zlib_footer(body: bytes, block_size: int) -> bytes:
    """An ORC file whose Footer is one compressed chunk holding ``body``."""
    chunk = (len(body) << 1).to_bytes(3, "little") + body
    return b"ORC" + chunk + postscript((1, len(chunk)), (2, 1), (3, block_size))


@pytest.mark.parametrize(
    ("case", "body", "block", "why"),
    [
        ("whole stream", "deflate", None, None),
        ("exactly the block size", "deflate", 0, None),
        ("bytes after the stream's end", "deflate+junk", None, None),
        ("one byte past the block size", "deflate", -1, "is truncated or larger than the block size"),
        ("cut short", "deflate-cut", None, "is truncated or larger than the block size"),
        ("corrupt", "garbage", None, r"is corrupt \(Error -3 while decompressing data"),
        ("empty", "empty", None, "is truncated or larger than the block size"),
        ("zlib-wrapped, not raw", "wrapped", None, r"is corrupt \(Error -3"),
    ],
)
def test_zlib_chunks_on_disk_answer_as_the_python_reader(tmp_path, case, body, block, why):
    """ZLIB chunks the core inflates (bloomkit/zlib/raw_deflate.hpp) are accepted and refused exactly as orc.py's."""
    import zlib

    footer = _footer_message()
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = deflate.compress(footer) + deflate.flush()
    chunk_body = {
        "deflate": stream,
        "deflate+junk": stream + b"\x07\xff trailing",
        "deflate-cut": stream[:-2],
        "garbage": b"\xff" * 16,
        "empty": b"",
        "wrapped": zlib.compress(footer),
    }[body]
    block_size = 1 << 16 if block is None else len(footer) + block
    data = _file_with_zlib_footer(chunk_body, block_size)
    path = tmp_path / "f.orc"
    path.write_bytes(data)
    keys = [1, 2, 3]
    if why is None:
        assert bo.candidates([path], "id", keys) == [] == bo.candidates([io.BytesIO(data)], "id", keys)
    else:
        messages = []
        for source in (path, io.BytesIO(data)):
            with pytest.raises(ValueError, match=f"not a readable ORC file: a ZLIB chunk of the Footer {why}") as error:
                bo.candidates([source], "id", keys)
            messages.append(str(error.value).replace(str(path), "<file>").replace(repr(source), "<file>"))
        assert messages[0] == messages[1]
    # Whether the core read the file itself (no chunk handed to Python's inflater) or left it to orc.py.
    core = bo._core.OrcSkipCore("id", np.zeros((1, 2), dtype=np.int32))
    handed = []
    kind, _ = core._run([os.fsencode(path)], 0, lambda *chunk: handed.append(chunk) or b"")
    if core._inflates_zlib:
        assert (kind, handed) == ((0, []) if why is None else (1, []))
    else:
        assert len(handed) == 1


def test_zlib_files_are_walked_without_python_and_other_codecs_through_it(tmp_path):
    """With zlib in the extension no ZLIB chunk is handed to Python (the GIL stays released); SNAPPY's are."""
    if not bo._core.OrcSkipCore._inflates_zlib:
        pytest.skip("the extension was built without zlib: ZLIB chunks go to Python's zlib module")
    paths = [os.fsencode(write(tmp_path / "zlib.orc", "zlib", columns=["id"]))] * 20  # two threads
    keys = TABLE["id"].to_pylist()[:: ROWS // 3]
    pairs = np.ascontiguousarray(np.concatenate(OrcBloomFilter(1, 0.5)._key_batches(keys)))
    handed = []

    def inflate(compression, chunk, block_size):
        handed.append(compression)
        return bo._inflate_for_core(compression, chunk, block_size)

    core = bo._core.OrcSkipCore("id", pairs)
    assert core._run(paths, 0, inflate) == (0, 0)  # walked to the end
    assert handed == []
    with open(paths[0], "rb") as handle:
        expected = [stripe for _, stripe in bo.candidates([handle], "id", keys)]
    assert [tuple(p) for p in core._candidates.tolist()] == [(i, s) for i in range(20) for s in expected]
    pytest.importorskip("cramjam")
    snappy = os.fsencode(write(tmp_path / "snappy.orc", "snappy", columns=["id"]))
    core = bo._core.OrcSkipCore("id", pairs)
    assert core._run([snappy], 0, inflate)[0] == 0
    assert handed and set(handed) == {2}  # SNAPPY chunks, through Python


# -- written by Spark (ORC's Java writer) -------------------------------------
@pytest.fixture(scope="module")
def spark_orc_dir(tmp_path_factory):
    pytest.importorskip("pyspark")
    import shutil
    import sys

    if shutil.which("java") is None:
        pytest.skip("a JDK is needed for Spark")
    import subprocess

    path = str(tmp_path_factory.mktemp("spark_orc") / "table")
    # Spark runs in a child process: a JVM started here would be reused by
    # every later SparkSession of the test process, whose classpath options
    # (tests/test_spark.py's) would then be ignored. The rows are generated in
    # the JVM: distinct longs, their hex strings, doubles with fractions.
    script = f"""
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .appName("bloomkit-orc-files").getOrCreate())
frame = spark.range({ROWS}, numPartitions=2).selectExpr(
    "id * 2654435761 - 40000000000000 AS id", "concat('user-', hex(id * 7919)) AS s",
    "CAST(id AS DOUBLE) / 3 + 0.1 AS d")
(frame.write.option("orc.bloom.filter.columns", "id,s,d").option("orc.bloom.filter.fpp", "{FPP}")
 .option("orc.stripe.size", str(32 * 1024)).option("orc.row.index.stride", "{STRIDE}").orc({path!r}))
spark.stop()
"""
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=600)
    # The rows of each part file, in file order, as Spark wrote them.
    parts = sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".orc"))
    return [(part, orc.ORCFile(part).read()) for part in parts]


@pytest.mark.integration
@pytest.mark.parametrize("column", ["id", "s", "d"])
def test_spark_written_files_have_no_false_negatives(spark_orc_dir, column):
    total = 0
    for part, rows in spark_orc_dir:
        filters = bo.read_bloom_filters(part, column)
        stripes = {entry.stripe for entry in filters}
        assert len(stripes) >= 2  # several stripes per file
        keys = rows[column].to_numpy() if column != "s" else rows[column]
        first, stripe_starts = 0, {}
        reader = orc.ORCFile(part)
        for stripe in range(reader.nstripes):
            stripe_starts[stripe] = first
            first += reader.read_stripe(stripe).num_rows
        for entry in filters:
            start = stripe_starts[entry.stripe] + entry.stride * STRIDE
            end = min(start + STRIDE, stripe_starts.get(entry.stripe + 1, first))
            assert entry.filter.contains_many(keys[start:end]).all()
            total += end - start
    assert total == ROWS
    part, rows = spark_orc_dir[0]
    picked = [rows[column][i].as_py() for i in (0, len(rows) // 2, len(rows) - 1)]
    found = bo.candidates([p for p, _ in spark_orc_dir], column, picked)
    assert {p for p, _ in found} >= {part}
