#!/usr/bin/env python3
"""The one command that runs a benchmark suite and records its report.

    python benchmarks/run.py --list                       # every suite, one line each
    python benchmarks/run.py SUITE [--what NAME] [--print] [-- SCRIPT ARGS]
    python benchmarks/run.py speed -- --only numpy --batch-sizes 1e7
    python benchmarks/run.py speed --what default-layout-rates -- --no-peers --only rates
    python benchmarks/run.py batch-compute -- 10000000 1000 contains

Runs the suite's script (a Python script with this interpreter; a C++ one is
compiled first against ``cpp/include`` with ``$CXX``, default ``c++``), passes
the arguments after ``--`` to it, shows its progress (stderr) as it runs and
writes its report (stdout) to
``benchmarks/results/YYYY-MM-DD-<what>-<commit>-<machine>.md`` under the header
of ``_common.report_header`` (date, commit, machine, command). ``--print``
prints the report instead of recording it. The scripts also run on their own
and print their report; this is what gives it a name and a header.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# suite -> (script in benchmarks/, what it measures). benchmarks/README.md lists the same.
SUITES = {
    "bloom": ("bench_bloom.py", "BloomFilter vs peer Bloom libraries: insert, lookups, FPR, bits/key"),
    "counting-scalable": ("bench_counting_scalable.py", "Counting and scalable filters vs their peers"),
    "cuckoo": ("bench_cuckoo.py", "CuckooFilter vs BloomFilter and peer cuckoo filters"),
    "speed": ("bench_speed.py", "every layout vs the peers, best-of-N; --only rates: the default layout"),
    "dedup": ("bench_dedup.py", "dedup_mask vs pandas duplicated() and polars, wall time and peak RSS"),
    "cli-gzip": ("bench_cli_gzip.py", "bloomkit dedup FILE.gz vs zcat FILE.gz | bloomkit dedup"),
    "keyed": ("bench_keyed.py", "SipHash (secret_key=) vs MurmurHash3, ns/key"),
    "mapped-exact": ("bench_mapped_exact.py", "a file mapped r+ with and without exact test-and-set"),
    "rotating": ("bench_rotating.py", "RotatingBloomFilter vs hand-swapped filter pairs and pyprobables: speed, window FPR"),
    "redis": ("bench_redis.py", "URL-seen set, per-user families, windows: bloomkit vs SET vs RedisBloom"),
    "redis-persistence": ("bench_redis_persistence.py", "what a redis-server SIGKILL costs, per persistence setting"),
    "spark": ("bench_spark.py", "building and applying a filter in PySpark, classic then Spark Connect, vs Spark's own"),
    "parquet": ("bench_parquet.py", "skipping Parquet files by their Bloom filters vs DuckDB and pyarrow"),
    "orc": ("bench_orc.py", "skipping ORC stripes by their Bloom filters vs pyarrow ORC scans"),
    "orc_protobuf": ("orc_protobuf_parse.py", "ORC tail and Bloom filter messages: bloomkit's wire reader vs protobuf"),
    "pythons": ("bench_pythons.py", "per-key and batch CPU ns/key on this CPython (.ci/pythons.sh compares versions)"),
    "str-batch-floor": ("str_batch_floor.py", "the cost of each piece of update(list of str)"),
    "str-hash-cache": ("str_hash_cache.py", "how much a hash()-based peer gains from CPython's cached str hash"),
    "batch-compute": ("batch_compute.cpp", "per-key CPU cost of the batch loops (C++, thread CPU time)"),
    "prefetch-tuning": ("prefetch_tuning.cpp", "prefetch distance and hash chunk swept (C++)"),
    "fuse-lookup-tuning": ("fuse_lookup_tuning.cpp", "BinaryFuseFilter batch lookup: prefetch distance swept (C++)"),
    "two-thread-insert": ("two_thread_insert.cpp", "split_block insert on one and two threads (C++)"),
}


def command_for(script: str, args: list[str], build_dir: str) -> list[str]:
    path = os.path.join(HERE, script)
    if script.endswith(".py"):
        return [sys.executable, path, *args]
    binary = os.path.join(build_dir, script.removesuffix(".cpp"))
    compiler = os.environ.get("CXX", "c++")
    include = os.path.join(C.REPO, "cpp", "include")
    build = [compiler, "-O2", "-std=c++17", f"-I{include}", path, "-o", binary, "-pthread"]
    print("building: " + " ".join(build), file=sys.stderr, flush=True)
    subprocess.run(build, check=True)
    return [binary, *args]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", choices=sorted(SUITES), help="the suite to run")
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    parser.add_argument("--what", help="the report's name instead of the suite's (lower-case words joined by '-')")
    parser.add_argument("--print", action="store_true", help="print the report instead of recording it")
    # Everything after the first "--" belongs to the suite's script.
    split = argv.index("--") if "--" in argv else len(argv)
    args, script_args = parser.parse_args(argv[:split]), argv[split + 1 :]
    if args.list or args.suite is None:
        for name, (script, what) in SUITES.items():
            print(f"{name:<18} {script:<28} {what}")
        return 0
    what = args.what or args.suite
    try:
        path = None if args.print else C.report_path(what)  # a bad --what fails before the run
    except ValueError as error:
        parser.error(str(error))
    with tempfile.TemporaryDirectory(prefix="bloomkit-bench-") as build_dir:
        command = command_for(SUITES[args.suite][0], script_args, build_dir)
        shown = [
            "python",
            "benchmarks/run.py",
            args.suite,
            *(["--what", what] if args.what else []),
            "--",
            *script_args,
        ]
        header = C.report_header(what, shown)
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=C.REPO)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        print(f"{SUITES[args.suite][0]} exited with status {done.returncode}; nothing recorded", file=sys.stderr)
        return done.returncode
    if path is None:
        sys.stdout.write(header + "\n" + done.stdout)
        return 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(header + "\n" + done.stdout)
    print(f"recorded {os.path.relpath(path, C.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
