// A loop over Python objects split between the calling thread and one
// helper thread, while the caller holds the GIL (docs/decisions.md, "str
// batches on two cores").
//
// Why this is safe: the caller holds the GIL from before the helper starts
// until after it is joined, and runs no Python code meanwhile, so no other
// thread can change a list, free an object or move its memory; thread
// creation and join order the helper's reads after the caller's and before
// whatever the caller does next. The helper may therefore *read* immutable
// object memory (a list's item pointers, a compact str's bytes, a bytes
// object's bytes) and nothing else: no Python API call that can run code,
// allocate, raise or change a reference count.
//
// Why at exit and fork nothing can go wrong: the helper lives only inside
// one GIL-held section. A daemon thread is ended at interpreter exit when it
// next takes the GIL, never while holding it, so no helper is alive then;
// os.fork() takes the GIL, so no helper is alive in a forked child either.
// There is no pool: a thread start costs ~20-50 us, paid once per block of
// at least kMinSplit keys (well under 1 %).
#pragma once

#include <Python.h>

#include <cstddef>
#include <system_error>
#include <thread>

namespace bloomkit_py {

// Fewer keys than this are not split: thread start-up would cost more than
// half the work saves.
constexpr size_t kMinSplit = 8192;

// 2 when the process may run on at least two CPUs, the interpreter has a
// GIL, and the environment variable BLOOMKIT_BATCH_THREADS is not "1";
// otherwise 1. Decided once; set_batch_threads() changes it.
int batch_threads();

// Sets what batch_threads() returns from now on: 1, or 2 (which still gives
// 1 where decided above: one usable CPU, free-threaded builds,
// BLOOMKIT_BATCH_THREADS=1). For benchmarks and tests, which compare both
// in one process; the answers are identical.
void set_batch_threads(int threads);

// The threads a batch of `count` keys may run on once the GIL is released
// (bloomkit/parallel.hpp): batch_threads() from kMinParallelKeys keys on.
unsigned threads_for_batch(size_t count);

// Calls part(begin, end, half) over [0, count): half 0 = [0, mid) on the
// calling thread, half 1 = [mid, count) on a helper thread, when count >=
// kMinSplit and batch_threads() is 2; otherwise part(0, count, 0) alone.
// The caller must hold the GIL and part must obey the rules above; the
// helper's half must not throw (the caller's may: the helper is joined
// first). If the helper cannot be started, the caller does both halves.
template <class Part>
void split_under_gil(size_t count, Part&& part) {
    if (count < kMinSplit || batch_threads() < 2) {
        part(size_t{0}, count, 0);
        return;
    }
    const size_t mid = count / 2;
    std::thread helper;
    try {
        helper = std::thread([&part, mid, count] { part(mid, count, 1); });
    } catch (const std::system_error&) {
        part(size_t{0}, mid, 0);
        part(mid, count, 1);
        return;
    }
    try {
        part(size_t{0}, mid, 0);
    } catch (...) {
        helper.join();
        throw;
    }
    helper.join();
}

}  // namespace bloomkit_py
