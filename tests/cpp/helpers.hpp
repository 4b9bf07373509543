// Shared helpers of the C++ tests: integer key batches and digests, and the
// check of a key source's hashing walk.
#pragma once

#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/hash.hpp>
#include <bloomkit/keys.hpp>
#include <bloomkit/parallel.hpp>
#include <bloomkit/simd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#if defined(BLOOMKIT_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace bloomkit_test {

// Restores the active SIMD level when a test ends (the level is process-wide).
struct LevelRestore {
    bloomkit::simd::Level saved = bloomkit::simd::active_level();
    ~LevelRestore() { bloomkit::simd::set_level(saved); }
};

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

// A Bloom filter's geometry for `capacity` keys at 1 %, sized by layout_size.
inline bloomkit::BloomGeometry geometry_at_one_percent(bloomkit::Layout layout, uint64_t capacity, uint32_t seed) {
    const bloomkit::BloomSize size = bloomkit::layout_size(layout, capacity, 0.01);
    bloomkit::BloomGeometry g;
    g.num_bits = size.num_bits;
    g.num_hashes = size.num_hashes;
    g.seed = seed;
    g.capacity = capacity;
    g.error_rate = 0.01;
    g.layout = layout;
    return g;
}

// Hashes through a cache, like the bindings' Python-object source: never
// read by two threads at once (reads_concurrently is false for it), so a
// batch of it stays on the calling thread.
class CachedKeys {
  public:
    explicit CachedKeys(const std::vector<uint64_t>& keys) : keys_(keys) {}
    size_t size() const { return keys_.size(); }
    bloomkit::Hash128 hash(size_t i, uint32_t seed) const {
        ++calls_;
        if (std::this_thread::get_id() != owner_) ++foreign_calls_;
        return bloomkit::murmur3_x64_128_u64(keys_[i], seed);
    }
    size_t calls() const { return calls_; }
    size_t foreign_calls() const { return foreign_calls_; }

  private:
    const std::vector<uint64_t>& keys_;
    const std::thread::id owner_ = std::this_thread::get_id();
    mutable size_t calls_ = 0;  // a data race if two threads called hash()
    mutable size_t foreign_calls_ = 0;
};

// A lookup as the bindings make it (common.hpp, contains_many_on): split by
// halves of the batch when the source allows, else on this thread.
template <class Keys>
void contains_on_two_threads(const bloomkit::BloomFilter& filter, const Keys& keys, uint8_t* present) {
    const bool split = bloomkit::lookup_halves_on_two_threads(
        keys, present, [&](const auto& range, uint8_t* out) { filter.contains_many(range, out); });
    if (!split) filter.contains_many(keys, present);
}

inline bloomkit::Hash128 digest(uint64_t key, uint32_t seed) { return bloomkit::murmur3_x64_128_u64(key, seed); }

// for_each_hash<Use> over keys [first, first + count) calls each key once,
// in order, with keys.hash(first + j, seed); hash_range stores the same.
template <bloomkit::DigestUse Use = bloomkit::DigestUse::Probed, class Keys>
void require_walk_equals_index(const Keys& keys, size_t first, size_t count, uint32_t seed) {
    size_t visited = 0;
    bloomkit::for_each_hash<Use>(keys, first, count, seed, [&](size_t j, const bloomkit::Hash128& h) {
        REQUIRE(j == visited);
        const bloomkit::Hash128 expected = keys.hash(first + j, seed);
        REQUIRE(h.h1 == expected.h1);
        REQUIRE(h.h2 == expected.h2);
        ++visited;
    });
    REQUIRE(visited == count);
    std::vector<bloomkit::Hash128> digests(count);
    bloomkit::hash_range(keys, first, count, seed, digests.data());
    for (size_t j = 0; j < count; ++j) {
        const bloomkit::Hash128 expected = keys.hash(first + j, seed);
        REQUIRE(digests[j].h1 == expected.h1);
        REQUIRE(digests[j].h2 == expected.h2);
    }
}

#if defined(BLOOMKIT_HAVE_ZLIB)
// `data` as a raw deflate stream (zlib's deflate, windowBits -15), as ORC's writers make it.
inline std::vector<uint8_t> deflate_raw(const std::vector<uint8_t>& data, int level = 6) {
    z_stream s;
    std::memset(&s, 0, sizeof s);
    REQUIRE(deflateInit2(&s, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    std::vector<uint8_t> out(deflateBound(&s, static_cast<uLong>(data.size())));
    s.next_in = const_cast<Bytef*>(data.data());
    s.avail_in = static_cast<uInt>(data.size());
    s.next_out = out.data();
    s.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&s, Z_FINISH) == Z_STREAM_END);
    out.resize(out.size() - s.avail_out);
    deflateEnd(&s);
    return out;
}
#endif

}  // namespace bloomkit_test
