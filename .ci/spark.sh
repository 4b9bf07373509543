#!/usr/bin/env bash
# CI: tests/test_spark.py starts a local SparkSession (pyspark from the [test]
# extra) and compiles tests/spark_jvm/BloomCheck.java, so it needs a JDK.
set -euo pipefail
if ! command -v javac >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
javac -version
