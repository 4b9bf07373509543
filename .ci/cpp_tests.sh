#!/usr/bin/env bash
# CI: the core without Python. (1) Every core header compiles on its own,
# warning-free, with g++ and clang++ at -Wall -Wextra -Wpedantic -Werror, with
# the platform intrinsics and with the portable fallbacks forced, and for
# Windows with mingw-w64. (2) The doctest suite in tests/cpp builds and
# passes under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

need_package() {  # need_package <probe-path> <debian-package>
    if [ ! -e "$1" ]; then
        # A new machine's package lists are empty until the first update.
        if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y --no-install-recommends "$2" >/dev/null
        else sudo apt-get update -qq && sudo apt-get install -y --no-install-recommends "$2" >/dev/null; fi
    fi
}
need_package /usr/include/doctest/doctest.h doctest-dev
command -v clang++ >/dev/null || need_package /usr/bin/clang++ clang
command -v cmake >/dev/null || need_package /usr/bin/cmake cmake

build="${BLOOMKIT_CPP_BUILD:-build/cpp-ci}"
mkdir -p "$build"

echo "== core headers: -Wall -Wextra -Wpedantic -Werror"
for compiler in g++ clang++; do
    for portable in 0 1; do
        for header in cpp/include/bloomkit/*.hpp; do
            printf '#include <bloomkit/%s>\n#include <bloomkit/%s>\nint main() { return 0; }\n' \
                "$(basename "$header")" "$(basename "$header")" >"$build/one_header.cpp"
            defines=()
            [ "$portable" = 1 ] && defines=(-DBLOOMKIT_PORTABLE=1)
            "$compiler" -std=c++17 -Wall -Wextra -Wpedantic -Werror -O1 "${defines[@]}" \
                -Icpp/include -fsyntax-only "$build/one_header.cpp" ||
                { echo "FAIL: $header with $compiler (portable=$portable)"; exit 1; }
        done
        echo "   $compiler (portable=$portable): $(ls cpp/include/bloomkit/*.hpp | wc -l) headers clean"
    done
    # The headers that need zlib (bloomkit/zlib/, outside the glob above).
    need_package /usr/include/zlib.h zlib1g-dev
    for header in cpp/include/bloomkit/zlib/*.hpp; do
        printf '#include <bloomkit/zlib/%s>\nint main() { return 0; }\n' "$(basename "$header")" >"$build/one_header.cpp"
        "$compiler" -std=c++17 -Wall -Wextra -Wpedantic -Werror -O1 -Icpp/include -fsyntax-only "$build/one_header.cpp" ||
            { echo "FAIL: $header with $compiler"; exit 1; }
    done
done

# The same headers for Windows (mingw-w64's g++): every POSIX call and
# include is guarded (_WIN32).
need_package /usr/bin/x86_64-w64-mingw32-g++-posix g++-mingw-w64-x86-64-posix
for header in cpp/include/bloomkit/*.hpp; do
    printf '#include <bloomkit/%s>\nint main() { return 0; }\n' "$(basename "$header")" >"$build/one_header.cpp"
    x86_64-w64-mingw32-g++-posix -std=c++17 -Wall -Wextra -Wpedantic -Werror -O1 -Icpp/include -fsyntax-only \
        "$build/one_header.cpp" || { echo "FAIL: $header for Windows (mingw-w64)"; exit 1; }
done
echo "   x86_64-w64-mingw32-g++: $(ls cpp/include/bloomkit/*.hpp | wc -l) headers clean"

echo "== tests/cpp (doctest) under ctest"
cmake -S tests/cpp -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure

echo "== two-thread batches under ThreadSanitizer (parallel.hpp)"
# The only core code that runs on two threads: a data race between the
# insert halves, or a barrier step that orders nothing, fails here.
g++ -std=c++17 -O1 -g -fsanitize=thread -Icpp/include tests/cpp/main.cpp tests/cpp/test_parallel.cpp \
    -o "$build/tsan_parallel" -lpthread
TSAN_OPTIONS="halt_on_error=1" "$build/tsan_parallel"
