#!/usr/bin/env bash
# CI: the wheel a user would install, proven self-contained.
#   1. sdist (python -m build), then a wheel built FROM that sdist (proves the
#      sdist is complete; timed: this is "install from source");
#   2. auditwheel repair -> a manylinux wheel (.ci/repair_wheel.sh: external
#      libraries vendored, tag checked, glibc at most 2.34);
#   3. a FRESH virtualenv (no system site-packages, no source tree on sys.path):
#      install the repaired wheel (timed); every file of python/bloomkit is in
#      it and every module imports; the CLI and the suites of the int-key
#      reads and the golden vectors run from a temporary copy of tests/,
#      examples/ and docs/. The whole suite ran on this interpreter already (.ci/run's
#      README suite, against the `pip install .` wheel of the same sources), and
#      .ci/pythons.sh runs it against the repaired wheels of 3.12-3.15;
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
# build/ directory instead).
"$python" -m pip install -q build twine

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
wheel="$(bash .ci/repair_wheel.sh "$python" "$raw" "$dist/repaired" 34)"
echo "   $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
"$python" -m auditwheel show "$wheel" | sed -n '1,3p'

echo "== twine check"
"$python" -m twine check --strict "$wheel" "$sdist"

echo "== fresh virtualenv: install the wheel; complete, imports, runs"
venv="$work/venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
# Dependencies first, so the timed step is the wheel itself.
"$venv/bin/python" -m pip install -q "$wheel" "pytest>=7" "hypothesis>=6" "mmh3>=4"
"$venv/bin/python" -m pip uninstall -q -y bloomkit
start="$(seconds)"
"$venv/bin/python" -m pip install -q --no-deps "$wheel"
wheel_seconds="$(elapsed "$start" "$(seconds)")"
echo "   pip install of the wheel: ${wheel_seconds} s (from source: ${source_seconds} s)"

# Tests from a copy outside the checkout: nothing of the source tree is importable
# (docs/FORMAT.md: the test vectors test_golden checks).
cp -r "$repo/tests" "$repo/examples" "$repo/docs" "$work/"
cd "$work"
# What the sdist and the repair could lose: every file of python/bloomkit
# (modules, stubs, py.typed) is installed, and every module imports.
"$venv/bin/python" - "$repo/python/bloomkit" <<'PY'
import importlib, pathlib, pkgutil, sys
import bloomkit
location = pathlib.Path(bloomkit.__file__).resolve().parent
assert "site-packages" in location.parts, location
source = pathlib.Path(sys.argv[1])
wanted = {p.relative_to(source) for p in source.rglob("*") if p.suffix in (".py", ".pyi", ".typed")}
missing = sorted(str(p) for p in wanted if not (location / p).is_file())
assert not missing, f"the wheel lacks {missing}"
modules = [m.name for m in pkgutil.walk_packages(bloomkit.__path__, "bloomkit.")]
extras = []  # modules of an integration whose extra is not installed here (bloomkit.scrapy)
for name in modules:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        if (error.name or "bloomkit").partition(".")[0] == "bloomkit":
            raise
        extras.append(f"{name} ({error.name})")
print(f"   bloomkit {bloomkit.__version__} from {location}: {len(wanted)} files; "
      f"{len(modules) - len(extras)} modules import, {len(extras)} need an extra: {', '.join(extras)}")
PY
"$venv/bin/bloomkit" dedup examples/urls.txt.gz >/dev/null
# The extension's int-key reads and the golden vectors; the rest of the suite
# ran against the same sources on this interpreter in .ci/run.
"$venv/bin/python" -m pytest -q -p no:cacheprovider --strict-markers -m "not statistical and not checkout" \
    tests/test_int_keys.py tests/test_golden.py
