"""PySpark integration: build a Bloom filter from a DataFrame column, filter rows with it.

Needs pyspark and pyarrow (``pip install 'bloomkit[spark]'``).

Every function works on a classic session and on Spark Connect (``SparkSession.builder.remote``,
serverless and shared clusters): a Connect session is recognised once per call and nothing then
touches ``sparkContext``, py4j, RDDs or broadcast variables.

* :func:`build_filter` builds one filter per task slot from Arrow batches
  (``mapInArrow``; each batch goes to C++ in one ``update`` call without a
  per-row Python loop) and ORs the partition filters: on the driver, fetched
  as Arrow, when they total at most ``COLLECT_BYTES``; else merged on the
  executors first (classic: a ``treeReduce``; Connect: a second Arrow pass
  after a shuffle). The result is byte-equal to a
  :class:`bloomkit.BloomFilter` built locally from the same keys: all
  partition filters share one size and seed, which is what makes them mergeable.
* :func:`might_contain` is a vectorised UDF (``arrow_udf`` on Spark >= 4.1,
  a pandas UDF before). The filter reaches the workers once
  (``_spark_ship.py``: a broadcast, the UDF itself, or a file artifact) and
  each Python worker process loads it once and reuses it for every batch.
* :func:`register` makes it a SQL function: ``SELECT ... WHERE name(url)``.

Spark's own sketch (``df.stat.bloomFilter``) is readable and writable with
``bloomkit.BloomFilter.from_spark_bytes`` / ``SparkBloomFilter.to_spark_bytes``.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import warnings

from ._spark_ship import is_connect, ship
from .bloom import BloomFilter

__all__ = ["build_filter", "might_contain", "register"]

# Partition filters are collected in one job and ORed on the driver while
# they total at most this many bytes; beyond it a treeReduce merges them on
# the executors first, so the driver never holds more than a few filters.
COLLECT_BYTES = 256 << 20
# approx_count_distinct's relative standard deviation when sizing from the
# data, and the head-room added so that an underestimate of 2 sigma still
# gets the requested false-positive rate.
_RSD = 0.02
_HEADROOM = 1 + 2 * _RSD
# Rows per Arrow batch while build_filter runs, when the session leaves
# spark.sql.execution.arrow.maxRecordsPerBatch at its default (10,000). Each
# batch is one JVM->Python message and one C++ update call; at 1e5 rows the
# build measured 25 % faster (docs/integrations.md), and a batch of 1e5 URLs
# is a few MB. A value the user set is kept.
_BUILD_BATCH_ROWS = 100_000
_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
# A merged filter leaves the executors of a Spark Connect session in rows of
# at most this many bytes (Spark Connect's own Arrow result batches are 4 MiB).
_RESULT_CHUNK = 4 << 20


@contextlib.contextmanager
def _build_batches(spark):
    """Larger Arrow batches for the duration of one build, unless the user chose a size."""
    if spark.conf.get(_BATCH_CONF, None) is not None:  # None: unset, at Spark's default
        yield
        return
    spark.conf.set(_BATCH_CONF, str(_BUILD_BATCH_ROWS))
    try:
        yield
    finally:
        spark.conf.unset(_BATCH_CONF)


@contextlib.contextmanager
def _without_pandas_warning():
    """Silence PySpark's "does not yet fully support pandas >= 3.0.0" while our UDFs are made.

    PySpark warns whenever it makes a pandas-typed UDF (a pandas UDF, and on a
    classic session mapInArrow too). Ours use only Arrow arrays, or in the
    pandas UDF Series.notna, indexing and astype, which pandas 3 keeps.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        yield


@contextlib.contextmanager
def _one_batch_thread():
    """Large batches on the calling thread only, for the duration of a Spark task's build (in the worker).

    Spark already runs one task per core, so the helper thread a large batch
    would start (bloomkit/parallel.hpp) only competes with the other tasks:
    in 8 interleaved 10^7-key builds on local[2] each was faster with one
    thread, median 1.60 s against 1.75 s (docs/decisions.md).
    """
    from . import _core

    saved = _core._batch_threads()
    _core._set_batch_threads(1)
    try:
        yield
    finally:
        _core._set_batch_threads(saved)


def _column(column):
    from pyspark.sql import functions as F

    return F.col(column) if isinstance(column, str) else column


def build_filter(df, column, capacity=None, error_rate=0.01, *, seed=0) -> BloomFilter:
    """A :class:`bloomkit.BloomFilter` of the non-null values of ``df[column]``.

    ``capacity=None`` sizes the filter from ``approx_count_distinct`` (one
    extra pass over the data, plus 4 % head-room). Values are keys as
    everywhere in bloomkit: strings as UTF-8, binary as bytes, integer
    columns as 64-bit integers.
    """
    from pyspark.sql import functions as F

    keys = df.select(_column(column).alias("key")).where(F.col("key").isNotNull())
    spark = df.sparkSession
    connect = is_connect(spark)  # no sparkContext, RDDs or py4j on a Spark Connect session
    # One filter per task slot, not per partition: every partition filter is
    # the full size, so 200 partitions would ship and OR 200 full filters.
    # coalesce merges partitions without a shuffle, one task per core (and
    # never adds partitions, so Connect, which cannot count them, calls it always).
    if connect:
        slots = _connect_slots(spark)
        keys = keys.coalesce(slots)
    else:
        slots = spark.sparkContext.defaultParallelism
        if keys.rdd.getNumPartitions() > slots:
            keys = keys.coalesce(slots)
    if capacity is None:
        estimate = keys.select(F.approx_count_distinct("key", rsd=_RSD)).first()[0]
        capacity = max(1, math.ceil(estimate * _HEADROOM))
    empty = BloomFilter(capacity, error_rate, seed=seed)  # validates the arguments on the driver
    capacity, error_rate = empty.capacity, empty.error_rate

    def partition_filter(batches) -> BloomFilter:
        partition = BloomFilter(capacity, error_rate, seed=seed)
        with _one_batch_thread():
            for batch in batches:
                partition.update(batch.column(0))
        return partition

    def build_partition(batches):
        import pyarrow as pa

        frame = partition_filter(batches).to_bytes()
        yield pa.RecordBatch.from_arrays([pa.array([frame], pa.binary())], names=["filter"])

    def build_partition_in_chunks(batches):
        yield from _chunk_batches(partition_filter(batches))

    if slots * empty.nbytes <= COLLECT_BYTES:
        # Every partition filter fits at the driver: fetch them as they are,
        # as Arrow, in chunks (Connect refuses messages over 128 MiB), and OR
        # them here, without the shuffle that groups them. A classic
        # collect() of one 12.6 MiB binary row per task instead costs ~0.4 s
        # more at 10^7 keys: its rows travel pickled (docs/integrations.md).
        with _without_pandas_warning():
            chunks = keys.mapInArrow(build_partition_in_chunks, _CHUNK_SCHEMA)
        with _build_batches(spark):
            return _or_chunks(_fetch_chunks(chunks), empty)
    with _without_pandas_warning():
        blobs = keys.mapInArrow(build_partition, "filter binary")
    with _build_batches(spark):
        if connect:
            return _merge_on_connect(blobs, slots, empty)
        merged = blobs.rdd.map(lambda row: row[0]).treeReduce(_union_frames)
    return BloomFilter.from_bytes(merged)


def _connect_slots(spark) -> int:
    """The task slots of a Spark Connect session (``spark.default.parallelism``), without a SparkContext.

    Unset, it is what ``spark.range`` splits into when given no partition
    count (the cluster's default parallelism): its physical plan says, else
    one small job counts them.
    """
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured is not None:
        return max(1, int(configured))
    planned = _planned_range_splits(spark)
    return planned if planned is not None else _range_slots(spark)


# How a physical plan prints a range: "Range (0, 1048576, step=1, splits=2)".
_RANGE_SPLITS = re.compile(r"\bRange \(.*\bsplits=(\d+)\)")


def _planned_range_splits(spark):
    """The partitions ``spark.range`` would make, read from its physical plan (``None`` if it does not say).

    One analysis request instead of a job: 0.03 s against 1.0 s for
    :func:`_range_slots` on a local Connect server (10 % of a 10^7-key build).
    """
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        spark.range(0, 1 << 20).explain()
    match = _RANGE_SPLITS.search(printed.getvalue())
    return max(1, int(match.group(1))) if match else None


def _range_slots(spark) -> int:
    """How many partitions ``spark.range`` makes when given no count: the default parallelism."""
    from pyspark.sql import functions as F

    # Projected first: Spark refuses a nondeterministic expression inside an aggregate.
    partitions = spark.range(0, 1 << 20).select(F.spark_partition_id().alias("partition"))
    return partitions.agg(F.max("partition")).first()[0] + 1


def _merge_on_connect(blobs, slots: int, empty: BloomFilter) -> BloomFilter:
    """OR the partition filters without the RDD API: a shuffle into ``groups`` Arrow passes, then the driver.

    ``groups`` keeps what reaches the driver within ``COLLECT_BYTES``.
    """
    groups = max(1, min(slots, COLLECT_BYTES // empty.nbytes))

    def merge_group(batches):
        merged = None
        for batch in batches:
            for blob in batch.column(0):
                partition = BloomFilter.from_bytes(blob.as_py())
                if merged is None:
                    merged = partition
                else:
                    merged |= partition
        if merged is not None:
            yield from _chunk_batches(merged)

    with _without_pandas_warning():
        merged = blobs.repartition(groups).mapInArrow(merge_group, _CHUNK_SCHEMA)
    return _or_chunks(_fetch_chunks(merged), empty)


# A filter travels back from a Connect task as rows of (filter id, offset,
# bytes) of at most _RESULT_CHUNK bytes: a Spark Connect client refuses any
# message above 128 MiB.
_CHUNK_SCHEMA = "grp string, start long, chunk binary"


def _chunk_batches(merged: BloomFilter):
    """Arrow batches of ``merged``'s frame in ``_RESULT_CHUNK`` pieces (runs in a Spark task)."""
    import uuid

    import pyarrow as pa

    frame = merged.to_bytes()
    group = uuid.uuid4().hex
    for start in range(0, len(frame), _RESULT_CHUNK):
        chunk = pa.array([frame[start : start + _RESULT_CHUNK]], pa.binary())
        yield pa.RecordBatch.from_arrays(
            [pa.array([group]), pa.array([start], pa.int64()), chunk], names=["grp", "start", "chunk"]
        )


def _fetch_chunks(chunks):
    """The rows of a ``_CHUNK_SCHEMA`` DataFrame at the driver, as ``(grp, start, chunk)`` tuples.

    ``toArrow`` (PySpark >= 4.0, classic and Connect) moves the chunks as
    Arrow record batches; older classic sessions collect pickled Rows.
    """
    if hasattr(chunks, "toArrow"):
        table = chunks.toArrow()
        return zip(*(table.column(name).to_pylist() for name in ("grp", "start", "chunk")))
    return ((row.grp, row.start, row.chunk) for row in chunks.collect())


def _or_chunks(rows, empty: BloomFilter) -> BloomFilter:
    """The OR of ``empty`` and every filter whose ``(grp, start, chunk)`` rows are in ``rows`` (at the driver)."""
    frames: dict = {}
    for group, start, chunk in rows:
        frames.setdefault(group, []).append((start, chunk))
    result = empty
    for chunks in frames.values():
        result |= BloomFilter.from_bytes(b"".join(chunk for _, chunk in sorted(chunks)))
    return result


def _union_frames(a: bytes, b: bytes) -> bytes:
    merged = BloomFilter.from_bytes(a)
    merged |= BloomFilter.from_bytes(b)
    return merged.to_bytes()


# -- might_contain and SQL ------------------------------------------------
def _session_of(column):
    """The active session (``None`` on a classic driver that has only a SparkContext)."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None and is_connect(column):
        raise ValueError("might_contain on a Spark Connect column needs an active Spark Connect session")
    return session


def _contains_udf(filter, session):
    """A vectorised UDF ``key -> bool`` (null -> null) over ``filter``, shipped to ``session``'s workers."""
    shipped = ship(filter, session)
    try:
        from pyspark.sql.functions import arrow_udf  # Spark >= 4.1: Arrow arrays in and out, no pandas
    except ImportError:
        return _pandas_contains_udf(shipped)

    def contains(keys):
        import numpy as np
        import pyarrow as pa

        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if not keys.null_count:
            return pa.array(shipped.get().contains_many(keys), pa.bool_())
        valid = keys.is_valid()
        present = valid.to_numpy(zero_copy_only=False)
        hits = np.zeros(len(keys), dtype=bool)
        hits[present] = shipped.get().contains_many(keys.filter(valid))
        return pa.array(hits, pa.bool_(), mask=~present)

    return arrow_udf(contains, "boolean")


def _pandas_contains_udf(shipped):
    """The same UDF on Spark < 4.1, through pandas."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    def contains(keys):
        present = keys.notna().to_numpy()
        result = pd.Series(pd.NA, index=keys.index, dtype="boolean")
        if present.any():
            values = keys[present]
            if values.dtype.kind == "f":  # an integer column with nulls arrives as float64
                values = values.astype("int64")
            result[present] = shipped.get().contains_many(values)
        return result

    # Real annotations (this module's are strings): Spark reads them to pick the UDF kind.
    contains.__annotations__ = {"keys": pd.Series, "return": pd.Series}
    with _without_pandas_warning():
        return pandas_udf(contains, "boolean")


def might_contain(filter, column):
    """A boolean Column: whether each value of ``column`` is (probably) in ``filter``.

    ``filter`` is a :class:`bloomkit.BloomFilter`, a
    :class:`bloomkit.BinaryFuseFilter` (or a ``SparkBloomFilter``). Use it as ``df.where(might_contain(f, "url"))``, or ``~might_contain(...)``
    for the rows certainly not in the filter (an anti-join). Null values give
    null, so they are dropped by both. Works on classic and Spark Connect
    sessions (the active session, or the one ``column`` belongs to).
    """
    column = _column(column)
    session = _session_of(column)
    return _contains_udf(filter, session)(column)


def register(spark, name, filter) -> None:
    """Register ``filter`` as the SQL function ``name(key) -> boolean`` of ``spark``.

    Then ``spark.sql("SELECT ... WHERE name(url)")`` keeps the rows probably in
    the filter (``NOT name(url)``: certainly not in it; null keys give null).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a SQL function name must be an identifier, got {name!r}")
    spark.udf.register(name, _contains_udf(filter, spark))
