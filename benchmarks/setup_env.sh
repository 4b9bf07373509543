#!/usr/bin/env bash
# Create a virtualenv with bloomkit (built from this repository) and the peer
# libraries the benchmarks compare it with.
#
#   bash benchmarks/setup_env.sh [VENV_DIR] [--no-bloomkit]
#
# VENV_DIR defaults to ./.bench-venv. PYTHON selects the interpreter (default python3).
# Peers are installed one at a time: one that fails is reported and the benchmarks
# skip it. bloomkit is installed with `pip install <repo root>`; --no-bloomkit skips
# that (peers only). Exit status: 0 if numpy and bloomkit (unless skipped) installed.
set -uo pipefail

VENV=""
WITH_BLOOMKIT=1
for arg in "$@"; do
    case "$arg" in
        --no-bloomkit) WITH_BLOOMKIT=0 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        -*) echo "unknown option: $arg" >&2; exit 2 ;;
        *) VENV="$arg" ;;
    esac
done
VENV="${VENV:-./.bench-venv}"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"

echo "== creating venv $VENV with $($PYTHON --version 2>&1)"
"$PYTHON" -m venv "$VENV" || { echo "error: could not create venv $VENV" >&2; exit 1; }
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --quiet --upgrade pip || echo "warning: could not upgrade pip; continuing"

declare -a OK=() FAILED=()
while IFS= read -r line; do
    req="${line%%#*}"; req="$(echo "$req" | xargs)"   # strip comments and blanks
    [ -z "$req" ] && continue
    echo "== pip install $req"
    if "${PIP[@]}" install --quiet "$req"; then
        OK+=("$req")
    else
        FAILED+=("$req")
        echo "warning: $req failed to install; the benchmarks will report it as not installed" >&2
    fi
done < "$HERE/requirements.txt"

status=0
if ! "$VENV/bin/python" -c "import numpy" 2>/dev/null; then
    echo "error: numpy is required and did not install" >&2
    status=1
fi

if [ "$WITH_BLOOMKIT" = 1 ]; then
    if [ -f "$REPO/pyproject.toml" ] || [ -f "$REPO/setup.py" ]; then
        echo "== pip install $REPO  (bloomkit, builds the C++ core)"
        if "${PIP[@]}" install "$REPO"; then
            OK+=("bloomkit")
        else
            FAILED+=("bloomkit")
            echo "error: bloomkit failed to build/install; the benchmarks will run peers only" >&2
            status=1
        fi
    else
        FAILED+=("bloomkit (no pyproject.toml in $REPO)")
        echo "error: $REPO has no pyproject.toml yet; bloomkit not installed" >&2
        status=1
    fi
fi

echo
echo "== installed: ${OK[*]:-none}"
[ ${#FAILED[@]} -gt 0 ] && echo "== FAILED:    ${FAILED[*]}"
echo "== run e.g.: $VENV/bin/python $HERE/bench_bloom.py"
exit $status
