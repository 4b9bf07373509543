"""bloomkit.spark and Spark byte compatibility, against a real local SparkSession.

The module runs twice: on a classic session (local[2]) and on a real local
Spark Connect server (``SparkSession.builder.remote("local[2]")``), one
session at a time (pytest runs every test of one before starting the other).
Spark's own BloomFilter is queried inside the JVM through
tests/spark_jvm/BloomCheck.java (compiled here with javac), which checks many
keys per py4j call: those tests need the classic session's py4j gateway.
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import shutil
import subprocess
import sys
import threading
import types
import warnings

import numpy as np
import pytest

import bloomkit
from bloomkit import _core
from bloomkit.spark_sketch import SparkBloomFilter, spark_bloom_params
from support import random_strings

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
import bloomkit._spark_ship as ship  # noqa: E402
import bloomkit.spark as bkspark  # noqa: E402

pytestmark = pytest.mark.integration

HERE = os.path.dirname(__file__)
N = 100_000


COMMON_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    "spark.python.worker.reuse": "true",
    "spark.driver.memory": "1g",
}
# Tests that read Spark's own sketch through py4j run on the classic session only.
classic_only = pytest.mark.parametrize("spark", ["classic"], indirect=True)
connect_only = pytest.mark.parametrize("spark", ["connect"], indirect=True)


@pytest.fixture(scope="module", params=["classic", "connect"])
def spark(request, tmp_path_factory):
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        pytest.skip("a JDK (java, javac) is needed for the Spark tests")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    if request.param == "connect":
        try:
            from pyspark.sql.connect.utils import check_dependencies

            check_dependencies()
        except ImportError as missing:
            pytest.skip(f"Spark Connect needs pyspark[connect]'s dependencies (the [test] extra): {missing}")
        builder = SparkSession.builder.remote("local[2]")
    else:
        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        classes = str(tmp_path_factory.mktemp("spark_jvm"))
        sketch_jar = glob.glob(os.path.join(jars, "spark-sketch*.jar"))
        source = os.path.join(HERE, "spark_jvm", "BloomCheck.java")
        subprocess.run(
            [javac, "-cp", os.pathsep.join(sketch_jar), "-d", classes, source], check=True, capture_output=True
        )
        builder = (
            SparkSession.builder.master("local[2]")
            .config("spark.driver.extraClassPath", classes)
            .config("spark.ui.enabled", "false")
        )
    for key, value in COMMON_CONF.items():
        builder = builder.config(key, value)
    session = builder.appName(f"bloomkit-tests-{request.param}").getOrCreate()
    assert ship.is_connect(session) == (request.param == "connect")
    if request.param == "classic":
        session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def no_jvm_on_connect(request):
    """On a Connect session nothing may reach the JVM through py4j, nor find a SparkContext.

    ``remote("local[2]")`` starts its server from a classic SparkContext in this
    very process, so a stray ``sparkContext``, ``_jvm`` or broadcast would work
    here and fail on a real cluster. For each Connect test the process's
    SparkContext is hidden and every py4j command sent from the test's thread
    is recorded (py4j's own finaliser thread is not ours); there must be none.
    """
    if "spark" not in request.fixturenames or not ship.is_connect(request.getfixturevalue("spark")):
        yield
        return
    from py4j import clientserver, java_gateway
    from pyspark import SparkContext

    calls = []
    test_thread = threading.current_thread()

    def recording(send_command):
        def send(self, command, *args, **kwargs):
            if threading.current_thread() is test_thread:
                calls.append(command[:80])
            return send_command(self, command, *args, **kwargs)

        return send

    with pytest.MonkeyPatch.context() as patch:
        for connection in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
            patch.setattr(connection, "send_command", recording(connection.send_command))
        patch.setattr(SparkContext, "_active_spark_context", None)
        yield
    assert not calls, f"py4j commands on a Spark Connect session: {calls[:3]}"


def jvm_check(spark):
    return spark._jvm.BloomCheck


def le_longs(values) -> bytes:
    return np.asarray(values, dtype=np.int64).astype("<i8").tobytes()


def utf8_and_offsets(keys):
    encoded = [k.encode() for k in keys]
    offsets = np.zeros(len(encoded) + 1, dtype="<i4")
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return b"".join(encoded), offsets.tobytes()


def jvm_strings(spark, blob, keys) -> np.ndarray:
    data, offsets = utf8_and_offsets(keys)
    return np.frombuffer(bytes(jvm_check(spark).mightContainStrings(blob, data, offsets)), dtype=np.uint8).astype(bool)


def jvm_longs(spark, blob, keys) -> np.ndarray:
    return np.frombuffer(bytes(jvm_check(spark).mightContainLongs(blob, le_longs(keys))), dtype=np.uint8).astype(bool)


def spark_stat_filter(spark, df, column, n, fpp) -> bytes:
    java_filter = df._jdf.stat().bloomFilter(column, n, fpp)
    out = spark._jvm.java.io.ByteArrayOutputStream()
    java_filter.writeTo(out)
    return bytes(out.toByteArray())


STRINGS = random_strings(N, seed=11, length=12) + ["", "é", "日本語", "a", "ab", "abc", "abcd", "abcde"]
ABSENT_STRINGS = random_strings(N, seed=12, length=14)
LONGS = np.random.default_rng(13).integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64)
ABSENT_LONGS = np.random.default_rng(14).integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64)


# -- Spark -> bloomkit ------------------------------------------------------
@classic_only
def test_spark_built_string_filter_reads_and_answers_like_spark(spark):
    df = spark.createDataFrame([(s,) for s in STRINGS], "s string").repartition(4)
    blob = spark_stat_filter(spark, df, "s", len(STRINGS), 0.01)
    assert blob[:4] == b"\x00\x00\x00\x02"  # Spark 4.x writes version 2
    loaded = bloomkit.BloomFilter.from_spark_bytes(blob)
    assert isinstance(loaded, SparkBloomFilter) and loaded.version == 2
    assert loaded.contains_many(STRINGS).all()
    np.testing.assert_array_equal(loaded.contains_many(ABSENT_STRINGS), jvm_strings(spark, blob, ABSENT_STRINGS))
    # Built by bloomkit from the same keys and the same sizing: the same bytes.
    mine = bloomkit.BloomFilter(len(STRINGS), 0.01, hashing="spark")
    mine.update(STRINGS)
    assert mine.to_spark_bytes() == blob
    assert loaded.to_spark_bytes() == blob


@classic_only
def test_spark_built_long_filter_reads_and_answers_like_spark(spark):
    df = spark.createDataFrame([(int(v),) for v in LONGS], "v long").repartition(3)
    blob = spark_stat_filter(spark, df, "v", N, 0.02)
    loaded = bloomkit.BloomFilter.from_spark_bytes(blob)
    assert loaded.contains_many(LONGS).all()
    assert loaded.contains_many([int(v) for v in LONGS[:1000]]).all()  # Python ints: same longs
    mine_answers = loaded.contains_many(ABSENT_LONGS)
    np.testing.assert_array_equal(mine_answers, jvm_longs(spark, blob, ABSENT_LONGS))
    assert 0.005 < mine_answers.mean() < 0.04
    mine = bloomkit.BloomFilter(N, 0.02, hashing="spark")
    mine.update(LONGS)
    assert mine.to_spark_bytes() == blob
    # The JVM's BloomFilter.create + putLong: the same bytes again.
    assert bytes(jvm_check(spark).buildLongs(N, 0.02, le_longs(LONGS))) == blob


# -- bloomkit -> Spark --------------------------------------------------------
@classic_only
@pytest.mark.parametrize("version,seed", [(2, 0), (2, -12345), (1, 0)])
def test_bloomkit_written_filters_are_read_by_spark(spark, version, seed):
    strings = SparkBloomFilter(N, 0.01, seed=seed, version=version)
    strings.update(STRINGS)
    blob = strings.to_spark_bytes()
    assert bytes(jvm_check(spark).roundTrip(blob)) == blob
    probes = STRINGS + ABSENT_STRINGS
    theirs = jvm_strings(spark, blob, probes)
    np.testing.assert_array_equal(strings.contains_many(probes), theirs)
    assert theirs[: len(STRINGS)].all()

    longs = SparkBloomFilter(N, 0.01, seed=seed, version=version)
    longs.update(LONGS)
    blob = longs.to_spark_bytes()
    probes = np.concatenate([LONGS, ABSENT_LONGS])
    theirs = jvm_longs(spark, blob, probes)
    np.testing.assert_array_equal(longs.contains_many(probes), theirs)
    assert theirs[:N].all()


# -- build_filter -------------------------------------------------------------
def key_frame(spark, partitions=6):
    rng = np.random.default_rng(21)
    keys = [f"https://example.org/{i}" for i in rng.integers(0, 40_000, size=60_000)]
    rows = [(k if i % 97 else None, int(i)) for i, k in enumerate(keys)]
    return spark.createDataFrame(rows, "url string, n long").repartition(partitions), rows


def test_build_filter_is_byte_equal_to_local_build(spark):
    df, rows = key_frame(spark)
    built = bkspark.build_filter(df, "url", capacity=50_000, error_rate=0.001, seed=5)
    local = bloomkit.BloomFilter(50_000, 0.001, seed=5)
    local.update([url for url, _ in rows if url is not None])
    assert built == local and built.to_bytes() == local.to_bytes()
    ints = bkspark.build_filter(df, "n", capacity=60_000, error_rate=0.01)
    local_ints = bloomkit.BloomFilter(60_000, 0.01)
    local_ints.update(np.array([n for _, n in rows], dtype=np.int64))
    assert ints == local_ints


def test_build_filter_sizes_itself_and_tree_reduces(spark, monkeypatch):
    df, rows = key_frame(spark, partitions=6)
    distinct = len({url for url, _ in rows if url is not None})
    monkeypatch.setattr(bkspark, "COLLECT_BYTES", 0)  # merged with treeReduce
    built = bkspark.build_filter(df, "url", error_rate=0.01)
    assert distinct <= built.capacity <= 1.2 * distinct
    local = bloomkit.BloomFilter(built.capacity, 0.01)
    local.update([url for url, _ in rows if url is not None])
    assert built == local


@pytest.mark.parametrize("groups", [1, 2])
def test_partition_filters_past_collect_bytes_are_merged_before_the_driver(spark, monkeypatch, groups):
    # The 4 task slots' filters do not fit COLLECT_BYTES: classic merges them
    # with treeReduce; Connect shuffles them into at most `groups` Arrow tasks,
    # and only their merged filters reach the driver.
    df, rows = key_frame(spark, partitions=6)
    keys = [url for url, _ in rows if url is not None]
    local = bloomkit.BloomFilter(len(set(keys)), 0.01)
    local.update(keys)
    monkeypatch.setattr(bkspark, "COLLECT_BYTES", groups * local.nbytes)
    received = []
    or_chunks = bkspark._or_chunks

    def counting(chunks, empty):
        chunks = list(chunks)
        received.append(len({group for group, _, _ in chunks}))
        return or_chunks(chunks, empty)

    monkeypatch.setattr(bkspark, "_or_chunks", counting)
    assert bkspark.build_filter(df, "url", capacity=local.capacity, error_rate=0.01) == local
    if ship.is_connect(spark):
        assert len(received) == 1 and 1 <= received[0] <= groups, received
    else:
        assert received == []  # treeReduce: no chunks fetched


def test_partition_filters_come_back_as_arrow_or_as_rows_alike(spark):
    # The driver ORs chunked partition filters fetched with toArrow, or with
    # collect() where the DataFrame has no toArrow (PySpark < 4.0).
    filters = [bloomkit.BloomFilter(40_000, 0.01, seed=3) for _ in range(3)]
    for i, part in enumerate(filters):
        part.update([f"k{i}-{j}" for j in range(5_000)])
    chunk_bytes = 1 << 12  # several chunks per filter, out of order below
    rows = []
    for i, part in enumerate(filters):
        frame = part.to_bytes()
        rows += [(f"g{i}", start, frame[start : start + chunk_bytes]) for start in range(0, len(frame), chunk_bytes)]
    rows.reverse()
    chunks = spark.createDataFrame(rows, bkspark._CHUNK_SCHEMA)
    expected = (filters[0] | filters[1] | filters[2]).to_bytes()
    rows_only = types.SimpleNamespace(collect=chunks.collect)
    for fetched in (chunks, rows_only):
        empty = bloomkit.BloomFilter(40_000, 0.01, seed=3)
        assert bkspark._or_chunks(bkspark._fetch_chunks(fetched), empty).to_bytes() == expected


def test_a_task_builds_on_its_own_thread_and_restores_the_setting():
    # Spark runs a task per core: a task's batches start no helper thread.
    saved = _core._batch_threads()
    try:
        _core._set_batch_threads(2)
        two = _core._batch_threads()
        with bkspark._one_batch_thread():
            assert _core._batch_threads() == 1
        assert _core._batch_threads() == two
        with pytest.raises(KeyError, match="inside"):
            with bkspark._one_batch_thread():
                raise KeyError("inside")
        assert _core._batch_threads() == two
    finally:
        _core._set_batch_threads(saved)


@classic_only
def test_build_filter_makes_one_filter_per_task_slot(spark):
    # 6 partitions, spark.default.parallelism 4: coalesced to 4 tasks, so 4
    # full-size filters are shipped and ORed, not 6.
    df, rows = key_frame(spark, partitions=6)
    context = spark.sparkContext
    assert context.defaultParallelism == 4
    tracker = context.statusTracker()
    context.setJobGroup("bloomkit-build-slots", "build_filter")
    try:
        built = bkspark.build_filter(df, "url", capacity=50_000)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    # Each job's result stage (its last) runs the partition builds.
    result_stages = [
        tracker.getStageInfo(max(tracker.getJobInfo(job).stageIds))
        for job in tracker.getJobIdsForGroup("bloomkit-build-slots")
    ]
    assert result_stages and [stage.numTasks for stage in result_stages] == [4] * len(result_stages)
    local = bloomkit.BloomFilter(50_000, 0.01)
    local.update([url for url, _ in rows if url is not None])
    assert built == local


def test_task_slots_are_known_without_a_spark_context(spark):
    # Connect reads spark.default.parallelism, or, unset, spark.range's partitions from its plan or a job.
    assert bkspark._connect_slots(spark) == 4
    assert bkspark._planned_range_splits(spark) == 4  # local[2] with spark.default.parallelism 4
    assert bkspark._range_slots(spark) == 4


def test_task_slots_come_from_the_plan_and_a_job_only_when_it_does_not_say(monkeypatch):
    class Range:
        def __init__(self, plan):
            self.plan = plan

        def explain(self):
            print(self.plan)

    class Session:  # spark.default.parallelism unset; range(...).explain() prints `plan`
        def __init__(self, plan):
            self.plan = plan
            self.conf = types.SimpleNamespace(get=lambda key, default=None: default)

        def range(self, start, end):
            return Range(self.plan)

    monkeypatch.setattr(bkspark, "_range_slots", lambda spark: 7)  # the job's count
    plan = "== Physical Plan ==\n*(1) Range (0, 1048576, step=1, splits=16)\n"
    assert bkspark._connect_slots(Session(plan)) == 16
    assert bkspark._connect_slots(Session("== Physical Plan ==\n*(1) Range (0, 1048576, step=1)\n")) == 7
    assert bkspark._connect_slots(Session("== Physical Plan ==\nScan ExistingRDD[id#0L]\n")) == 7


def test_build_filter_batch_size_is_scoped_to_the_build(spark, monkeypatch):
    # With the Arrow batch size at Spark's default, build_filter uses larger
    # batches for its own job only; a size the user set is left alone.
    conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
    seen_sizes = []
    real = bkspark._build_batches

    @contextlib.contextmanager
    def spy(session):
        with real(session):
            seen_sizes.append(session.conf.get(conf))
            yield

    monkeypatch.setattr(bkspark, "_build_batches", spy)
    df, rows = key_frame(spark, partitions=3)
    local = bloomkit.BloomFilter(50_000, 0.01)
    local.update([url for url, _ in rows if url is not None])
    spark.conf.unset(conf)
    try:
        assert bkspark.build_filter(df, "url", capacity=50_000) == local
        assert spark.conf.get(conf, None) is None  # back to unset
        spark.conf.set(conf, "3000")
        assert bkspark.build_filter(df, "url", capacity=50_000) == local
        assert spark.conf.get(conf) == "3000"
    finally:
        spark.conf.set(conf, "2000")
    assert seen_sizes == [str(bkspark._BUILD_BATCH_ROWS), "3000"]


def test_build_filter_rejects_bad_arguments_before_running(spark):
    df, _ = key_frame(spark, partitions=2)
    with pytest.raises(ValueError, match="error_rate"):
        bkspark.build_filter(df, "url", capacity=100, error_rate=1.5)
    # A keyed filter's frame cannot be loaded on executors (its key is never
    # serialized): refused on the driver, before any job.
    with pytest.raises(ValueError, match="might_contain needs an unkeyed BloomFilter"):
        bkspark.might_contain(bloomkit.BloomFilter(100, secret_key=b"k" * 16), "url")


# -- might_contain ------------------------------------------------------------
def loads_per_process(spark, df, token) -> dict:
    """pid -> how many times that Python worker loaded the shipment ``token``, asked from a UDF.

    A UDF runs in the same reused SQL worker processes as might_contain's.
    """
    import pyarrow as pa
    from pyspark.sql.functions import arrow_udf

    def loads_here(keys):
        return pa.array([f"{os.getpid()}:{ship._LOADS.get(token, 0)}"] * len(keys))

    reports = {row.r for row in df.select(arrow_udf(loads_here, "string")("k").alias("r")).distinct().collect()}
    per_process: dict = {}
    for report in reports:
        pid, count = report.split(":")
        per_process[pid] = max(per_process.get(pid, 0), int(count))
    return per_process


@contextlib.contextmanager
def shipments():
    """The ShippedFilter of every might_contain / register call in the block."""
    made = []
    real = ship.ship

    def spy(filter, session):
        made.append(real(filter, session))
        return made[-1]

    bkspark.ship, previous = spy, bkspark.ship
    try:
        yield made
    finally:
        bkspark.ship = previous
    assert previous is real


def fpr_bound(p: float, n: int) -> float:
    """p plus four binomial standard deviations: exceeded by chance about once in 30,000 runs."""
    return p + 4 * math.sqrt(p * (1 - p) / n)


def test_might_contain_filters_and_anti_joins(spark):
    from pyspark.sql import functions as F

    f = bloomkit.BloomFilter(len(STRINGS), 0.01)
    f.update(STRINGS)
    df = spark.createDataFrame([(k,) for k in STRINGS + ABSENT_STRINGS] + [(None,)], "k string").repartition(4)
    with warnings.catch_warnings(record=True) as caught, shipments() as made:
        warnings.simplefilter("always")
        kept_column, dropped_column = bkspark.might_contain(f, "k"), ~bkspark.might_contain(f, F.col("k"))
    assert not [w for w in caught if "pandas" in str(w.message)]  # arrow_udf: pandas is never involved
    assert [m.route for m in made] == (["closure"] * 2 if ship.is_connect(spark) else ["broadcast"] * 2)
    kept = {row.k for row in df.where(kept_column).collect()}
    dropped = {row.k for row in df.where(dropped_column).collect()}
    expected = {k for k, hit in zip(STRINGS + ABSENT_STRINGS, f.contains_many(STRINGS + ABSENT_STRINGS)) if hit}
    assert kept == expected and set(STRINGS) <= kept  # no false negative over 100,008 keys
    assert dropped == set(STRINGS + ABSENT_STRINGS) - expected  # nulls in neither
    false_positives = len(kept - set(STRINGS))
    assert 0 < false_positives <= fpr_bound(0.01, len(ABSENT_STRINGS)) * len(ABSENT_STRINGS)
    # ~100 Arrow batches (2,000 rows each) ran through each filter; each
    # Python worker process loaded each at most once.
    for shipped in made:
        per_process = loads_per_process(spark, df, shipped.token)
        assert 1 <= sum(per_process.values()) and all(count <= 1 for count in per_process.values()), per_process


def test_might_contain_ships_a_binary_fuse_filter(spark, monkeypatch):
    # A frozen filter ships like a Bloom filter: broadcast on a classic
    # session; on Connect, past CLOSURE_BYTES (lowered here to force it) as a
    # file artifact that each worker maps with BinaryFuseFilter.open.
    f = bloomkit.BinaryFuseFilter.build(STRINGS)
    monkeypatch.setattr(ship, "CLOSURE_BYTES", f.nbytes - 1)
    df = spark.createDataFrame([(k,) for k in STRINGS + ABSENT_STRINGS] + [(None,)], "k string").repartition(4)
    with shipments() as made:
        column = bkspark.might_contain(f, "k")
    assert made[0].kind == "BinaryFuseFilter"
    assert made[0].route == ("artifact" if ship.is_connect(spark) else "broadcast")
    kept = {row.k for row in df.where(column).collect()}
    probes = STRINGS + ABSENT_STRINGS
    assert kept == {k for k, hit in zip(probes, f.contains_many(probes)) if hit}
    assert set(STRINGS) <= kept  # all 100,008 members
    false_positives = len(kept - set(STRINGS))
    assert 0 < false_positives <= fpr_bound(2**-8, len(ABSENT_STRINGS)) * len(ABSENT_STRINGS)


def test_an_artifact_shipment_is_mapped_by_its_own_class(tmp_path, monkeypatch):
    # What a Connect worker does with a shipped file (no Connect server needed).
    from pyspark import SparkFiles

    for f in (bloomkit.BinaryFuseFilter.build(STRINGS[:1000]), bloomkit.BloomFilter(1000, 0.01)):
        f.save(tmp_path / "shipped.filter")
        monkeypatch.setattr(SparkFiles, "get", lambda name: str(tmp_path / name))
        loaded = ship.ShippedFilter(type(f).__name__, "artifact", "shipped.filter")._load()
        assert type(loaded) is type(f) and loaded == f
        assert loaded.mapped if isinstance(f, bloomkit.BinaryFuseFilter) else loaded._file is not None
        del loaded


def test_might_contain_refuses_keyed_and_unshippable_filters_before_sending():
    keyed = bloomkit.BinaryFuseFilter.build(["a"], secret_key=b"k" * 16)
    with pytest.raises(ValueError, match="might_contain needs an unkeyed BinaryFuseFilter: a secret_key is never"):
        ship.ship(keyed, None)
    with pytest.raises(TypeError, match="needs a bloomkit BloomFilter, BinaryFuseFilter or SparkBloomFilter, got Cuck"):
        ship.ship(bloomkit.CuckooFilter(10), None)


def test_might_contain_ships_a_filter_over_100_mb(spark):
    # Past CLOSURE_BYTES a Connect session ships a file artifact, mapped by each worker.
    f = bloomkit.BloomFilter(80_000_000, 0.01)
    assert f.nbytes >= 100_000_000
    f.update(STRINGS)
    df = spark.createDataFrame([(k,) for k in STRINGS + ABSENT_STRINGS], "k string").repartition(4)
    with shipments() as made:
        column = bkspark.might_contain(f, "k")
    assert made[0].route == ("artifact" if ship.is_connect(spark) else "broadcast")
    kept = sorted(row.k for row in df.where(column).collect())
    probes = STRINGS + ABSENT_STRINGS
    assert kept == sorted(k for k, hit in zip(probes, f.contains_many(probes)) if hit)
    assert set(STRINGS) <= set(kept)  # all 100,008 members
    per_process = loads_per_process(spark, df, made[0].token)
    assert all(count <= 1 for count in per_process.values()), per_process


@connect_only
def test_might_contain_past_the_closure_limit_without_artifacts_is_a_clear_error(spark, monkeypatch):
    # A Spark Connect client before 3.5 has no addArtifacts: past CLOSURE_BYTES
    # the error names the remedies, before anything is sent.
    f = bloomkit.BloomFilter(2_000_000, 0.01)
    f.update(STRINGS)
    before = f.to_bytes()
    monkeypatch.setattr(ship, "CLOSURE_BYTES", 1 << 20)
    monkeypatch.delattr(type(spark), "addArtifacts")
    with pytest.raises(ValueError, match=r"can ship at most 1048576 bytes inside a UDF\. Use PySpark >= 3\.5"):
        bkspark.might_contain(f, "k")
    with pytest.raises(ValueError, match="a classic session, or a smaller filter"):
        bkspark.register(spark, "in_big", f)
    assert f.to_bytes() == before


def test_sql_function_registered_in_one_line(spark):
    f = bloomkit.BloomFilter(20_000, 0.01)
    members = [f"member-{i}" for i in range(20_000)]
    strangers = [f"stranger-{i}" for i in range(20_000)]
    f.update(members)
    spark.createDataFrame([(k,) for k in members + strangers] + [(None,)], "url string").createOrReplaceTempView(
        "bloomkit_urls"
    )
    bkspark.register(spark, "in_members", f)
    kept = {row.url for row in spark.sql("SELECT url FROM bloomkit_urls WHERE in_members(url)").collect()}
    dropped = {row.url for row in spark.sql("SELECT url FROM bloomkit_urls WHERE NOT in_members(url)").collect()}
    expected = {k for k, hit in zip(members + strangers, f.contains_many(members + strangers)) if hit}
    assert kept == expected and set(members) <= kept
    assert dropped == set(members + strangers) - expected  # null: in neither
    with pytest.raises(ValueError, match="must be an identifier"):
        bkspark.register(spark, "in members; DROP", f)


def test_pandas_udf_fallback_answers_alike_without_warnings(spark, monkeypatch):
    # Spark < 4.1 has no arrow_udf: might_contain then makes a pandas UDF,
    # which answers the same, and PySpark's pandas-3 FutureWarning does not
    # reach the user.
    import pyspark.sql.functions

    f = SparkBloomFilter(10_000, 0.01)
    f.update(np.arange(0, 20_000, 2, dtype=np.int64))
    df = spark.range(0, 20_000, 1, 4)
    monkeypatch.delattr(pyspark.sql.functions, "arrow_udf", raising=False)
    made = []
    pandas_udf = bkspark._pandas_contains_udf
    monkeypatch.setattr(bkspark, "_pandas_contains_udf", lambda shipped: made.append(1) or pandas_udf(shipped))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        column = bkspark.might_contain(f, df["id"])
    assert made == [1]
    assert not [w for w in caught if "pandas" in str(w.message)]
    hits = np.array(sorted(row.id for row in df.where(column).collect()))
    np.testing.assert_array_equal(np.flatnonzero(f.contains_many(np.arange(20_000))), hits)


def test_might_contain_with_a_spark_hashing_filter_and_integers(spark):
    f = SparkBloomFilter(10_000, 0.01)
    f.update(np.arange(0, 20_000, 2, dtype=np.int64))
    df = spark.range(0, 20_000, 1, 4)
    hits = np.array(sorted(row.id for row in df.where(bkspark.might_contain(f, "id")).collect()))
    assert set(range(0, 20_000, 2)) <= set(hits.tolist())
    np.testing.assert_array_equal(np.flatnonzero(f.contains_many(np.arange(20_000))), hits)
    with pytest.raises(TypeError, match="needs a bloomkit BloomFilter"):
        bkspark.might_contain(bloomkit.CuckooFilter(100), "id")


# -- Spark format validation (no JVM needed, but kept with its kin) -----------
def test_spark_bytes_are_validated():
    good = SparkBloomFilter(1000, 0.01)
    good.add("x")
    blob = good.to_spark_bytes()
    with pytest.raises(ValueError, match="version 3"):
        SparkBloomFilter.from_spark_bytes(b"\x00\x00\x00\x03" + blob[4:])
    with pytest.raises(ValueError, match="truncated while reading the word count"):
        SparkBloomFilter.from_spark_bytes(blob[:14])
    with pytest.raises(ValueError, match="bytes but its header says"):
        SparkBloomFilter.from_spark_bytes(blob[:-1])
    with pytest.raises(ValueError, match="bytes but its header says"):
        SparkBloomFilter.from_spark_bytes(blob + b"\x00")
    with pytest.raises(ValueError, match="numHashFunctions must be in"):
        SparkBloomFilter.from_spark_bytes(blob[:4] + b"\x00\x00\x00\x00" + blob[8:])
    with pytest.raises(ValueError, match="word count must be in"):
        SparkBloomFilter.from_spark_bytes(blob[:12] + b"\xff\xff\xff\xff")
    with pytest.raises(ValueError, match="header says"):
        SparkBloomFilter.from_spark_bytes(blob[:12] + b"\x7f\xff\xff\xff")  # 16 GiB claimed, not allocated
    with pytest.raises(TypeError):
        SparkBloomFilter.from_spark_bytes("not bytes")
    assert SparkBloomFilter.from_spark_bytes(blob) == good
    with pytest.raises(ValueError, match="hashing must be"):
        bloomkit.BloomFilter(100, hashing="guava")
    with pytest.raises(ValueError, match="no seed"):
        SparkBloomFilter(100, seed=3, version=1)
    with pytest.raises(TypeError, match="unsupported type 'dict'"):
        good.update(["ok", {}])
    assert len(good) == 1


def test_spark_sizing_matches_spark_formulas():
    # BloomFilter.create(100000, 0.03): optimalNumOfBits = 729844, k = 5 (docs/FORMAT.md).
    assert spark_bloom_params(100_000, 0.03) == (729_844, 5)
    f = SparkBloomFilter(100_000, 0.03)
    assert f.num_bits == 64 * -(-729_844 // 64) and f.num_hashes == 5
