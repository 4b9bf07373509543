// Spark's Bloom filter in the core (spark_sketch.hpp): the batch loops the
// bindings call give exactly what the single-key functions give, and
// offsets outside the data stop a batch at the first bad key.
#include <doctest/doctest.h>

#include <bloomkit/spark_sketch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace bloomkit::spark;

TEST_CASE("Spark: batch hash pairs equal the single-key pairs") {
    const std::vector<int64_t> longs = {0, 1, -1, INT64_MIN, INT64_MAX, 1234567890123LL};
    std::vector<HashPair> pairs(longs.size());
    hash_pairs_of_longs(longs.data(), longs.size(), 7, pairs.data());
    for (size_t i = 0; i < longs.size(); ++i) {
        const HashPair one = hash_pair_long(longs[i], 7);
        CHECK(pairs[i].h1 == one.h1);
        CHECK(pairs[i].h2 == one.h2);
    }

    const std::string data = "abcdefghij";
    const std::vector<int64_t> offsets = {0, 0, 3, 7, 10};  // "", "abc", "defg", "hij"
    std::vector<HashPair> strings(offsets.size() - 1);
    const size_t done = hash_pairs_of_offsets(reinterpret_cast<const uint8_t*>(data.data()), data.size(),
                                              offsets.data(), strings.size(), 0, strings.data());
    REQUIRE(done == strings.size());
    for (size_t i = 0; i < strings.size(); ++i) {
        const HashPair one = hash_pair_bytes(reinterpret_cast<const uint8_t*>(data.data()) + offsets[i],
                                             static_cast<size_t>(offsets[i + 1] - offsets[i]), 0);
        CHECK(strings[i].h1 == one.h1);
        CHECK(strings[i].h2 == one.h2);
    }
}

TEST_CASE("Spark: offsets that leave the data or go backwards stop at that key") {
    const std::string data = "abcdef";
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
    std::vector<HashPair> out(3);
    const std::vector<int64_t> past_end = {0, 2, 7, 7};
    CHECK(hash_pairs_of_offsets(bytes, data.size(), past_end.data(), 3, 0, out.data()) == 1);
    const std::vector<int64_t> backwards = {0, 4, 3, 6};
    CHECK(hash_pairs_of_offsets(bytes, data.size(), backwards.data(), 3, 0, out.data()) == 1);
    const std::vector<int64_t> negative = {-1, 2, 3, 6};
    CHECK(hash_pairs_of_offsets(bytes, data.size(), negative.data(), 3, 0, out.data()) == 0);
}

TEST_CASE("Spark: add_many and contains_many are add and contains key by key") {
    SparkBloomFilter batch(2, 3, 11, 16);
    SparkBloomFilter single(2, 3, 11, 16);
    std::vector<int64_t> keys;
    for (int64_t i = 0; i < 200; ++i) keys.push_back(i % 150);  // the last 50 repeat
    std::vector<HashPair> pairs(keys.size());
    hash_pairs_of_longs(keys.data(), keys.size(), batch.seed(), pairs.data());
    std::vector<uint8_t> was_present(keys.size());
    batch.add_many(pairs.data(), pairs.size(), was_present.data());
    for (size_t i = 0; i < pairs.size(); ++i) CHECK(was_present[i] == single.add(pairs[i]));
    CHECK(batch == single);
    for (size_t i = 150; i < 200; ++i) CHECK(was_present[i] == 1);

    SparkBloomFilter no_result(2, 3, 11, 16);
    no_result.add_many(pairs.data(), pairs.size(), nullptr);
    CHECK(no_result == single);

    std::vector<uint8_t> found(pairs.size());
    batch.contains_many(pairs.data(), pairs.size(), found.data());
    for (size_t i = 0; i < pairs.size(); ++i) CHECK(found[i] == 1);

    CHECK(batch.set_bits() > 0);
    CHECK(batch.nbytes() == 16 * 8);
    batch.clear();
    CHECK(batch.set_bits() == 0);
    CHECK(batch == SparkBloomFilter(2, 3, 11, 16));
}
