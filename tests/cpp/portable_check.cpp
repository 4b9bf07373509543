// Prints MurmurHash3 digests, the platform primitives and every layout's
// positions for a fixed set of keys. tests/test_layouts.py compiles it with
// and without BLOOMKIT_PORTABLE (the portable fallbacks of platform.hpp) and
// requires identical output, and compares the positions with the module's.
#include <bloomkit/bloom.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>

int main() {
    using namespace bloomkit;
    std::printf("portable %d\n", platform::kPortable ? 1 : 0);
    uint64_t x = 0x0123456789abcdefULL;
    for (int i = 0; i < 1000; ++i) {
        x = detail::fmix64(x + 0x9E3779B97F4A7C15ULL);
        const uint64_t y = detail::fmix64(x ^ 0x5851f42d4c957f2dULL) >> (i % 64);
        std::printf("prim %" PRIu64 " %" PRIu32 " %" PRIu32 " %" PRIu64 "\n", platform::mul_high64(x, y),
                    platform::popcount64(y), y ? platform::ctz64(y) : 64u, platform::bswap64(x));
    }
    const BloomGeometry geometries[] = {
        {1000003, 7, 42, 100000, 0.01, Layout::Classic},
        {512 * 2000, 6, 42, 100000, 0.01, Layout::Blocked512},
        {512 * 2000, 11, 42, 100000, 0.01, Layout::Blocked512},
        {256 * 4000, 8, 42, 100000, 0.01, Layout::SplitBlock},
    };
    for (const BloomGeometry& g : geometries) {
        BloomFilter filter(g);
        for (int i = 0; i < 300; ++i) {
            const std::string key = "key-" + std::to_string(i) + std::string(static_cast<size_t>(i % 37), 'x');
            const Hash128 h = murmur3_x64_128(key.data(), key.size(), g.seed);
            std::printf("%s %s %" PRIu64 " %" PRIu64 ":", layout_name(g.layout), key.c_str(), h.h1, h.h2);
            uint64_t positions[kMaxHashes];
            filter.positions(h, positions);
            for (uint32_t j = 0; j < g.num_hashes; ++j) std::printf(" %" PRIu64, positions[j]);
            std::printf("\n");
        }
    }
    return 0;
}
