#!/usr/bin/env bash
# CI: the README's install-for-testing command, `pip install '.[test]'`, in the
# active virtualenv, timed: wall, CPU and peak memory (the largest process,
# the compiler) of the build from source plus the test dependencies (wheels).
# The build's own limits on this 2-core machine, quiet: 90 s wall, 150 CPU-s,
# 600 MB; over them is a warning with the load average, not a failure, since
# other jobs may share the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
times="$(mktemp)"
trap 'rm -f "$times"' EXIT
/usr/bin/time -f "%e %U %S %M" -o "$times" pip install -q '.[test]'
python - "$times" <<'PY'
import os, sys
wall, user, system, peak_kib = (float(x) for x in open(sys.argv[1]).read().split()[-4:])
cpu, peak = user + system, peak_kib / 1024
print(f"   pip install '.[test]': {wall:.0f} s wall, {cpu:.0f} CPU-s, peak {peak:.0f} MB (load {os.getloadavg()[0]:.1f})")
if wall > 90 or cpu > 150 or peak > 600:
    print("   WARNING: over the 90 s / 150 CPU-s / 600 MB of a source build on a quiet 2-core machine")
PY
