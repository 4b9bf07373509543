#include "gil_split.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sched.h>
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

int batch_threads() {
    // A function-local static: initialised once, thread-safe (C++11).
    static const int threads = decide_threads();
    return threads;
}

}  // namespace bloomkit_py
