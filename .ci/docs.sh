#!/usr/bin/env bash
# CI: the documentation site (docs/conf.py: Sphinx + MyST), built with every
# warning an error: a broken cross-reference, a docstring autodoc cannot
# parse, a page left out of the table of contents. The API reference is
# generated from the importable bloomkit (CI: the venv .ci/run built).
# Output: build/docs-site/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"

"$python" -m pip install -q 'sphinx>=8,<10' 'myst-parser>=4,<6' >/dev/null
out="${BLOOMKIT_DOCS_OUT:-build/docs-site}"
rm -rf "$out"
start=$SECONDS
"$python" -m sphinx -W --keep-going -q -b html docs "$out"
echo "docs site: $(find "$out" -name '*.html' | wc -l) pages in $((SECONDS - start)) s -> $out/index.html"
