// MurmurHash3_x64_128 against published and mmh3-computed vectors, and the
// helpers the index derivation is built on.
#include <doctest/doctest.h>

#include <bloomkit/hash.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

using bloomkit::Hash128;
using bloomkit::murmur3_x64_128;

namespace {

struct Vector {
    std::string data;
    uint32_t seed;
    uint64_t h1, h2;  // mmh3.hash128(data, seed, signed=False): low and high 64 bits
};

std::string iota_bytes(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i);
    return s;
}

}  // namespace

TEST_CASE("murmur3_x64_128 matches the reference digests (mmh3.hash128, signed=False)") {
    const std::vector<Vector> vectors = {
        {"", 0, 0x0ULL, 0x0ULL},
        {"", 1, 0x4610abe56eff5cb5ULL, 0x51622daa78f83583ULL},
        {"hello", 0, 0xcbd8a7b341bd9b02ULL, 0x5b1e906a48ae1d19ULL},
        {"hello", 42, 0xc4b8b3c960af6f08ULL, 0x2334b875b0efbc7aULL},
        // The published vector: 6c1b07bc7bbc4be347939ac4a93c437a (digest bytes in order).
        {"The quick brown fox jumps over the lazy dog", 0, 0xe34bbc7bbc071b6cULL, 0x7a433ca9c49a9347ULL},
        // 31 bytes: one full 16-byte block and a 15-byte tail (every tail case of the switch).
        {iota_bytes(31), 0x9747b28cU, 0x11402094b0608767ULL, 0x167613db94750d07ULL},
        {iota_bytes(16), 7, 0xbdccfbf89cfd226fULL, 0xfe917a495ceec318ULL},
    };
    for (const Vector& v : vectors) {
        CAPTURE(v.data.size());
        CAPTURE(v.seed);
        const Hash128 h = murmur3_x64_128(v.data.data(), v.data.size(), v.seed);
        CHECK(h.h1 == v.h1);
        CHECK(h.h2 == v.h2);
    }
}

TEST_CASE("the 8-byte integer specialisation equals hashing the little-endian bytes") {
    struct IntVector {
        uint64_t value, h1, h2;  // mmh3.hash128(struct.pack("<Q", value), 5, signed=False)
    };
    const IntVector vectors[] = {
        {0x0ULL, 0xa10ea8b22762995aULL, 0xbb1575409cfb7dc6ULL},
        {0x1ULL, 0xb6b39d872ae80d26ULL, 0x92fe0533d1c598fbULL},
        {0xffffffffffffffffULL, 0x40bad43deda625a1ULL, 0xb939482c8abcf206ULL},
        {0x0123456789abcdefULL, 0xfd61ed955ec6ecbeULL, 0xef0354a8e037685dULL},
    };
    for (const IntVector& v : vectors) {
        const Hash128 h = bloomkit::murmur3_x64_128_u64(v.value, 5);
        CHECK(h.h1 == v.h1);
        CHECK(h.h2 == v.h2);
    }
    for (uint64_t key : bloomkit_test::distinct_keys(1000, 3)) {
        uint8_t le[8];
        for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(key >> (8 * i));
        for (uint32_t seed : {0u, 8u, 0xffffffffu}) {
            const Hash128 bytes = murmur3_x64_128(le, 8, seed);
            const Hash128 fast = bloomkit::murmur3_x64_128_u64(key, seed);
            REQUIRE(bytes.h1 == fast.h1);
            REQUIRE(bytes.h2 == fast.h2);
        }
    }
}

TEST_CASE("fast_range64 maps [0, 2^64) onto [0, range) as floor(x * range / 2^64)") {
    CHECK(bloomkit::fast_range64(0, 1000) == 0);
    CHECK(bloomkit::fast_range64(~uint64_t(0), 1000) == 999);
    CHECK(bloomkit::fast_range64(uint64_t(1) << 63, 1000) == 500);
    CHECK(bloomkit::fast_range64(uint64_t(1) << 63, 3) == 1);
    // A range above 2^32 (the 128-bit product's high half is needed).
    const uint64_t big = (uint64_t(1) << 40) + 12345;
    CHECK(bloomkit::fast_range64(uint64_t(1) << 62, big) == big / 4);
    CHECK(bloomkit::fast_range64(~uint64_t(0), big) == big - 1);
    // Uniformity: 2^16 evenly spaced inputs fill 16 buckets equally.
    size_t counts[16] = {};
    for (uint64_t i = 0; i < (1u << 16); ++i) ++counts[bloomkit::fast_range64(i << 48, 16)];
    for (size_t c : counts) CHECK(c == (1u << 12));
}

TEST_CASE("IndexSequence stays in range and depends on both digest halves") {
    const uint64_t m = 1000003;
    for (uint64_t key : bloomkit_test::distinct_keys(200, 4)) {
        const Hash128 h = bloomkit_test::digest(key, 0);
        bloomkit::IndexSequence seq(h, m);
        for (int i = 0; i < 64; ++i) REQUIRE(seq.next() < m);
    }
    const Hash128 a{1, 2}, b{1, 3};
    bloomkit::IndexSequence sa(a, m), sb(b, m);
    sa.next();
    sb.next();
    CHECK(sa.next() != sb.next());  // a different h2 changes the step
}
