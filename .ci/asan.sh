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
# The run covers the tests that reach C++ with hostile, concurrent or
# misused input: loaders, keys, the contract suite (every registered type,
# threads included), mapped files, misuse, saves, fuzz regressions and
# every framed filter type's own tests, tests/test_<row name>.py for each
# framed row of the registry (python/bloomkit/_types.py), so a new type
# cannot be left out; a row without that file stops the run (statistical
# tests excluded). The notebook, plot, pandas and CLI tests drive the same
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

tests=(test_loader_safety.py test_misuse.py test_binary_keys.py test_fuzz_regressions.py test_format.py
       test_keys.py test_contract.py test_concurrency.py test_mmap.py test_save.py test_error_messages.py)
asan=(env PYTHONPATH="$target/site"
      LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
      ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
type_tests="$("${asan[@]}" "$python" -c '
import pathlib, sys
from bloomkit import _types
missing = [row.name for row in _types.FRAMED if not pathlib.Path(f"tests/test_{row.name}.py").is_file()]
if missing:
    sys.exit(f"asan.sh: no tests/test_<name>.py for the registered type(s) {missing}")
print(" ".join(f"test_{row.name}.py" for row in _types.FRAMED))')"
read -r -a type_tests <<<"$type_tests"
tests+=("${type_tests[@]}")
"${asan[@]}" timeout 1500 "$python" -m pytest -q -p no:cacheprovider -m "not statistical" "${tests[@]/#/tests/}"
