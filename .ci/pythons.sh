#!/usr/bin/env bash
# CI: every supported CPython besides the host's 3.11 (which .ci/run's README
# test command covers with the whole suite): one wheel built per version,
# repaired into a manylinux wheel, and the suite run against it
# (.ci/python_version.sh).
#   3.12       the machine's pyenv CPython 3.12 (no Debian suite reachable here
#              carries 3.12); built on the host, so its glibc is capped at 2.34
#              as .ci/wheel.sh caps 3.11's
#   3.13-3.15  Debian unstable's, in the .ci/chroot.sh chroot
# Each runs the non-statistical suite; the newest, 3.15, with the modules of
# Redis, Spark, Scrapy and Dask (BLOOMKIT_PYTHONS_FULL, default "3.15"; the
# oldest, 3.11, is .ci/run's README suite), the others without them.
# BLOOMKIT_PYTHONS="3.13 3.15" picks versions. Each step prints its time.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${BLOOMKIT_CI_CACHE:-/var/cache/bloomkit-ci}"
versions="${BLOOMKIT_PYTHONS:-3.12 3.13 3.14 3.15}"

timed() {  # timed NAME CMD...
    local name="$1" start
    shift
    start=$(date +%s)
    "$@"
    echo "== $name: $(($(date +%s) - start)) s"
}

timed "chroot (Debian unstable)" bash .ci/chroot.sh setup

# The tree as committed plus local changes, without build output, copied into
# the chroot (wheels are built in the tree's build/ directory); a directory of
# this run's own, as other scripts (.ci/free_threaded.sh) share the chroot.
src="$(mktemp -d -p "$cache/sid/tmp" bloomkit-src.XXXXXX)"
inside="/tmp/${src##*/}"  # the same directory, seen from inside the chroot
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"

# BLOOMKIT_PYTHONS_FULL: the versions whose suite includes Redis, Spark, Scrapy
# and Dask (the whole [test] extra); the others run it without those modules.
level_of() { case " ${BLOOMKIT_PYTHONS_FULL-3.15} " in *" $1 "*) echo full ;; *) echo core ;; esac; }
priority_of() { if [ "$(level_of "$1")" = full ]; then echo 0; else echo 10; fi; }  # a nice(1) increment
bench="$(mktemp)"
# 3.11, the reference of the ratios: the host's interpreter with this tree's extension
# when it is built in place (a developer's checkout), else the .ci/run venv's.
python3 benchmarks/bench_pythons.py --repeat 3 >>"$bench" 2>/dev/null ||
    echo "   (no 3.11 timings: bloomkit is not importable by the host's python3)"

# The versions side by side, each writing its own log, printed in order when
# all have ended (a version failing fails the run after every log is printed).
# The full level is the longest (its suite waits on a JVM, servers and workers:
# 492 s wall for 311 CPU-s), so the others run at a lower priority and take the
# CPU it leaves: 942 s for the four on a quiet 2-core machine, where one after
# another took ~40 minutes (docs/decisions.md, "Supported CPython versions").
# The timings follow, one version at a time, from the virtualenvs kept in $keep.
keep="$(mktemp -d -p "$cache/sid/tmp" bloomkit-pythons.XXXXXX)"
trap 'rm -rf "$bench" "$src" "$host_src" "$keep"' EXIT
host_src=""
declare -A pids
for version in $versions; do
    case "$version" in
        3.12)
            # A pyenv shim on PATH answers "command not found" for a version that is
            # not selected: ask pyenv for the real path.
            python312="${BLOOMKIT_PYTHON312:-}"
            if [ -z "$python312" ] && command -v pyenv >/dev/null 2>&1; then
                python312="$(PYENV_VERSION="$(pyenv versions --bare | grep -E '^3\.12\.' | tail -1)" pyenv which python3.12 2>/dev/null || true)"
            fi
            for candidate in "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 "$(command -v python3.12 || true)"; do
                [ -n "$python312" ] && "$python312" -c 'import sys' 2>/dev/null && break
                python312="$candidate"
            done
            if [ -z "$python312" ] || ! "$python312" -c 'import sys' 2>/dev/null; then
                echo "FAIL: no CPython 3.12 on this machine (set BLOOMKIT_PYTHON312)"
                exit 1
            fi
            # Its own copy of the tree: the chroot's holds the other builds.
            host_src="$(mktemp -d)"
            git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$host_src"
            timed "CPython $version" nice -n "$(priority_of "$version")" env BLOOMKIT_MAX_GLIBC_MINOR=34 \
                bash "$host_src/.ci/python_version.sh" "$python312" "$(level_of "$version")" "$keep/$version" \
                >"$keep/$version.log" 2>&1 &
            ;;
        *)
            timed "CPython $version" nice -n "$(priority_of "$version")" bash .ci/chroot.sh run \
                bash "$inside/.ci/python_version.sh" "/usr/bin/python$version" "$(level_of "$version")" \
                "/tmp/${keep##*/}/$version" >"$keep/$version.log" 2>&1 &
            ;;
    esac
    pids[$version]=$!
done
failed=""
for version in $versions; do
    wait "${pids[$version]}" || failed="$failed $version"
done
for version in $versions; do
    echo "-- CPython $version"
    cat "$keep/$version.log"
done
[ -z "$failed" ] || { echo "FAIL: CPython$failed"; exit 1; }

for version in $versions; do
    case "$version" in
        3.12) "$keep/3.12/venv/bin/python" benchmarks/bench_pythons.py --repeat 3 ;;
        *) bash .ci/chroot.sh run "/tmp/${keep##*/}/$version/venv/bin/python" \
            "$inside/benchmarks/bench_pythons.py" --repeat 3 ;;
    esac
done | tee -a "$bench"
python3 benchmarks/bench_pythons.py --compare "$bench"
