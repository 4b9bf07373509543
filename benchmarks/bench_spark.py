"""Spark benchmark: building a Bloom filter from a DataFrame column and applying it.

Compared in one local SparkSession (same data, same run):

* build: ``bloomkit.spark.build_filter`` (mapInArrow + OR-merge), the row-iterator
  RDD route a user finds first (``df.rdd.mapPartitions`` feeding each row to
  ``BloomFilter.add``), and Spark's own ``df.stat.bloomFilter`` (via ``_jdf``);
* apply: ``df.where(might_contain(f, col)).count()`` over the keys and the
  anti-join ``probes.where(~might_contain(f, col)).count()`` over absent keys,
  with each filter (Spark's loaded through ``BloomFilter.from_spark_bytes``);
* the false-positive rate each filter actually gives on absent keys.

Python workers are started (and bloomkit imported in them) by an untimed
warm-up job first, and that cold start is reported on its own: otherwise
whichever route runs first pays it.

``--connect`` runs the same on a local Spark Connect server
(``SparkSession.builder.remote("local[2]")``): only ``build_filter`` and
``might_contain``, since neither the RDD API nor ``df.stat.bloomFilter`` is
reachable from PySpark there.

    python benchmarks/bench_spark.py --rows 1e6 [--connect]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import header, parse_count, print_machine  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=parse_count, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--error-rate", type=float, default=0.01)
    parser.add_argument("--probes", type=parse_count, default=1_000_000)
    parser.add_argument("--connect", action="store_true", help="a local Spark Connect server instead")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import bloomkit
    from bloomkit.spark import build_filter

    info = header("bloomkit benchmark: Bloom filters in PySpark", args)
    builder = SparkSession.builder.remote("local[2]") if args.connect else SparkSession.builder.master("local[2]")
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions)).config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    if not args.connect:
        spark.sparkContext.setLogLevel("ERROR")
    print_machine(info, {"pyspark": pyspark.__version__, "bloomkit": "this checkout"})
    n = args.rows
    keys = spark.range(0, n, 1, args.partitions).select(F.concat(F.lit("https://example.org/item/"), F.col("id").cast("string")).alias("url")).cache()
    keys.count()
    probes = spark.range(n, n + args.probes, 1, args.partitions).select(F.concat(F.lit("https://example.org/item/"), F.col("id").cast("string")).alias("url")).cache()
    probes.count()
    p = args.error_rate

    def warm_up(batches):
        import pyarrow as pa

        import bloomkit  # noqa: F401  (what every route's workers import)

        rows = sum(batch.num_rows for batch in batches)
        yield pa.RecordBatch.from_arrays([pa.array([rows])], names=["n"])

    t_cold, _ = timed(lambda: keys.mapInArrow(warm_up, "n long").collect())
    t_warm, _ = timed(lambda: keys.mapInArrow(warm_up, "n long").collect())

    t_arrow, f_arrow = timed(lambda: build_filter(keys, "url", capacity=n, error_rate=p))

    def rdd_route():
        def part(rows):
            f = bloomkit.BloomFilter(n, p)
            for row in rows:
                f.add(row[0])
            yield f.to_bytes()

        merged = None
        for blob in keys.rdd.mapPartitions(part).toLocalIterator():
            g = bloomkit.BloomFilter.from_bytes(blob)
            merged = g if merged is None else merged | g
        return merged

    routes = [("bloomkit build_filter (mapInArrow)", t_arrow, f_arrow)]
    if args.connect:  # no RDDs, no _jdf
        # The merge Connect used before partition filters that fit at the
        # driver were collected as they are: a shuffle grouping them first
        # (forced by a COLLECT_BYTES just under slots x filter size), then
        # the same build again, so the two are side by side in one run.
        import bloomkit.spark as bkspark

        slots = bkspark._connect_slots(spark)
        collect_bytes = bkspark.COLLECT_BYTES
        bkspark.COLLECT_BYTES = slots * f_arrow.nbytes - 1
        try:
            t_grouped, f_grouped = timed(lambda: build_filter(keys, "url", capacity=n, error_rate=p))
        finally:
            bkspark.COLLECT_BYTES = collect_bytes
        t_again, f_again = timed(lambda: build_filter(keys, "url", capacity=n, error_rate=p))
        assert f_grouped == f_arrow == f_again
        routes += [
            (f"… partition filters grouped by a shuffle first ({slots - 1} groups)", t_grouped, f_grouped),
            ("bloomkit build_filter again", t_again, f_again),
        ]
        return report(args, spark, keys, probes, t_cold, t_warm, routes)
    t_rdd, f_rdd = timed(rdd_route)

    def spark_sketch():
        java_filter = keys._jdf.stat().bloomFilter("url", n, p)
        out = spark._jvm.java.io.ByteArrayOutputStream()
        java_filter.writeTo(out)
        return bloomkit.BloomFilter.from_spark_bytes(bytes(out.toByteArray()))

    t_spark, f_spark = timed(spark_sketch)
    assert f_rdd == f_arrow

    routes += [("RDD row iterator + BloomFilter.add", t_rdd, f_rdd), ("Spark df.stat.bloomFilter", t_spark, f_spark)]
    report(args, spark, keys, probes, t_cold, t_warm, routes)


def report(args, spark, keys, probes, t_cold, t_warm, routes):
    from bloomkit.spark import might_contain

    n, p, t_arrow = args.rows, args.error_rate, routes[0][1]
    rows = []
    for name, t_build, f in routes:
        t_present, present = timed(lambda: keys.where(might_contain(f, "url")).count())
        t_absent, kept = timed(lambda: probes.where(~might_contain(f, "url")).count())
        rows.append((name, t_build, t_present, present, t_absent, args.probes - kept, f.nbytes))
    kind = "Spark Connect, local[2]" if args.connect else "local[2]"
    print(f"## {n:,} distinct string keys, {args.partitions} partitions, {kind}, error_rate {p}")
    print()
    print(f"Python worker cold start (first Python job, untimed in the rows): {t_cold:.1f} s; the same job warm "
          f"(JVM->Arrow transfer of the column alone): {t_warm:.1f} s.")
    print()
    print(f"filter = `keys.where(might_contain(f, 'url')).count()` over the {n:,} keys; anti-join = "
          f"`probes.where(~might_contain(f, 'url')).count()` over {args.probes:,} absent keys, whose shortfall "
          "gives the measured FPR.")
    print()
    print("| route | build s | vs build_filter | filter s | keys found | anti-join s | measured FPR | filter size |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, t_build, t_present, present, t_absent, false_pos, nbytes in rows:
        print(f"| {name} | {t_build:.1f} | {t_build / t_arrow:.2f}× | {t_present:.1f} | {present:,} / {n:,} | "
              f"{t_absent:.1f} | {false_pos / args.probes:.3%} | {nbytes / 2**20:.1f} MiB |")
    print()
    spark.stop()


if __name__ == "__main__":
    main()
