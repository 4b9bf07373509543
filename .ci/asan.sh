#!/usr/bin/env bash
# The test suite against an ASan + UBSan build of the extension
# (CMake option BLOOMKIT_SANITIZE). Runs in its own virtualenv and build
# directory; the interpreter is not instrumented, so libasan is preloaded.
# Leak detection is off: CPython's arenas and interned objects look like
# leaks at exit.
#
# The run covers the tests that reach C++ with hostile or concurrent input
# (loaders, keys, threads, misuse, every filter's own tests); the notebook,
# plotting, pandas and Spark-style integration tests exercise Python code
# over the same bindings and would triple the run time under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="$(mktemp -d)/venv"
python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --no-build-isolation --no-deps -q . \
  -Ccmake.define.BLOOMKIT_SANITIZE=ON -Ccmake.build-type=RelWithDebInfo -Cbuild-dir=build/asan

libasan="$(gcc -print-file-name=libasan.so)"
cd "$(mktemp -d)"  # import the installed (sanitized) package, not the source tree
LD_PRELOAD="$libasan" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
timeout 1500 "$venv/bin/python" -m pytest -q -x -p no:cacheprovider --rootdir "$OLDPWD" \
  "$OLDPWD"/tests/test_loader_safety.py "$OLDPWD"/tests/test_misuse.py "$OLDPWD"/tests/test_binary_keys.py \
  "$OLDPWD"/tests/test_fuzz_regressions.py "$OLDPWD"/tests/test_format.py "$OLDPWD"/tests/test_keys.py \
  "$OLDPWD"/tests/test_threads.py "$OLDPWD"/tests/test_bloom.py "$OLDPWD"/tests/test_counting.py \
  "$OLDPWD"/tests/test_scalable.py "$OLDPWD"/tests/test_cuckoo.py "$OLDPWD"/tests/test_save.py \
  -m "not statistical"
