#!/usr/bin/env bash
# CI: a Debian unstable chroot carrying the CPython versions this Debian host
# does not (python3.13, 3.14, 3.15 with -dev and -venv), a compiler, CMake,
# redis-server and a JDK. Built once with debootstrap under a cache directory
# outside the repository and reused while it is complete.
#
#   .ci/chroot.sh setup          create (or reuse) the chroot; prints its root
#   .ci/chroot.sh run CMD...     run CMD inside it, as root, with /proc, /dev,
#                                /dev/shm, /sys and the host's /opt (pip's local
#                                wheel directories, read-only) mounted in a
#                                private mount namespace: nothing stays mounted
#                                on the host when CMD ends, however it ends.
#
# pip inside reaches the package index like the host's: the host's CA bundle,
# /etc/pip.conf, /etc/xdg/pip and PIP_* environment variables are copied in.
set -euo pipefail

cache="${BLOOMKIT_CI_CACHE:-/var/cache/bloomkit-ci}"
root="$cache/sid"
mirror="${BLOOMKIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages=(
    python3.13 python3.13-dev python3.13-venv
    python3.14 python3.14-dev python3.14-venv
    python3.15 python3.15-dev python3.15-venv
    g++ make cmake ninja-build ca-certificates xz-utils procps time
    redis-server openjdk-21-jdk-headless
    # Building CPython from Debian's python3.14 source (.ci/free_threaded.sh).
    dpkg-dev libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev libsqlite3-dev libzstd-dev uuid-dev
)

step() {  # step NAME CMD...: run CMD, print how long it took
    local name="$1" start end
    shift
    start=$(date +%s)
    "$@"
    end=$(date +%s)
    echo "   [chroot] $name: $((end - start)) s"
}

copy_host_config() {  # the host's CA bundle, DNS, host names and pip configuration
    local r="$1"
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    # The chroot shares the host's network and hostname: without the host's
    # name in its hosts file the JVM's InetAddress.getLocalHost() fails and
    # no Spark session starts (JAVA_GATEWAY_EXITED, UnknownHostException).
    cp /etc/hosts "$r/etc/hosts"
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        mkdir -p "$r/usr/local/share/bloomkit-ci"
        cp /etc/ssl/certs/ca-certificates.crt "$r/usr/local/share/bloomkit-ci/host-ca.crt"
    fi
    [ -f /etc/pip.conf ] && cp /etc/pip.conf "$r/etc/pip.conf"
    if [ -d /etc/xdg/pip ]; then
        mkdir -p "$r/etc/xdg"
        rm -rf "$r/etc/xdg/pip"
        cp -r /etc/xdg/pip "$r/etc/xdg/pip"
    fi
}

setup() {
    if [ -f "$root/.bloomkit-ci-complete" ] && cmp -s "$root/.bloomkit-ci-complete" <(printf '%s\n' "${packages[@]}"); then
        copy_host_config "$root"
        echo "   [chroot] reused $root"
        return
    fi
    command -v debootstrap >/dev/null 2>&1 || step "apt-get install debootstrap" \
        bash -c 'apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null'
    local tmp="$cache/sid.partial"
    mkdir -p "$cache"
    if [ ! -x "$tmp/usr/bin/apt-get" ]; then
        rm -rf "$tmp"
        step "debootstrap sid" bash -c 'debootstrap --variant=minbase sid "$1" "$2" >"$3" 2>&1' \
            bash "$tmp" "$mirror" "$cache/debootstrap.log"
    fi
    cat >"$tmp/etc/apt/sources.list" <<EOF
deb $mirror sid main
deb-src $mirror sid main
EOF
    # A mirror frozen at a date serves Release files past their Valid-Until.
    echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99bloomkit-ci"
    copy_host_config "$tmp"
    step "apt-get update" enter "$tmp" apt-get update -qq
    step "apt-get install (${#packages[@]} packages)" enter "$tmp" bash -c \
        'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/var/log/bloomkit-ci-apt.log' \
        bash "${packages[@]}"
    printf '%s\n' "${packages[@]}" >"$tmp/.bloomkit-ci-complete"
    rm -rf "$root"
    mv "$tmp" "$root"
    echo "   [chroot] created $root"
}

enter() {  # enter ROOT CMD...: CMD in the chroot ROOT with /proc, /dev, /sys and /opt mounted
    local r="$1"
    shift
    # The chroot's CA bundle is its own (ca-certificates); pip and the other
    # clients are pointed at the host's, which is what reaches the index here.
    local -a env_vars=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
    local ca=/usr/local/share/bloomkit-ci/host-ca.crt
    if [ -f "$r$ca" ]; then
        env_vars+=(PIP_CERT="$ca" SSL_CERT_FILE="$ca" REQUESTS_CA_BUNDLE="$ca" CURL_CA_BUNDLE="$ca")
    fi
    local var
    for var in $(compgen -e); do
        case "$var" in
            PIP_CERT) ;;
            PIP_* | BLOOMKIT_* | CI | PYTEST_*) env_vars+=("$var=${!var}") ;;
        esac
    done
    unshare --mount --propagation private -- bash -euc '
        r="$1"; shift
        mount -t proc proc "$r/proc"
        mount --rbind /dev "$r/dev"
        mount --rbind /sys "$r/sys"
        # pip.conf and PIP_FIND_LINKS may name host paths under /opt (local
        # wheel directories): the same paths, read-only, inside.
        for d in /opt/*; do
            [ -e "$d" ] || continue
            mkdir -p "$r$d" && mount --bind -o ro "$d" "$r$d"
        done
        exec chroot "$r" "$@"
    ' bash "$r" env -i "${env_vars[@]}" "$@"
}

run() {
    [ -f "$root/.bloomkit-ci-complete" ] || setup >&2
    enter "$root" "$@"
}

case "${1:-}" in
    setup) setup ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 setup | run CMD..." >&2; exit 2 ;;
esac
