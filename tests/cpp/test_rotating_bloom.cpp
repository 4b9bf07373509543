// RotatingBloomFilter (rotating_bloom.hpp): forgetting after the window and
// keeping within it (by keys, inside batches too, and by clock), exact
// test-and-set across generations, the window's rate, round trips and the
// refusal of corrupt frames.
#include <doctest/doctest.h>

#include <bloomkit/rotating_bloom.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;

namespace {
RotatingParams key_window(uint64_t keys, uint32_t generations, Layout layout = Layout::SplitBlock) {
    RotatingParams p;
    p.capacity = keys;
    p.error_rate = 0.01;
    p.window = WindowSpec::of_keys(keys, generations);
    p.seed = 7;
    p.layout = layout;
    return p;
}
}  // namespace

TEST_CASE("a key window keeps the last W keys and forgets by W + n, in batches exactly as key by key") {
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        RotatingBloomFilter single(key_window(1000, 5, layout));  // n = 250
        RotatingBloomFilter batch(key_window(1000, 5, layout));
        const auto keys = bloomkit_test::distinct_keys(5000, 1);
        std::vector<uint8_t> was(keys.size());
        batch.add_many(bloomkit_test::as_keys(keys), was.data());
        for (size_t i = 0; i < keys.size(); ++i)
            REQUIRE(single.add(bloomkit_test::digest(keys[i], 7)) == (was[i] != 0));
        CHECK(single == batch);
        CHECK(batch.keys_seen() == 5000);
        CHECK(batch.current() == 19);  // 4999 / 250: the next key starts generation 20
        // Generations 15..19 are live: keys 3750.. are all present, older ones
        // only as false positives (window rate 1 %).
        for (size_t i = 3750; i < 5000; ++i) REQUIRE(batch.contains(bloomkit_test::digest(keys[i], 7)));
        size_t remembered = 0;
        for (size_t i = 0; i < 3750; ++i) remembered += batch.contains(bloomkit_test::digest(keys[i], 7));
        CHECK(remembered < 3750 / 50);
        CHECK(batch.count() <= 1250);  // new keys of the live generations, less the few false positives
        CHECK(batch.count() >= 1250 - 1250 / 50);
    }
}

TEST_CASE("test-and-set is exact across generations: a key seen in an older generation is not inserted again") {
    RotatingBloomFilter f(key_window(100, 4));  // n = 34
    const Hash128 key = bloomkit_test::digest(12345, 7);
    CHECK_FALSE(f.add(key));
    const auto filler = bloomkit_test::distinct_keys(40, 2);
    f.add_many(bloomkit_test::as_keys(filler), nullptr);  // now in generation 1
    CHECK(f.current() == 1);
    const uint64_t before = f.count();
    CHECK(f.add(key));  // seen in generation 0: reported, not re-inserted
    CHECK(f.count() == before);
    std::vector<uint64_t> twice = {99999, 99999};
    std::vector<uint8_t> was(2);
    f.add_many(bloomkit_test::as_keys(twice), was.data());
    CHECK(was[0] == 0);
    CHECK(was[1] == 1);
}

TEST_CASE("a time window rotates on the observed clock and clears the slot it reuses") {
    RotatingParams p;
    p.capacity = 1000;
    p.error_rate = 0.01;
    p.window = WindowSpec::of_seconds(100.0, 5);  // I = 25 s
    p.layout = Layout::Classic;
    RotatingBloomFilter f(p);
    const Hash128 key = bloomkit_test::digest(1, 0);
    CHECK_THROWS_WITH_AS(f.add(key), doctest::Contains("needs the clock"), std::invalid_argument);  // no clock yet
    f.observe(1000.0);
    CHECK_FALSE(f.add(key));
    f.observe(1099.0);
    CHECK(f.contains(key));  // kept the whole window
    f.observe(1000.0);       // the clock going back moves nothing
    CHECK(f.current() == 1099 / 25);
    f.observe(1125.0);  // generation 45 = 40 + 5: forgotten
    CHECK_FALSE(f.contains(key));
    CHECK_FALSE(f.add(key));
    f.observe(1e6);  // far ahead: every slot cleared once
    CHECK_FALSE(f.contains(key));
    CHECK(f.count() == 0);
}

TEST_CASE("the window's measured rate is within its bound with every generation full") {
    RotatingBloomFilter f(key_window(40000, 5, Layout::SplitBlock));  // n = 10000
    const auto keys = bloomkit_test::distinct_keys(50000, 3);         // generations 0..4 all full
    f.add_many(bloomkit_test::as_keys(keys), nullptr);
    CHECK(f.current() == 4);
    const auto absent = bloomkit_test::distinct_keys(200000, 4);
    std::vector<uint8_t> hits(absent.size());
    f.contains_many(bloomkit_test::as_keys(absent), hits.data());
    size_t fp = 0;
    for (uint8_t h : hits) fp += h;
    // Expected <= 1 % = 2000; 5 sigma above is ~2220.
    CHECK(fp <= 2220);
    CHECK(fp >= 1000);  // and the generations are really OR-ed (each alone is ~0.2 %)
}

TEST_CASE("round trip is byte-exact and corrupt frames are refused before allocating") {
    RotatingBloomFilter f(key_window(1000, 5));
    f.add_many(bloomkit_test::as_keys(bloomkit_test::distinct_keys(1300, 5)), nullptr);
    const std::vector<uint8_t> bytes = f.serialize();
    const RotatingBloomFilter back = RotatingBloomFilter::deserialize(bytes.data(), bytes.size());
    CHECK(back == f);
    CHECK(back.serialize() == bytes);

    // Rewrites one params field and the checksum, so only the field is wrong.
    auto with_field = [&](size_t offset, const void* value, size_t size) {
        std::vector<uint8_t> copy = bytes;
        std::memcpy(copy.data() + kHeaderSize + offset, value, size);
        const uint64_t sum = frame_checksum(copy.data(), copy.size() - kChecksumSize);
        std::memcpy(copy.data() + copy.size() - kChecksumSize, &sum, kChecksumSize);
        return copy;
    };
    const uint32_t generations = 65;
    auto bad = with_field(28, &generations, 4);
    CHECK_THROWS_WITH_AS(RotatingBloomFilter::deserialize(bad.data(), bad.size()),
                         doctest::Contains("generations must be in [2, 64]"), FormatError);
    const uint64_t huge_bits = uint64_t(1) << 60;
    bad = with_field(48, &huge_bits, 8);
    CHECK_THROWS_AS(RotatingBloomFilter::deserialize(bad.data(), bad.size()), FormatError);
    const uint32_t unit = 7;
    bad = with_field(24, &unit, 4);
    CHECK_THROWS_WITH_AS(RotatingBloomFilter::deserialize(bad.data(), bad.size()),
                         doctest::Contains("unknown window unit 7"), FormatError);
    // The state block: the current generation must follow from keys seen.
    const size_t payload = bytes.size() - kChecksumSize - f.nbytes();
    std::vector<uint8_t> state = bytes;
    const uint64_t wrong_current = 3;
    std::memcpy(state.data() + payload, &wrong_current, 8);
    const uint64_t sum = frame_checksum(state.data(), state.size() - kChecksumSize);
    std::memcpy(state.data() + state.size() - kChecksumSize, &sum, kChecksumSize);
    CHECK_THROWS_WITH_AS(RotatingBloomFilter::deserialize(state.data(), state.size()),
                         doctest::Contains("does not follow from 1300 keys seen"), FormatError);
}
