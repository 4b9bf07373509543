// SipHash-2-4-128 (siphash.hpp) against the reference implementation's
// vectors, and the keyed hashing built on it (keys.hpp, KeyHashing).
#include <doctest/doctest.h>

#include <bloomkit/keys.hpp>
#include <bloomkit/siphash.hpp>

#include <cstdint>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;

namespace {

// Reference key 00 01 .. 0f.
SipKey reference_key() {
    uint8_t key[16];
    for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i);
    return SipKey::from_bytes(key);
}

std::vector<uint8_t> counting_bytes(size_t n) {
    std::vector<uint8_t> m(n);
    for (size_t i = 0; i < n; ++i) m[i] = static_cast<uint8_t>(i);
    return m;
}

Hash128 from_reference_hex(const char* hex) {
    // 16 output bytes: h1 = bytes 0-7 little-endian, h2 = bytes 8-15.
    uint8_t bytes[16];
    for (int i = 0; i < 16; ++i) {
        auto nibble = [](char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
        bytes[i] = static_cast<uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    }
    return {detail::load_le64(bytes), detail::load_le64(bytes + 8)};
}

}  // namespace

// A sample of vectors_sip128 (all 64 are checked from Python, tests/test_keyed.py,
// against tests/vectors/siphash-2-4-128.txt): every tail length 0..7 and a few
// multi-word messages.
TEST_CASE("siphash24_128 matches the reference vectors") {
    const struct {
        size_t len;
        const char* hex;
    } vectors[] = {
        {0, "a3817f04ba25a8e66df67214c7550293"},  {1, "da87c1d86b99af44347659119b22fc45"},
        {2, "8177228da4a45dc7fca38bdef60affe4"},  {3, "9c70b60c5267a94e5f33b6b02985ed51"},
        {4, "f88164c12d9c8faf7d0f6e7c7bcd5579"},  {5, "1368875980776f8854527a07690e9627"},
        {6, "14eeca338b208613485ea0308fd7a15e"},  {7, "a1f1ebbed8dbc153c0b84aa61ff08239"},
        {8, "3b62a9ba6258f5610f83e264f31497b4"},  {15, "5493e99933b0a8117e08ec0f97cfc3d9"},
        {16, "6ee2a4ca67b054bbfd3315bf85230577"}, {63, "5150d1772f50834a503e069a973fbd7c"},
    };
    const std::vector<uint8_t> message = counting_bytes(64);
    for (const auto& v : vectors) {
        CAPTURE(v.len);
        const Hash128 got = siphash24_128(reference_key(), message.data(), v.len);
        const Hash128 want = from_reference_hex(v.hex);
        CHECK(got.h1 == want.h1);
        CHECK(got.h2 == want.h2);
    }
}

TEST_CASE("the 8-byte integer specialisation equals SipHash of the little-endian bytes") {
    const SipKey key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
    for (uint64_t value : bloomkit_test::distinct_keys(1000, 9)) {
        uint8_t le[8];
        for (int b = 0; b < 8; ++b) le[b] = static_cast<uint8_t>(value >> (8 * b));
        const Hash128 a = siphash24_128_u64(key, value);
        const Hash128 b = siphash24_128(key, le, 8);
        REQUIRE(a.h1 == b.h1);
        REQUIRE(a.h2 == b.h2);
    }
}

TEST_CASE("KeyHashing: unkeyed is MurmurHash3 under the seed, keyed depends on secret and seed") {
    const SipKey secret{1, 2};
    const KeyHashing plain(7);
    const KeyHashing keyed(7, secret);
    const KeyHashing other_seed(8, secret);
    const KeyHashing other_secret(7, SipKey{1, 3});
    const Hash128 m = murmur3_x64_128_u64(42, 7);
    CHECK(plain.integer(42).h1 == m.h1);
    CHECK(plain.integer(42).h2 == m.h2);
    CHECK_FALSE(plain.keyed());
    CHECK(keyed.keyed());
    // Keyed digest: SipHash under the seed's derived key, never Murmur's.
    const Hash128 k = keyed.integer(42);
    const Hash128 want = siphash24_128_u64(KeyHashing::seed_key(secret, 7), 42);
    CHECK(k.h1 == want.h1);
    CHECK(k.h2 == want.h2);
    CHECK(k.h1 != m.h1);
    CHECK(other_seed.integer(42).h1 != k.h1);
    CHECK(other_secret.integer(42).h1 != k.h1);
    // The key check identifies the secret, not the seed.
    CHECK(keyed.key_check().h1 == other_seed.key_check().h1);
    CHECK(keyed.key_check().h1 != other_secret.key_check().h1);
}

TEST_CASE("visit_source: a keyed batch gives the same digests as keyed single keys") {
    const std::vector<uint64_t> values = bloomkit_test::distinct_keys(3000, 4);  // > one keyed block
    const KeyHashing keyed(3, SipKey{11, 12});
    size_t checked = 0;
    keyed.visit_source(bloomkit_test::as_keys(values), [&](const auto& source) {
        REQUIRE(source.size() == values.size());
        for (size_t i = 0; i < values.size(); ++i) {
            const Hash128 batch = source.hash(i, 3);
            const Hash128 single = keyed.integer(values[i]);
            REQUIRE(batch.h1 == single.h1);
            REQUIRE(batch.h2 == single.h2);
            ++checked;
        }
    });
    CHECK(checked == values.size());
    const KeyHashing plain(3);
    plain.visit_source(bloomkit_test::as_keys(values), [&](const auto& source) {
        CHECK(source.hash(5, 3).h1 == murmur3_x64_128_u64(values[5], 3).h1);
    });
}
