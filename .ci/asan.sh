#!/usr/bin/env bash
# The test suite against an ASan + UBSan build of the extension (CMake option
# BLOOMKIT_SANITIZE; docs/RELIABILITY.md). The sanitized package is installed
# into its own directory and put first on PYTHONPATH, so the interpreter
# given as PYTHON (with the test dependencies) imports it instead of the
# normal build. The interpreter is not instrumented, so libasan is
# preloaded, and libstdc++ with it: ASan resolves the real __cxa_throw when
# it starts, and python itself does not link libstdc++, so without it the
# first C++ exception aborts ("CHECK failed ... real___cxa_throw"). Leak detection is off (CPython's arenas and interned objects
# look like leaks at exit).
#
# The run covers the tests tests/asan_tests.py lists: those that reach C++
# with hostile, concurrent or misused input, and every framed filter type's
# own tests/test_<row name>.py, from the registry (statistical tests
# excluded). The notebook, plot, pandas and CLI tests drive the same
# bindings from Python and would more than double the time under ASan
# (about 5x slower than the normal build).
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
target="$(mktemp -d)"
trap 'rm -rf "$target"' EXIT
"$python" -m pip install -q --no-deps --target "$target/site" \
  -Ccmake.define.BLOOMKIT_SANITIZE=ON -Ccmake.build-type=RelWithDebInfo -Cbuild-dir=build/asan .

asan=(env PYTHONPATH="$target/site"
      LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
      ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
# The list, from the registry (tests/asan_tests.py); it exits non-zero on a
# framed type without its tests/test_<name>.py.
listed="$("${asan[@]}" "$python" tests/asan_tests.py)"
read -r -a tests <<<"$listed"
"${asan[@]}" timeout 1500 "$python" -m pytest -q -p no:cacheprovider -m "not statistical" "${tests[@]/#/tests/}"
