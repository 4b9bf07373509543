# Hidden setup of the Spark snippets (tests/test_doc_snippets.py): a local
# Spark Connect session as `spark` (the snippets' own getOrCreate() returns
# it), and the DataFrames and bytes a reader would already have: `df` and
# `urls_df` of URLs, `other_df` and `events_df` of URLs partly among them,
# `blob` (what Spark's df.stat.bloomFilter(...).writeTo wrote).
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bloomkit.spark_sketch import SparkBloomFilter

os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
spark = SparkSession.builder.remote("local[2]").config("spark.sql.shuffle.partitions", "2").getOrCreate()


def _urls(ids):
    return ids.select(F.concat(F.lit("https://example.org/"), F.col("id").cast("string")).alias("url"))


df = urls_df = _urls(spark.range(10_000))
other_df = events_df = _urls(spark.range(0, 20_000, 7))
_spark_filter = SparkBloomFilter(10_000, 0.01)
_spark_filter.update(f"https://example.org/{i}" for i in range(10_000))
blob = _spark_filter.to_spark_bytes()
