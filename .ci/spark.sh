#!/usr/bin/env bash
# CI: tests/test_spark.py starts a local SparkSession and a local Spark Connect
# server (pyspark[connect] from the [test] extra) and compiles
# tests/spark_jvm/BloomCheck.java, so it needs a JDK.
set -euo pipefail
if ! command -v javac >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
javac -version
# Spark Connect's client dependencies (grpcio, protobuf, zstandard...) come with
# the [test] extra: .ci/run checks them once the README's installs are done.
