// MurmurHash3_x64_128 and the index derivation every filter shares.
//
// MurmurHash3 is Austin Appleby's public-domain hash; this is an implementation
// written for bloomkit from the published algorithm (block mix, tail mix,
// fmix64 finaliser). It is defined on bytes read little-endian, so its output
// is the same on every host and equals `mmh3.hash128(data, seed, signed=False)`
// split into (low 64 bits, high 64 bits) = (h1, h2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "platform.hpp"

namespace bloomkit {

// The 128-bit digest of one key: h1 is the low half, h2 the high half.
struct Hash128 {
    uint64_t h1;
    uint64_t h2;
};

namespace detail {

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Reads 8 bytes little-endian regardless of host byte order or alignment.
inline uint64_t load_le64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = platform::bswap64(v);
#endif
    return v;
}

inline uint64_t load_le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = static_cast<uint32_t>(platform::bswap64(v) >> 32);
#endif
    return v;
}

// The `rest` (< 16) tail bytes at `tail` as two little-endian lanes (bytes
// 0-7 in k1, 8-15 in k2), with a few overlapping loads instead of a loop
// over bytes: one branch per size class (0, 1-3, 4-7, 8-15) rather than
// one per byte, and never a read outside [tail, tail + rest).
inline void load_tail(const uint8_t* tail, size_t rest, uint64_t& k1, uint64_t& k2) {
    k2 = 0;
    if (rest >= 8) {
        k1 = load_le64(tail);
        // Bytes [rest - 8, rest) shifted down by 16 - rest bytes so byte 8
        // lands in bit 0 (two shifts: rest == 8 shifts by 64 and leaves 0).
        k2 = load_le64(tail + rest - 8) >> (8 * (16 - rest) - 1) >> 1;
    } else if (rest >= 4) {
        // Two overlapping 4-byte loads; shared bytes are equal, so OR is exact.
        k1 = load_le32(tail) | (load_le32(tail + rest - 4) << (8 * (rest - 4)));
    } else if (rest > 0) {
        // Bytes 0, rest/2 and rest-1 cover every length 1..3.
        k1 = uint64_t(tail[0]) | (uint64_t(tail[rest / 2]) << (8 * (rest / 2))) |
             (uint64_t(tail[rest - 1]) << (8 * (rest - 1)));
    } else {
        k1 = 0;
    }
}

// The final avalanche: every input bit affects every output bit with
// probability close to 1/2. (This, finalize_lanes and murmur3_x64_128_u64
// are always inlined: inside the large AVX2 hashing loops of keys.hpp GCC
// otherwise left finalize_lanes out of line, a call per key.)
BLOOMKIT_ALWAYS_INLINE uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

constexpr uint64_t kC1 = 0x87c37b91114253d5ULL;
constexpr uint64_t kC2 = 0x4cf5ad432745937fULL;

inline uint64_t mix_k1(uint64_t k1) { return rotl64(k1 * kC1, 31) * kC2; }
inline uint64_t mix_k2(uint64_t k2) { return rotl64(k2 * kC2, 33) * kC1; }

// The finaliser after the length has been XORed into both lanes.
BLOOMKIT_ALWAYS_INLINE Hash128 finalize_lanes(uint64_t h1, uint64_t h2) {
    h1 += h2;
    h2 += h1;
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 += h2;
    h2 += h1;
    return {h1, h2};
}

inline Hash128 finalize(uint64_t h1, uint64_t h2, uint64_t len) { return finalize_lanes(h1 ^ len, h2 ^ len); }

// One 16-byte block of the body.
inline void mix_block(uint64_t& h1, uint64_t& h2, const uint8_t* block) {
    const uint64_t k1 = load_le64(block);
    const uint64_t k2 = load_le64(block + 8);
    h1 ^= mix_k1(k1);
    h1 = rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    h2 ^= mix_k2(k2);
    h2 = rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
}

// The last `rest` (< 16) bytes, little-endian, split into two lanes.
// mix_k1(0) == mix_k2(0) == 0, so an empty lane needs no branch.
inline void mix_tail(uint64_t& h1, uint64_t& h2, const uint8_t* tail, size_t rest) {
    uint64_t k1;
    uint64_t k2;
    load_tail(tail, rest, k1, k2);
    h2 ^= mix_k2(k2);
    h1 ^= mix_k1(k1);
}

}  // namespace detail

// MurmurHash3_x64_128 of `len` bytes at `data`. The seed is 32-bit in the
// reference algorithm (and in mmh3); it initialises both 64-bit lanes.
inline Hash128 murmur3_x64_128(const void* data, size_t len, uint32_t seed) {
    using namespace detail;
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    const size_t nblocks = len / 16;
    uint64_t h1 = seed;
    uint64_t h2 = seed;

    for (size_t i = 0; i < nblocks; ++i) mix_block(h1, h2, bytes + i * 16);
    mix_tail(h1, h2, bytes + nblocks * 16, len & 15);
    return finalize(h1, h2, len);
}

// The same digest for the canonical 8-byte little-endian encoding of an
// integer key, without going through memory: with len == 8 there are no
// blocks and the tail is exactly `value` in lane 1. Identical output to
// murmur3_x64_128(&le_bytes, 8, seed) by construction (and by test).
// With len == 8 both lanes start as seed ^ 8 after the length XOR; folding
// that constant saves an XOR per key (the compiler keeps (x ^ seed) ^ 8).
BLOOMKIT_ALWAYS_INLINE Hash128 murmur3_x64_128_u64(uint64_t value, uint32_t seed) {
    using namespace detail;
    const uint64_t lane = uint64_t(seed) ^ 8;
    return finalize_lanes(mix_k1(value) ^ lane, lane);
}

// Maps a uniformly distributed 64-bit value onto [0, range) without a
// division: floor(x * range / 2^64) (Lemire, "Fast random integer generation
// in an interval", 2019). Uses the high bits of x, which MurmurHash mixes as
// well as the low ones, and works for any range up to 2^64.
inline uint64_t fast_range64(uint64_t x, uint64_t range) { return platform::mul_high64(x, range); }

// Enhanced double hashing (Dillinger & Manolios, "Bloom Filters in
// Probabilistic Verification", FMCAD 2004, Algorithm 2):
//     x_0 = a, y_0 = b;   x_i = x_{i-1} + y_{i-1},  y_i = y_{i-1} + i
// gives g_i = a + i*b + (i^3 - i)/6, which avoids the clustering of plain
// double hashing (a + i*b) when b shares factors with m. The walk is done in
// 64-bit arithmetic (mod 2^64) and each step is mapped onto [0, m) with
// fast_range64, so filters far beyond 2^32 positions stay uniform: nothing is
// ever reduced modulo m, and m need not be a power of two or a prime.
//
// The step b is fmix64(h2), not h2 itself. MurmurHash3's two halves are not
// always independent: for a key of at most 8 bytes hashed with a seed equal
// to its length (seed=8 with integer keys, seed=5 with 5-byte strings) the
// lanes cancel (h2 ^= len leaves 0) and the output is h2 = 1.5 * h1 mod 2^64.
// Then every probe position is a fixed multiple of one value, positions of
// different keys line up, and the measured false-positive rate of a 1 %
// filter rose to 1.6 %. One extra finaliser round makes b a non-linear
// function of h1 in that case and costs a few cycles per key otherwise.
class IndexSequence {
  public:
    IndexSequence(Hash128 h, uint64_t range) : x_(h.h1), y_(detail::fmix64(h.h2)), step_(0), range_(range) {}

    uint64_t next() {
        const uint64_t index = fast_range64(x_, range_);
        ++step_;
        x_ += y_;
        y_ += step_;
        return index;
    }

  private:
    uint64_t x_;
    uint64_t y_;
    uint64_t step_;
    uint64_t range_;
};

}  // namespace bloomkit
