#!/usr/bin/env bash
# One CPython version, from the source tree it runs in: build one wheel (timed),
# make it a manylinux wheel (.ci/repair_wheel.sh; BLOOMKIT_MAX_GLIBC_MINOR caps
# its glibc where the build host's is the release floor), install that in a
# fresh virtualenv and run the suite against it from a copy of tests/ (nothing
# of python/ importable). Called by .ci/pythons.sh, on the host or inside the
# .ci/chroot.sh chroot.
#
#   .ci/python_version.sh PYTHON full    wheel[test]: the non-statistical suite with
#                                        Redis, Spark, Scrapy and Dask (BLOOMKIT_REQUIRE_INTEGRATION=1)
#   .ci/python_version.sh PYTHON core    wheel + the [test] extra without the integrations' clients:
#                                        the same suite without the modules of Redis, Spark,
#                                        Scrapy and Dask (INTEGRATION_TESTS below)
#   .ci/python_version.sh PYTHON threads the suites whose threads share one filter (THREAD_TESTS,
#                                        free-threaded builds), without mmh3 and zstandard
#
# A third argument, a directory, keeps the virtualenv there (DIR/venv) and skips
# the per-version timings: .ci/pythons.sh runs versions side by side and times
# them one at a time afterwards, each on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="$1"
level="$2"
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
keep="${3:-}"
if [ -n "$keep" ]; then
    work="$keep"
    mkdir -p "$work"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
fi
# The modules that need the integrations' clients (the [test] extra's redis,
# pyspark, scrapy and dask): their servers and clusters, the docs' examples of
# them, and stubtest, which type-checks bloomkit.spark against pyspark. The full
# level only.
INTEGRATION_TESTS=(test_redis.py test_redis_cluster.py test_redis_family.py test_redis_hostile.py
    test_redis_loss.py test_redis_window.py test_spark.py test_scrapy.py test_dask.py
    test_doc_snippets.py test_typing.py)
INTEGRATION_CLIENTS=(pyspark scrapy dask redis hiredis)
# Threads hammering one filter, its guards (uninitialised instances, metadata
# read during batches, released buffers) and every type's contract.
THREAD_TESTS=(test_concurrency.py test_threads_one_filter.py test_parallel_batches.py test_contract.py test_misuse.py
    test_int_keys.py test_pickle_live_writer.py test_str_batch.py test_bloom.py::test_union_while_another_thread_inserts)

# The wheel, as `pip install .` builds it (isolated build), timed by /usr/bin/time.
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --upgrade pip
/usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    env CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$py" -m pip wheel -q --no-deps --no-cache-dir -w "$work/dist" "$repo" >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; exit 1; }
raw="$(ls "$work"/dist/bloomkit-*.whl)"
"$py" - "$version" "$(basename "$raw")" "$work/time" <<'PY'
import sys
version, wheel, path = sys.argv[1:]
wall, user, system, peak_kib = (float(x) for x in open(path).read().split()[-4:])
print(f"   [{version}] wheel {wheel}: {wall:.0f} s wall, {user + system:.0f} CPU-s, peak {peak_kib / 1024:.0f} MB")
PY
# The manylinux wheel, repaired by auditwheel from its own virtualenv (the test
# virtualenv gets nothing the suite does not need).
"$python" -m venv "$work/tools"
wheel="$(bash "$repo/.ci/repair_wheel.sh" "$work/tools/bin/python" "$raw" "$work/repaired" "${BLOOMKIT_MAX_GLIBC_MINOR:-}")"
echo "   [$version] repaired: $(basename "$wheel")"

start=$(date +%s)
if [ "$level" = full ]; then
    "$py" -m pip install -q "${wheel}[test]"
elif [ "$level" = threads ]; then
    # Neither mmh3 (support.make_frame, used by no test of THREAD_TESTS) nor
    # zstandard (the CLI's .zst input below 3.14, imported only there): the
    # index has no free-threaded wheel of either.
    "$py" -m pip install -q --no-deps "$wheel"
    "$py" -m pip install -q --only-binary=:all: "numpy>=1.23" "tqdm>=4.60" "shtab>=1.7" "pytest>=7" \
        "hypothesis>=6" "pyarrow>=14" "pandas>=1.5"
else
    # The [test] extra as pyproject.toml lists it, without the integrations'
    # clients; wheels only, so this level compiles nothing but bloomkit. A
    # requirement with no wheel for this version is named, and the tests that
    # import it report their skip in the summary below.
    mapfile -t requirements < <("$py" - "$repo/pyproject.toml" "${INTEGRATION_CLIENTS[@]}" <<'PY'
import re, sys, tomllib
pyproject, *clients = sys.argv[1:]
for requirement in tomllib.load(open(pyproject, "rb"))["project"]["optional-dependencies"]["test"]:
    if re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower() not in clients:
        print(requirement)
PY
    )
    "$py" -m pip install -q --only-binary=:all: "$wheel"
    if ! "$py" -m pip install -q --only-binary=:all: "${requirements[@]}" 2>/dev/null; then
        for requirement in "${requirements[@]}"; do
            "$py" -m pip install -q --only-binary=:all: "$requirement" 2>/dev/null ||
                echo "   [$version] no wheel of $requirement for this version: its tests skip"
        done
    fi
fi
echo "   [$version] test dependencies: $(($(date +%s) - start)) s"

# pyproject.toml: pytest reads its options there (-ra: every skip is named).
cp -r "$repo/tests" "$repo/examples" "$repo/fuzz" "$repo/docs" "$repo/README.md" "$repo/pyproject.toml" "$work/"
mkdir -p "$work/cpp" && cp -r "$repo/cpp/include" "$work/cpp/"
cd "$work"
"$py" -c 'import pathlib, bloomkit; p = pathlib.Path(bloomkit.__file__).resolve(); assert "site-packages" in p.parts, p'
# pytest's result line and every failing or skipped test's name (-ra), without the progress dots.
summary() { grep -E '^(FAILED|ERROR|SKIPPED) |[0-9]+ (passed|failed)'; }
# Its own temporary directory: other versions' suites run at the same time.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} --basetemp=$work/pytest"
# Wall and CPU time of the suite (its subprocesses included), as for the build.
if [ "$level" = full ]; then
    BLOOMKIT_REQUIRE_INTEGRATION=1 /usr/bin/time -f "%e %U %S" -o "$work/test-time" "$py" -m pytest -q -p no:cacheprovider -m "not statistical and not checkout" tests | summary
elif [ "$level" = threads ]; then
    "$py" -c 'import sys; assert not sys._is_gil_enabled(), "the GIL is on"; import bloomkit; assert not sys._is_gil_enabled(), "importing bloomkit turned the GIL on"'
    env -u BLOOMKIT_REQUIRE_INTEGRATION /usr/bin/time -f "%e %U %S" -o "$work/test-time" \
        "$py" -m pytest -q -p no:cacheprovider -m "not statistical and not checkout" \
        "${THREAD_TESTS[@]/#/tests/}" | summary
else
    env -u BLOOMKIT_REQUIRE_INTEGRATION /usr/bin/time -f "%e %U %S" -o "$work/test-time" \
        "$py" -m pytest -q -p no:cacheprovider -m "not statistical and not checkout" \
        "${INTEGRATION_TESTS[@]/#/--ignore=tests/}" tests | summary
fi
read -r wall user system < <(tail -1 "$work/test-time")
echo "   [$version] tests ($level): ${wall%.*} s wall, $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.0f", u + s }') CPU-s"

# Per-key and batch CPU ns/key on this version (a JSON line; .ci/pythons.sh
# prints them side by side with the ratios to 3.11), unless .ci/pythons.sh times
# it later.
if [ -z "$keep" ]; then
    "$py" "$repo/benchmarks/bench_pythons.py" --repeat 3
fi
