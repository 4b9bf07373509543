// SipHash-2-4 with 128-bit output, the keyed hash of filters built with a
// secret key (docs/RELIABILITY.md, "Keyed hashing").
//
// SipHash is a pseudorandom function (Aumasson & Bernstein, "SipHash: a fast
// short-input PRF", INDOCRYPT 2012): without the 128-bit key, its outputs on
// chosen inputs cannot be told from random ones, so an adversary who picks
// the keys of a filter cannot steer them onto chosen bit positions (the
// pollution and false-positive forging attacks of Gerbet, Kumar & Lauradoux,
// "The Power of Evil Choices in Bloom Filters", DSN 2015). This is an
// implementation written for bloomkit from the paper and the reference
// description (c = 2 compression rounds, d = 4 finalisation rounds, the
// 128-bit variant's 0xee / 0xdd domain constants); it is checked against the
// reference implementation's 64 test vectors (tests/cpp/test_hash.cpp,
// tests/test_keyed.py). Output bytes 0-7 are h1 and 8-15 are h2, each
// little-endian, so Hash128 holds the reference's 16 output bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hash.hpp"

namespace bloomkit {

// The 128-bit SipHash key as two little-endian 64-bit halves (bytes 0-7 are
// k0, bytes 8-15 are k1, as the reference reads its 16-byte key).
struct SipKey {
    uint64_t k0;
    uint64_t k1;
    bool operator==(const SipKey& o) const { return k0 == o.k0 && k1 == o.k1; }
    bool operator!=(const SipKey& o) const { return !(*this == o); }

    static SipKey from_bytes(const uint8_t* key16) { return {detail::load_le64(key16), detail::load_le64(key16 + 8)}; }
};

namespace detail {

struct SipState {
    uint64_t v0, v1, v2, v3;

    explicit SipState(const SipKey& key)
        : v0(key.k0 ^ 0x736f6d6570736575ULL),
          v1(key.k1 ^ 0x646f72616e646f6dULL ^ 0xee),  // 0xee: the 128-bit output variant
          v2(key.k0 ^ 0x6c7967656e657261ULL),
          v3(key.k1 ^ 0x7465646279746573ULL) {}

    void round() {
        v0 += v1;
        v1 = rotl64(v1, 13);
        v1 ^= v0;
        v0 = rotl64(v0, 32);
        v2 += v3;
        v3 = rotl64(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = rotl64(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = rotl64(v1, 17);
        v1 ^= v2;
        v2 = rotl64(v2, 32);
    }

    // One message word through the c = 2 compression rounds.
    void absorb(uint64_t m) {
        v3 ^= m;
        round();
        round();
        v0 ^= m;
    }

    // The d = 4 finalisation rounds for each 64-bit half of the output.
    Hash128 finish() {
        v2 ^= 0xee;
        for (int i = 0; i < 4; ++i) round();
        const uint64_t h1 = v0 ^ v1 ^ v2 ^ v3;
        v1 ^= 0xdd;
        for (int i = 0; i < 4; ++i) round();
        const uint64_t h2 = v0 ^ v1 ^ v2 ^ v3;
        return {h1, h2};
    }
};

}  // namespace detail

// SipHash-2-4-128 of `len` bytes at `data` under `key`.
inline Hash128 siphash24_128(const SipKey& key, const void* data, size_t len) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    detail::SipState s(key);
    const size_t whole = len & ~size_t(7);
    for (size_t i = 0; i < whole; i += 8) s.absorb(detail::load_le64(bytes + i));
    // The last word: the remaining 0..7 bytes, and the length mod 256 in the top byte.
    uint64_t k1 = 0;
    uint64_t k2 = 0;
    detail::load_tail(bytes + whole, len & 7, k1, k2);
    s.absorb(k1 | (uint64_t(len & 0xff) << 56));
    return s.finish();
}

// The same digest for the canonical 8-byte little-endian encoding of an
// integer key: one full word, then the length word 8 << 56. Identical to
// siphash24_128(key, &le_bytes, 8) by construction (and by test).
inline Hash128 siphash24_128_u64(const SipKey& key, uint64_t value) {
    detail::SipState s(key);
    s.absorb(value);
    s.absorb(uint64_t(8) << 56);
    return s.finish();
}

}  // namespace bloomkit
