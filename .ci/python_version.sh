#!/usr/bin/env bash
# One CPython version, from the source tree it runs in: build one wheel (timed),
# make it a manylinux wheel (.ci/repair_wheel.sh; BLOOMKIT_MAX_GLIBC_MINOR caps
# its glibc where the build host's is the release floor), install that in a
# fresh virtualenv and run the suite against it from a copy of tests/ (nothing
# of python/ importable). Called by .ci/pythons.sh, on the host or inside the
# .ci/chroot.sh chroot.
#
#   .ci/python_version.sh PYTHON full    wheel[test], the non-statistical suite with
#                                        Redis, Spark and Scrapy (BLOOMKIT_REQUIRE_INTEGRATION=1)
#   .ci/python_version.sh PYTHON core    wheel + pytest, hypothesis, mmh3, pyarrow, pandas:
#                                        the suites of the bindings and the core (FAST_TESTS below)
#   .ci/python_version.sh PYTHON threads the same without mmh3 and zstandard; the suites whose
#                                        threads share one filter (THREAD_TESTS, free-threaded builds)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="$1"
level="$2"
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Every test file that drives the extension without an optional integration.
FAST_TESTS=(
    test_int_keys.py test_hash.py test_keys.py test_binary_keys.py test_str_batch.py
    test_contract.py test_misuse.py test_concurrency.py test_threads_one_filter.py test_parallel_batches.py
    test_bloom.py test_counting.py test_scalable.py test_cuckoo.py test_cuckoo_refusal.py
    test_layouts.py test_simd.py test_keyed.py test_limits.py test_error_messages.py
    test_format.py test_golden.py test_loader_safety.py test_fuzz_regressions.py
    test_save.py test_mmap.py test_mmap_lifecycle.py test_pickle_zero_copy.py test_pickle_live_writer.py
    test_memory_lean.py test_batch_memory.py test_capacity.py test_calc.py test_cli.py
    # zstd input: zstandard below 3.14, the standard library's compression.zstd from 3.14.
    test_cli_frames.py::test_compression_is_detected_by_magic_bytes_in_files_and_stdin
    test_cli_frames.py::test_build_and_query_read_zstd test_cli_frames.py::test_binary_and_archive_inputs
)
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
else
    # pyarrow and pandas: the contract's Arrow and pandas key kinds (test_contract.py
    # requires both). Wheels only: these levels compile nothing but bloomkit.
    # The threads level (free-threaded builds) has neither mmh3 (support.make_frame,
    # used by no test of THREAD_TESTS) nor zstandard (the CLI's .zst input below
    # 3.14, imported only there): the index has no free-threaded wheel of either.
    if [ "$level" = threads ]; then
        "$py" -m pip install -q --no-deps "$wheel"
        "$py" -m pip install -q --only-binary=:all: "numpy>=1.23" "tqdm>=4.60" "shtab>=1.7" "pytest>=7" \
            "hypothesis>=6" "pyarrow>=14" "pandas>=1.5"
    else
        "$py" -m pip install -q --only-binary=:all: "$wheel" "pytest>=7" "hypothesis>=6" "mmh3>=4" \
            "pyarrow>=14" "pandas>=1.5"
    fi
fi
echo "   [$version] test dependencies: $(($(date +%s) - start)) s"

cp -r "$repo/tests" "$repo/examples" "$repo/fuzz" "$repo/docs" "$repo/README.md" "$work/"
mkdir -p "$work/cpp" && cp -r "$repo/cpp/include" "$work/cpp/"
cd "$work"
"$py" -c 'import pathlib, bloomkit; p = pathlib.Path(bloomkit.__file__).resolve(); assert "site-packages" in p.parts, p'
# pytest's result line and every failing test's name (-ra), without the progress dots.
summary() { grep -E '^(FAILED|ERROR) |[0-9]+ (passed|failed)'; }
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
        "${FAST_TESTS[@]/#/tests/}" | summary
fi
read -r wall user system < <(tail -1 "$work/test-time")
echo "   [$version] tests ($level): ${wall%.*} s wall, $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.0f", u + s }') CPU-s"

# Per-key and batch CPU ns/key on this version (a JSON line; .ci/pythons.sh
# prints them side by side with the ratios to 3.11).
"$py" -m pip install -q numpy >/dev/null
"$py" "$repo/benchmarks/bench_pythons.py" --repeat 3
