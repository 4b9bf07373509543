// xxHash64 (Yann Collet; the algorithm of xxHash's doc/xxhash_spec.md,
// "XXH64"): the hash Parquet's split-block Bloom filters apply, with seed 0,
// to each value's plain encoding (parquet_bloom.hpp). Checked against the
// published vectors in tests/cpp/test_parquet_bloom.cpp and against the xxhash
// package for every length 0..300 in tests/test_parquet.py.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hash.hpp"

namespace bloomkit {

namespace xxh64_detail {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

inline uint64_t round(uint64_t acc, uint64_t input) {
    acc += input * kPrime2;
    acc = detail::rotl64(acc, 31);
    return acc * kPrime1;
}

inline uint64_t merge_round(uint64_t acc, uint64_t value) {
    acc ^= round(0, value);
    return acc * kPrime1 + kPrime4;
}

inline uint64_t avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    return h ^ (h >> 32);
}

// The last len % 32 bytes: 8-byte lanes, then one 4-byte lane, then bytes.
inline uint64_t finalize(uint64_t h, const uint8_t* p, size_t len) {
    for (; len >= 8; len -= 8, p += 8) {
        h ^= round(0, detail::load_le64(p));
        h = detail::rotl64(h, 27) * kPrime1 + kPrime4;
    }
    if (len >= 4) {
        h ^= detail::load_le32(p) * kPrime1;
        h = detail::rotl64(h, 23) * kPrime2 + kPrime3;
        p += 4;
        len -= 4;
    }
    for (; len > 0; --len, ++p) {
        h ^= static_cast<uint64_t>(*p) * kPrime5;
        h = detail::rotl64(h, 11) * kPrime1;
    }
    return avalanche(h);
}

}  // namespace xxh64_detail

// XXH64(data, len, seed).
inline uint64_t xxhash64(const uint8_t* data, size_t len, uint64_t seed = 0) {
    using namespace xxh64_detail;
    const uint8_t* p = data;
    size_t rest = len;
    uint64_t h;
    if (len >= 32) {
        // Four accumulators over 32-byte stripes.
        uint64_t v1 = seed + kPrime1 + kPrime2;
        uint64_t v2 = seed + kPrime2;
        uint64_t v3 = seed;
        uint64_t v4 = seed - kPrime1;
        for (; rest >= 32; rest -= 32, p += 32) {
            v1 = xxh64_detail::round(v1, detail::load_le64(p));
            v2 = xxh64_detail::round(v2, detail::load_le64(p + 8));
            v3 = xxh64_detail::round(v3, detail::load_le64(p + 16));
            v4 = xxh64_detail::round(v4, detail::load_le64(p + 24));
        }
        h = detail::rotl64(v1, 1) + detail::rotl64(v2, 7) + detail::rotl64(v3, 12) + detail::rotl64(v4, 18);
        h = merge_round(h, v1);
        h = merge_round(h, v2);
        h = merge_round(h, v3);
        h = merge_round(h, v4);
    } else {
        h = seed + kPrime5;
    }
    h += static_cast<uint64_t>(len);
    return finalize(h, p, rest);
}

// XXH64 of a 4- or 8-byte little-endian value (Parquet's INT32/FLOAT and
// INT64/DOUBLE plain encodings), without the byte round-trip: the same
// digest as xxhash64() of those bytes.
inline uint64_t xxhash64_u32(uint32_t value, uint64_t seed = 0) {
    using namespace xxh64_detail;
    uint64_t h = seed + kPrime5 + 4;
    h ^= static_cast<uint64_t>(value) * kPrime1;
    h = detail::rotl64(h, 23) * kPrime2 + kPrime3;
    return avalanche(h);
}

inline uint64_t xxhash64_u64(uint64_t value, uint64_t seed = 0) {
    using namespace xxh64_detail;
    uint64_t h = seed + kPrime5 + 8;
    h ^= xxh64_detail::round(0, value);
    h = detail::rotl64(h, 27) * kPrime1 + kPrime4;
    return avalanche(h);
}

}  // namespace bloomkit
