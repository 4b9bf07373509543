// Shared helpers of the C++ tests: integer key batches and digests.
#pragma once

#include <bloomkit/hash.hpp>
#include <bloomkit/keys.hpp>

#include <cstdint>
#include <vector>

namespace bloomkit_test {

// SplitMix64's output function: a bijection on 64-bit integers, so distinct
// inputs give distinct, well-spread keys.
inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// `count` distinct 64-bit keys; different `stream`s give disjoint sets
// (the stream occupies the top 16 bits before mixing).
inline std::vector<uint64_t> distinct_keys(size_t count, uint64_t stream) {
    std::vector<uint64_t> keys(count);
    for (size_t i = 0; i < count; ++i) keys[i] = splitmix64((stream << 48) | i);
    return keys;
}

// The core's view of a uint64 array: what the bindings build from a NumPy array.
inline bloomkit::IntegerKeys<uint64_t> as_keys(const std::vector<uint64_t>& keys) {
    return bloomkit::IntegerKeys<uint64_t>(reinterpret_cast<const uint8_t*>(keys.data()), keys.size(),
                                           sizeof(uint64_t));
}

inline bloomkit::Hash128 digest(uint64_t key, uint32_t seed) { return bloomkit::murmur3_x64_128_u64(key, seed); }

}  // namespace bloomkit_test
