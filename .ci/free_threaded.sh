#!/usr/bin/env bash
# Free-threaded CPython 3.14 (--disable-gil), built from the upstream tarball
# of Debian's python3.14 source package inside the .ci/chroot.sh chroot and
# cached there (/usr/local/python3.14t), then bloomkit built for it and the
# concurrency, contract and misuse suites run with no GIL: their threads
# (4-8 per filter) hammer one filter truly in parallel.
#
#   bash .ci/free_threaded.sh          build (or reuse) 3.14t, build, test
#
# Too long for every .ci/run (the interpreter build alone is ~15 min on two
# busy cores the first time); run by hand and in .ci/run only when
# BLOOMKIT_FREE_THREADED=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/chroot.sh setup
cache="${BLOOMKIT_CI_CACHE:-/var/cache/bloomkit-ci}"
root="$cache/sid"

seconds() { date +%s; }

# 1. The interpreter (cached in the chroot).
if [ ! -x "$root/usr/local/python3.14t/bin/python3.14t" ]; then
    start=$(seconds)
    bash .ci/chroot.sh run bash -euc '
        mkdir -p /usr/src/python3.14t && cd /usr/src/python3.14t
        if ! apt-get source -qq --download-only python3.14 >/tmp/apt-source.log 2>&1; then
            grep -E "^E:" /tmp/apt-source.log | head -3
            echo "FAIL: Debian'"'"'s python3.14 source package could not be downloaded (is a deb-src mirror reachable?)"
            exit 1
        fi
        rm -rf src && mkdir src
        tar -xf python3.14_*.orig.tar.* -C src --strip-components=1
        cd src
        ./configure -q --disable-gil --prefix=/usr/local/python3.14t --with-ensurepip=install >/dev/null
        make -s -j2 >/tmp/python3.14t-make.log 2>&1 || { tail -40 /tmp/python3.14t-make.log; exit 1; }
        make -s install >/tmp/python3.14t-install.log 2>&1 || { tail -40 /tmp/python3.14t-install.log; exit 1; }
    '
    echo "== free-threaded 3.14t built from Debian's python3.14 source: $(($(seconds) - start)) s"
fi
bash .ci/chroot.sh run /usr/local/python3.14t/bin/python3.14t -c \
    'import sys, sysconfig; assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1; assert not sys._is_gil_enabled(); print("==", sys.version)'

# 2. bloomkit for it, and the suites whose threads share one filter. PYTHON_GIL=0
# keeps the GIL off although the module does not declare Py_MOD_GIL_NOT_USED
# (without it, importing bloomkit would turn the GIL back on and prove nothing).
src="$root/tmp/bloomkit-src"
rm -rf "$src" && mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
PYTHON_GIL=0 bash .ci/chroot.sh run \
    bash /tmp/bloomkit-src/.ci/python_version.sh /usr/local/python3.14t/bin/python3.14t threads
rm -rf "$src"
