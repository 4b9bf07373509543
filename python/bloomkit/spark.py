"""PySpark integration: build a Bloom filter from a DataFrame column, filter rows with it.

Needs pyspark and pyarrow (``pip install 'bloomkit[spark]'``).

* :func:`build_filter` builds one filter per task slot from Arrow batches
  (``mapInArrow``; each batch goes to C++ in one ``update`` call without a
  per-row Python loop) and ORs the partition filters on the driver. The
  result is byte-equal to a :class:`bloomkit.BloomFilter` built locally from
  the same keys: all partition filters share one size and seed, which is what
  makes them mergeable.
* :func:`might_contain` is a vectorised pandas UDF. The filter is broadcast
  once; each Python worker process deserialises it once per broadcast
  (a cache keyed by the broadcast id) and reuses it for every batch.

Spark's own sketch (``df.stat.bloomFilter``) is readable and writable with
``bloomkit.BloomFilter.from_spark_bytes`` / ``SparkBloomFilter.to_spark_bytes``.
"""

from __future__ import annotations

import contextlib
import math
import uuid

from .bloom import BloomFilter
from .spark_sketch import SparkBloomFilter

__all__ = ["build_filter", "might_contain"]

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
    # One filter per task slot, not per partition: every partition filter is
    # the full size, so 200 partitions would ship and OR 200 full filters.
    # coalesce merges partitions without a shuffle, one task per core.
    slots = df.sparkSession.sparkContext.defaultParallelism
    if keys.rdd.getNumPartitions() > slots:
        keys = keys.coalesce(slots)
    if capacity is None:
        estimate = keys.select(F.approx_count_distinct("key", rsd=_RSD)).first()[0]
        capacity = max(1, math.ceil(estimate * _HEADROOM))
    empty = BloomFilter(capacity, error_rate, seed=seed)  # validates the arguments on the driver
    capacity, error_rate = empty.capacity, empty.error_rate

    def build_partition(batches):
        import pyarrow as pa

        partition = BloomFilter(capacity, error_rate, seed=seed)
        for batch in batches:
            partition.update(batch.column(0))
        yield pa.RecordBatch.from_arrays([pa.array([partition.to_bytes()], pa.binary())], names=["filter"])

    blobs = keys.mapInArrow(build_partition, "filter binary")
    with _build_batches(df.sparkSession):
        if blobs.rdd.getNumPartitions() * empty.nbytes > COLLECT_BYTES:
            merged = blobs.rdd.map(lambda row: row[0]).treeReduce(_union_frames)
            return BloomFilter.from_bytes(merged)
        rows = blobs.collect()
    result = empty
    for row in rows:
        result |= BloomFilter.from_bytes(row[0])
    return result


def _union_frames(a: bytes, b: bytes) -> bytes:
    merged = BloomFilter.from_bytes(a)
    merged |= BloomFilter.from_bytes(b)
    return merged.to_bytes()


# -- might_contain --------------------------------------------------------
# broadcast token (one per might_contain call) -> filter, per Python worker process.
_FILTERS: dict = {}
# broadcast id -> how many times this process deserialised it (tests read it).
_LOADS: dict = {}


def _filter_for(bid: str, broadcast):
    cached = _FILTERS.get(bid)
    if cached is None:
        kind, data = broadcast.value
        cached = SparkBloomFilter.from_spark_bytes(data) if kind == "spark" else BloomFilter.from_bytes(data)
        _FILTERS[bid] = cached
        _LOADS[bid] = _LOADS.get(bid, 0) + 1
    return cached


def might_contain(filter, column):
    """A boolean Column: whether each value of ``column`` is (probably) in ``filter``.

    ``filter`` is a :class:`bloomkit.BloomFilter` (or a ``SparkBloomFilter``).
    Use it as ``df.where(might_contain(f, "url"))``, or ``~might_contain(...)``
    for the rows certainly not in the filter (an anti-join). Null values give
    null, so they are dropped by both.
    """
    import pandas as pd
    from pyspark import SparkContext
    from pyspark.sql.functions import pandas_udf

    if isinstance(filter, SparkBloomFilter):
        payload = ("spark", filter.to_spark_bytes())
    elif isinstance(filter, BloomFilter):
        payload = ("bloomkit", filter.to_bytes())
    else:
        raise TypeError(f"might_contain needs a bloomkit BloomFilter or SparkBloomFilter, got {type(filter).__name__}")
    broadcast = SparkContext.getOrCreate().broadcast(payload)
    bid = uuid.uuid4().hex  # names this broadcast in the workers' caches

    def contains(keys):
        present = keys.notna().to_numpy()
        result = pd.Series(pd.NA, index=keys.index, dtype="boolean")
        if present.any():
            values = keys[present]
            if values.dtype.kind == "f":  # an integer column with nulls arrives as float64
                values = values.astype("int64")
            result[present] = _filter_for(bid, broadcast).contains_many(values)
        return result

    # Real annotations (this module's are strings): Spark reads them to pick the UDF kind.
    contains.__annotations__ = {"keys": pd.Series, "return": pd.Series}
    return pandas_udf(contains, "boolean")(_column(column))
