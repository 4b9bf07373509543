// WordStorage: owned arrays are aligned and zeroed; a large one is a mapping
// of its own, advised MADV_HUGEPAGE before it is touched.
#include <doctest/doctest.h>

#include <bloomkit/storage.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

using namespace bloomkit;

namespace {

// The /proc/self/smaps entry of the mapping that contains `address`: its
// first line (range, ..., name) and its VmFlags line; empty when there is
// no such mapping or no smaps.
struct Mapping {
    std::string header, flags;
    bool starts_at_address = false;
};

Mapping mapping_of(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    Mapping found;
    bool inside = false;
    const auto at = reinterpret_cast<uintptr_t>(address);
    while (std::getline(smaps, line)) {
        unsigned long long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2 && line.find(':') > line.find(' ')) {
            inside = start <= at && at < end;
            if (inside) {
                found.header = line;
                found.starts_at_address = start == at;
            }
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            found.flags = line;
            return found;
        }
    }
    return found;
}

}  // namespace

TEST_CASE("WordStorage: small arrays are 64-byte aligned, large ones 2 MiB aligned, both zeroed") {
    const WordStorage small(100);
    CHECK(reinterpret_cast<uintptr_t>(small.data()) % kCacheLine == 0);
    for (uint64_t w : small) CHECK(w == 0);
    const WordStorage large(kHugePageThreshold / 8 + 3);  // 4 MiB + 24 bytes: 3 huge pages
    CHECK(reinterpret_cast<uintptr_t>(large.data()) % kHugePage == 0);
    size_t nonzero = 0;
    for (uint64_t w : large) nonzero += w != 0;
    CHECK(nonzero == 0);
    WordStorage copy = large;  // a copy is owned, equal, and as aligned
    CHECK(copy == large);
    CHECK(reinterpret_cast<uintptr_t>(copy.data()) % kHugePage == 0);
    copy[5] = 1;
    CHECK_FALSE(copy == large);
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
TEST_CASE("WordStorage: a large array is a mapping of its own, advised for huge pages, after a large free") {
    // Freeing a large malloc'd block raises glibc's mmap threshold; the next
    // large blocks then come from the heap, and one freed there leaves
    // pages already touched as 4 KiB pages for the next request (where
    // MADV_HUGEPAGE comes too late). The array must not be such heap pages.
    { std::vector<uint8_t> freed(24u << 20, 1); }
    void* touched = std::malloc(20u << 20);
    REQUIRE(touched != nullptr);
    std::memset(touched, 1, 20u << 20);
    std::free(touched);
    const WordStorage words((size_t(6) << 20) / 8);
    const Mapping mapping = mapping_of(words.data());
    if (mapping.header.empty()) return;  // no /proc/self/smaps here
    CHECK(mapping.header.find("[heap]") == std::string::npos);
    CHECK(mapping.starts_at_address);
    // The advice shows as VmFlags "hg" only where it is taken: not under
    // qemu-user (.ci/aarch64.sh), which drops MADV_HUGEPAGE, nor on a
    // kernel without transparent huge pages. A mapping advised here directly
    // tells which.
    const size_t probe_bytes = kHugePage;
    void* probe = mmap(nullptr, probe_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(probe != MAP_FAILED);
    const bool advice_shows =
        madvise(probe, probe_bytes, MADV_HUGEPAGE) == 0 && mapping_of(probe).flags.find(" hg") != std::string::npos;
    munmap(probe, probe_bytes);
    if (advice_shows) CHECK(mapping.flags.find(" hg") != std::string::npos);
}
#endif
