#!/usr/bin/env bash
# CI: style and types in check mode (nothing is rewritten).
#   ruff check, ruff format --check            (config: [tool.ruff] in pyproject.toml)
#   clang-format --dry-run --Werror            (config: .clang-format)
#   mypy.stubtest + mypy --strict samples      (tests/typing/, also run by tests/test_typing.py)
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
