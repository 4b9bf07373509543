// Refusing allocations the machine cannot satisfy, before they are made.
//
// A filter's storage is zero-filled when it is created, so on Linux, which
// overcommits, asking for more than the machine has does not fail cleanly:
// the zero-fill touches every page and the kernel's OOM killer ends the
// process (a crafted scalable frame with growth = 1e9 asked for 13 GB on its
// first add). Every large allocation of filter storage therefore passes
// through check_allocation(), which compares it with the memory the system
// can still give this process and throws OutOfMemory (a MemoryError in
// Python) with a message saying what was asked for. Small allocations skip
// the check; a failing one still raises std::bad_alloc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

namespace bloomkit {

class OutOfMemory : public std::runtime_error {
  public:
    explicit OutOfMemory(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {

// A value in kB from /proc/meminfo ("MemAvailable:  123 kB"), or -1.
inline int64_t meminfo_kb(const char* text, const char* field) {
    const char* at = std::strstr(text, field);
    if (at == nullptr) return -1;
    long long kb = -1;
    if (std::sscanf(at + std::strlen(field), " %lld", &kb) != 1) return -1;
    return kb;
}

// The first integer in a small file, or -1 (also for cgroup's "max").
inline int64_t read_integer_file(const char* path) {
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) return -1;
    long long value = -1;
    if (std::fscanf(f, "%lld", &value) != 1) value = -1;
    std::fclose(f);
    return value;
}

}  // namespace detail

// Bytes this process can still allocate and touch without being killed:
// MemAvailable + SwapFree (Linux), further limited by the cgroup v2 memory
// limit of a container and by an address-space limit (ulimit -v, under
// which an allocation fails with std::bad_alloc instead of an OOM kill).
// UINT64_MAX when the platform does not say.
inline uint64_t available_memory() {
    uint64_t limit = std::numeric_limits<uint64_t>::max();
#if defined(__linux__)
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
        char text[8192];
        const size_t n = std::fread(text, 1, sizeof text - 1, f);
        std::fclose(f);
        text[n] = '\0';
        const int64_t available = detail::meminfo_kb(text, "MemAvailable:");
        const int64_t swap = detail::meminfo_kb(text, "SwapFree:");
        if (available >= 0) limit = uint64_t(available) * 1024 + (swap > 0 ? uint64_t(swap) * 1024 : 0);
    }
    const int64_t cgroup_max = detail::read_integer_file("/sys/fs/cgroup/memory.max");
    const int64_t cgroup_current = detail::read_integer_file("/sys/fs/cgroup/memory.current");
    if (cgroup_max > 0 && cgroup_current >= 0) {
        const uint64_t room = cgroup_max > cgroup_current ? uint64_t(cgroup_max - cgroup_current) : 0;
        if (room < limit) limit = room;
    }
    struct rlimit address_space;
    if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
        int64_t mapped_kb = -1;  // VmSize: the address space already in use
        if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
            char text[8192];
            const size_t n = std::fread(text, 1, sizeof text - 1, f);
            std::fclose(f);
            text[n] = '\0';
            mapped_kb = detail::meminfo_kb(text, "VmSize:");
        }
        const uint64_t cap = uint64_t(address_space.rlim_cur);
        const uint64_t used = mapped_kb > 0 ? uint64_t(mapped_kb) * 1024 : 0;
        const uint64_t room = cap > used ? cap - used : 0;
        if (room < limit) limit = room;
    }
#endif
    return limit;
}

// Allocations below this size are not checked (reading /proc costs ~20 us).
constexpr uint64_t kCheckedAllocation = uint64_t(64) << 20;

// Returns `count` after checking that `count` elements of `element_size`
// bytes fit in size_t and in the memory available; `what` names the storage
// in the error ("bit array", "fingerprint table", ...).
inline uint64_t check_allocation(uint64_t count, uint64_t element_size, const char* what) {
    const uint64_t max_count = std::numeric_limits<size_t>::max() / element_size;
    if (count > max_count)
        throw OutOfMemory(std::string("cannot allocate a ") + what + " of " + std::to_string(count) + " x " +
                          std::to_string(element_size) + " bytes: larger than the address space");
    const uint64_t bytes = count * element_size;
    if (bytes >= kCheckedAllocation) {
        const uint64_t available = available_memory();
        if (bytes > available)
            throw OutOfMemory(std::string("cannot allocate a ") + what + " of " + std::to_string(bytes) +
                              " bytes: only " + std::to_string(available) +
                              " bytes of memory are available (choose a smaller capacity or a larger error "
                              "rate)");
    }
    return count;
}

// The OutOfMemory of an allocation that passed check_allocation() but that
// the system still refused (std::bad_alloc: fragmentation, strict
// overcommit), with the size that was asked for.
inline OutOfMemory refused_allocation(uint64_t bytes, const char* what) {
    return OutOfMemory(std::string("cannot allocate a ") + what + " of " + std::to_string(bytes) +
                       " bytes: the system refused the allocation (choose a smaller capacity or a larger error "
                       "rate)");
}

}  // namespace bloomkit
