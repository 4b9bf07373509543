// hashing="xxhash64" (docs/FORMAT.md, "Key hashing"): the (h1, h2) of a key
// from its XXH64 digest (seed 42), against vectors computed from Python
// (the xxhash package's XXH64 and the formula), and the agreement of every
// route to it: Xxh64Hasher on bytes and integers, KeyHashing, and
// precomputed digests (Xxh64DigestKeys) through a BloomFilter's batches.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/erased_keys.hpp>
#include <bloomkit/keys.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace {

struct PairVector {
    std::string data;
    uint32_t seed;
    uint64_t digest, h1, h2;
};

const uint8_t* bytes_of(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace

TEST_CASE("xxh64_digest_pair matches the documented derivation") {
    const std::string five("\x05\0\0\0\0\0\0\0", 8);
    const std::vector<PairVector> vectors = {
        {"", 0, 0x98b1582b0977e704ULL, 0xd74513f17a748b9dULL, 0x3e6e800c33cc0056ULL},
        {"https://example.org/item/7", 0, 0x08a84e588df809b2ULL, 0x2af1dc228f7111f6ULL, 0x52762036aee26d80ULL},
        {"https://example.org/item/7", 12345, 0x08a84e588df809b2ULL, 0x3a2c25de2df189f2ULL, 0x5c021746c150dffcULL},
        {five, 7, 0x56c2fce454766645ULL, 0xa0c953a0c81b83bcULL, 0x9fd0b6fb42d82bddULL},
    };
    for (const PairVector& v : vectors) {
        CHECK(bloomkit::xxhash64(bytes_of(v.data), v.data.size(), bloomkit::kXxh64KeySeed) == v.digest);
        const bloomkit::Hash128 h = bloomkit::Xxh64Hasher{v.seed}.bytes(bytes_of(v.data), v.data.size());
        CHECK(h.h1 == v.h1);
        CHECK(h.h2 == v.h2);
        const bloomkit::Hash128 from_digest = bloomkit::xxh64_digest_pair(v.digest, v.seed);
        CHECK(from_digest.h1 == v.h1);
        CHECK(from_digest.h2 == v.h2);
    }
    // An integer key is its 8 little-endian bytes.
    const bloomkit::Hash128 h = bloomkit::Xxh64Hasher{7}.integer(5);
    CHECK(h.h1 == 0xa0c953a0c81b83bcULL);
    CHECK(h.h2 == 0x9fd0b6fb42d82bddULL);
}

TEST_CASE("KeyHashing with KeyDigest::Xxh64 hashes through Xxh64Hasher, single keys and batches") {
    const bloomkit::KeyHashing hashing(99, bloomkit::KeyDigest::Xxh64);
    CHECK_FALSE(hashing.plain());
    CHECK_FALSE(hashing.keyed());
    const std::vector<uint64_t> values = {0, 1, 5, ~uint64_t(0), 0x8000000000000000ULL};
    bloomkit::IntegerKeys<uint64_t> keys(reinterpret_cast<const uint8_t*>(values.data()), values.size(), 8);
    hashing.visit_source(keys, [&](const auto& source) {
        bloomkit::hash_chunks(source, 99, [&](size_t first, const bloomkit::Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) {
                const bloomkit::Hash128 expected = bloomkit::Xxh64Hasher{99}.integer(values[first + j]);
                CHECK(digests[j].h1 == expected.h1);
                CHECK(digests[j].h2 == expected.h2);
                const bloomkit::Hash128 single = hashing.integer(values[first + j]);
                CHECK(single.h1 == expected.h1);
            }
        });
    });
}

TEST_CASE("a filter built from precomputed digests equals one built from the keys") {
    std::vector<uint64_t> values(5000);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i * 0x9E3779B97F4A7C15ULL;
    std::vector<uint64_t> digests(values.size());
    for (size_t i = 0; i < values.size(); ++i) digests[i] = bloomkit::xxhash64_u64(values[i], bloomkit::kXxh64KeySeed);
    for (const bloomkit::Layout layout :
         {bloomkit::Layout::Classic, bloomkit::Layout::Blocked512, bloomkit::Layout::SplitBlock}) {
        const uint32_t k = layout == bloomkit::Layout::SplitBlock ? 8 : 7;
        const bloomkit::BloomGeometry geometry{512 * 100, k, 3, 5000, 0.01, layout, bloomkit::KeyDigest::Xxh64};
        bloomkit::BloomFilter by_keys(geometry), by_digests(geometry);
        const bloomkit::KeyHashing hashing(3, bloomkit::KeyDigest::Xxh64);
        bloomkit::IntegerKeys<uint64_t> keys(reinterpret_cast<const uint8_t*>(values.data()), values.size(), 8);
        hashing.visit_source(keys, [&](const auto& source) { by_keys.add_many(source, nullptr); });
        const bloomkit::Xxh64DigestKeys digest_keys(reinterpret_cast<const uint8_t*>(digests.data()), digests.size(),
                                                    8);
        by_digests.add_many(bloomkit::ErasedKeys(digest_keys), nullptr);
        CHECK(by_keys == by_digests);
        CHECK(by_keys.set_bits() > 0);
        bloomkit::BloomGeometry murmur = geometry;
        murmur.digest = bloomkit::KeyDigest::Murmur3;
        CHECK_THROWS_WITH_AS(bloomkit::BloomFilter(murmur).union_with(by_keys),
                             "union needs filters with equal hashing; got 'bloomkit' and 'xxhash64'",
                             std::invalid_argument);
    }
}
