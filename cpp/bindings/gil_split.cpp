#include "gil_split.hpp"

#include <bloomkit/parallel.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace bloomkit_py {

namespace {

// CPUs this process may run on (its affinity mask, which container and
// taskset limits set), not the machine's count.
unsigned usable_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
#endif
    return std::thread::hardware_concurrency();
}

int decide_threads() {
#if defined(Py_GIL_DISABLED)
    // Free-threaded CPython: holding no GIL protects nothing, so the helper
    // could see a list change under it.
    return 1;
#else
    const char* setting = std::getenv("BLOOMKIT_BATCH_THREADS");
    if (setting != nullptr && std::strcmp(setting, "1") == 0) return 1;
    return usable_cpus() >= 2 ? 2 : 1;
#endif
}

}  // namespace

namespace {

// Decided once (a function-local static is initialised thread-safely);
// atomic so that set_batch_threads() never races with a batch reading it.
std::atomic<int>& threads_setting() {
    static std::atomic<int> threads{decide_threads()};
    return threads;
}

// A child forked while another thread of the parent ran a two-thread batch
// must not inherit that batch's helper slot (parallel.hpp, HelperSlot).
#if defined(__unix__) || defined(__APPLE__)
[[maybe_unused]] const int fork_handler_registered =
    pthread_atfork(nullptr, nullptr, [] { bloomkit::HelperSlot::reset_after_fork(); });
#endif

}  // namespace

int batch_threads() { return threads_setting().load(std::memory_order_relaxed); }

void set_batch_threads(int threads) {
    if (threads != 1 && threads != 2)
        throw std::invalid_argument("batch threads must be 1 or 2, got " + std::to_string(threads));
    threads_setting().store(threads == 2 ? decide_threads() : 1, std::memory_order_relaxed);
}

unsigned threads_for_batch(size_t count) {
    return count >= bloomkit::kMinParallelKeys ? static_cast<unsigned>(batch_threads()) : 1u;
}

}  // namespace bloomkit_py
