#!/usr/bin/env bash
# CI: the core on another architecture. tests/cpp (doctest) cross-compiled
# for aarch64 with Debian's g++-aarch64-linux-gnu and run under qemu-user
# (ctest runs each test through qemu-aarch64 with the aarch64 sysroot): the
# native build (GCC's builtins for aarch64, no AVX2 kernels) and the
# BLOOMKIT_PORTABLE build, on a little-endian 64-bit target that is not x86;
# then the digests and bit positions of tests/cpp/portable_check.cpp compared
# with the x86-64 build's, line for line.
# The core only: the extension and its Python tests run on x86-64 (.ci/run),
# and on aarch64 in the wheel workflow (.github/workflows/wheels.yml).
set -euo pipefail
cd "$(dirname "$0")/.."

need_package() {  # need_package <probe-path> <debian-package>...
    local probe=$1
    shift
    if [ ! -e "$probe" ]; then
        if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y --no-install-recommends "$@" >/dev/null
        else sudo apt-get update -qq && sudo apt-get install -y --no-install-recommends "$@" >/dev/null; fi
    fi
}
need_package /usr/bin/aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
need_package /usr/bin/qemu-aarch64 qemu-user
need_package /usr/include/doctest/doctest.h doctest-dev
command -v cmake >/dev/null || need_package /usr/bin/cmake cmake

sysroot=/usr/aarch64-linux-gnu
build="${BLOOMKIT_AARCH64_BUILD:-build/cpp-aarch64}"
start=$SECONDS

echo "== tests/cpp for aarch64 ($(aarch64-linux-gnu-g++ -dumpfullversion), qemu-user $(qemu-aarch64 --version | head -1 | awk '{print $3}'))"
# doctest is header-only: the host's headers and CMake package serve the target.
cmake -S tests/cpp -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
    -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
    -DCMAKE_CROSSCOMPILING_EMULATOR="qemu-aarch64;-L;$sysroot" >/dev/null
cmake --build "$build" -j2
for variant in native portable; do
    aarch64-linux-gnu-readelf -h "$build/bloomkit_cpp_tests_$variant" | grep -q "Machine:.*AArch64" ||
        { echo "FAIL: $build/bloomkit_cpp_tests_$variant is not an aarch64 executable"; exit 1; }
done
ctest --test-dir "$build" --output-on-failure

echo "== same digests and bit positions on x86-64 and aarch64"
# tests/cpp/portable_check.cpp prints 1,000 digests and 1,200 keys' bit
# positions in every layout; the aarch64 builds (native and portable) must
# print exactly what the x86-64 build prints.
g++ -std=c++17 -O1 -Icpp/include tests/cpp/portable_check.cpp -o "$build/check_x86_64"
"$build/check_x86_64" | tail -n +2 >"$build/check_x86_64.txt"
for portable in 0 1; do
    defines=()
    [ "$portable" = 1 ] && defines=(-DBLOOMKIT_PORTABLE=1)
    aarch64-linux-gnu-g++ -std=c++17 -O1 "${defines[@]}" -Icpp/include tests/cpp/portable_check.cpp \
        -o "$build/check_aarch64_$portable"
    qemu-aarch64 -L "$sysroot" "$build/check_aarch64_$portable" | tail -n +2 >"$build/check_aarch64_$portable.txt"
    cmp "$build/check_x86_64.txt" "$build/check_aarch64_$portable.txt" ||
        { echo "FAIL: aarch64 (portable=$portable) differs from x86-64"; exit 1; }
    echo "   aarch64 (portable=$portable): $(wc -l <"$build/check_aarch64_$portable.txt") lines equal to x86-64's"
done
echo "== aarch64: $((SECONDS - start)) s"
