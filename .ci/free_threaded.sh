#!/usr/bin/env bash
# Free-threaded CPython (--disable-gil, PEP 703), built from the upstream
# tarball of the newest Debian source package whose files the mirror serves,
# inside the .ci/chroot.sh chroot and cached there (/usr/local/pythonX.Yt);
# then bloomkit built for it and the concurrency, contract and misuse suites
# run on it: their threads (4-8 per filter) hammer one filter truly in
# parallel, and importing bloomkit must leave the GIL off.
#
#   bash .ci/free_threaded.sh          pick a source, build (or reuse) it, build, test
#
# Which source: python3.14's listed versions, newest first, then python3.13's
# (3.13 has --disable-gil too, as the experimental python3.13t). A mirror may
# list a version in its Sources index yet answer 404 for its files (a pool
# mid-update); the first version apt-get downloads is built. apt-get checks
# every file against the size and SHA-256 of the signed Sources index, and the
# upstream tarball is checked again against the .dsc's Checksums-Sha256.
#
# Too long for every .ci/run (the interpreter build alone is ~15-25 min on two
# busy cores the first time): run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/chroot.sh setup
cache="${BLOOMKIT_CI_CACHE:-/var/cache/bloomkit-ci}"
root="$cache/sid"

seconds() { date +%s; }

# 1. The interpreter: the source chosen as above, built once into
# /usr/local/<package>t, which records the source it came from in
# BLOOMKIT_SOURCE ("package version"); a later run whose choice is the same
# reuses it (apt-get keeps the verified files and downloads nothing again).
start=$(seconds)
bash .ci/chroot.sh run bash -euc '
    chosen=""
    for package in python3.14 python3.13; do
        versions="$(apt-cache showsrc "$package" 2>/dev/null | sed -n "s/^Version: //p" | sort -u | sort -rV)"
        [ -n "$versions" ] || { echo "   $package: not in the Sources index"; continue; }
        for version in $versions; do
            dir="/usr/src/free-threaded/$package-$version"
            mkdir -p "$dir"
            if (cd "$dir" && apt-get source -qq --download-only "$package=$version" >apt-source.log 2>&1); then
                chosen="$package $version"
                break 2
            fi
            echo "   $package $version: listed in Sources, but its files could not be downloaded:" \
                "$(grep -oE "[0-9]{3} [A-Za-z ]+" "$dir/apt-source.log" | head -1)"
            rm -rf "$dir"
        done
    done
    [ -n "$chosen" ] || { echo "FAIL: no python3.14 or python3.13 source package could be downloaded"; exit 1; }
    set -- $chosen
    package="$1" version="$2" upstream="${2%-*}"
    prefix="/usr/local/${package}t"
    dir="/usr/src/free-threaded/$package-$version"
    cd "$dir"
    tarball="$(ls "${package}_${upstream}".orig.tar.*)"
    # The .dsc lists each file as "sha256 size name" under Checksums-Sha256.
    expected="$(awk -v f="$tarball" "/^Checksums-Sha256:/{s=1; next} /^[^ ]/{s=0} s && \$3 == f {print \$1}" ./*.dsc)"
    actual="$(sha256sum "$tarball" | cut -d" " -f1)"
    [ -n "$expected" ] && [ "$expected" = "$actual" ] ||
        { echo "FAIL: $tarball sha256 $actual, the .dsc says ${expected:-nothing}"; exit 1; }
    echo "   chose $package $version, the newest whose files download: $tarball sha256 $actual as in the .dsc"
    echo "$prefix" >/tmp/free-threaded-prefix
    if [ "$(cat "$prefix/BLOOMKIT_SOURCE" 2>/dev/null)" = "$chosen" ]; then
        echo "   reusing $prefix, built from it before"
        exit 0
    fi
    rm -rf src "$prefix" && mkdir src
    tar -xf "$tarball" -C src --strip-components=1
    cd src
    ./configure -q --disable-gil --prefix="$prefix" --with-ensurepip=install >/tmp/free-threaded-configure.log 2>&1 ||
        { tail -40 /tmp/free-threaded-configure.log; exit 1; }
    make -s -j2 >/tmp/free-threaded-make.log 2>&1 || { tail -40 /tmp/free-threaded-make.log; exit 1; }
    make -s install >/tmp/free-threaded-install.log 2>&1 || { tail -40 /tmp/free-threaded-install.log; exit 1; }
    echo "$chosen" >"$prefix/BLOOMKIT_SOURCE"
    echo "   built $prefix"
'
echo "== free-threaded interpreter ready: $(($(seconds) - start)) s"
prefix="$(cat "$root/tmp/free-threaded-prefix")"
python="$(ls "$root$prefix"/bin/python3.*t | head -1)"
python="${python#"$root"}"
bash .ci/chroot.sh run "$python" -c \
    'import sys, sysconfig; assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1; assert not sys._is_gil_enabled(); print("==", sys.version)'

# 2. bloomkit for it, and the suites whose threads share one filter; the
# module declares Py_MOD_GIL_NOT_USED, so the GIL stays off without
# PYTHON_GIL=0 (python_version.sh asserts it after importing bloomkit).
src="$(mktemp -d "$root/tmp/bloomkit-src.XXXXXX")"
trap 'rm -rf "$src"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
bash .ci/chroot.sh run bash "/tmp/$(basename "$src")/.ci/python_version.sh" "$python" threads
