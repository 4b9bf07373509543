#!/usr/bin/env bash
# Coverage-guided fuzzing of every loader (fuzz/load_fuzzer.cpp) for a bounded
# time, under ASan and UBSan. Seeds: valid frames of every type
# (fuzz/make_corpus.py) plus every kept regression input. Any crash fails
# the run; its input is left in fuzz/crashes/ to be added to
# fuzz/regressions/ (which the test suite replays).
#
#   FUZZ_SECONDS   run length (default 90)
#   PYTHON         interpreter with bloomkit installed, for the seed corpus
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-90}"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# libFuzzer ships with clang's runtime libraries (Debian: clang, libclang-rt-*-dev).
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi

# Every core header, so the fuzzer's dispatch (one case per row of
# bloomkit/filter_types.hpp) finds each row's core class without a list of its own.
for header in cpp/include/bloomkit/*.hpp; do echo "#include <bloomkit/$(basename "$header")>"; done >"$work/core_headers.hpp"
# ORC's ZLIB chunks through zlib, as the extension inflates them (zlib1g-dev).
[ -e /usr/include/zlib.h ] || { apt-get update -qq && apt-get install -y -qq --no-install-recommends zlib1g-dev >/dev/null; }
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DBLOOMKIT_HAVE_ZLIB=1 -Icpp/include -include "$work/core_headers.hpp" fuzz/load_fuzzer.cpp -o "$work/load_fuzzer" -lz

mkdir -p "$work/corpus" fuzz/crashes
"$python" fuzz/make_corpus.py "$work/corpus"
cp fuzz/regressions/* "$work/corpus/" 2>/dev/null || true

# -max_len covers the largest seed; -rss_limit_mb bounds what a crafted
# frame may make the loader allocate (the frame length bounds it anyway).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$work/load_fuzzer" "$work/corpus" -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=2048 \
  -artifact_prefix=fuzz/crashes/ -print_final_stats=1 2>&1 | tee "$work/log" | grep -E "^(#[0-9]+ +(INITED|DONE)|stat::|==[0-9]+==ERROR|SUMMARY)" || true
if grep -q -E "ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error|deadly signal" "$work/log"; then
  echo "fuzz: the fuzzer found a crash; its input is in fuzz/crashes/" >&2
  tail -60 "$work/log" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds}s ($(grep -oE 'stat::number_of_executed_units: [0-9]+' "$work/log" | grep -oE '[0-9]+') executions)"
