// BloomFilter and the Bloom-family invariants shared with counting and scalable.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/counting_bloom.hpp>
#include <bloomkit/scalable_bloom.hpp>

#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::digest;
using bloomkit_test::distinct_keys;

namespace {

BloomGeometry geometry(uint64_t capacity, double error_rate, uint32_t seed) {
    return bloom_geometry_at_most(Layout::Classic, capacity, error_rate, seed);
}

// Fraction of `absent` keys a filter reports present.
template <class Filter>
double measured_fpr(const Filter& f, const std::vector<uint64_t>& absent) {
    std::vector<uint8_t> present(absent.size());
    f.contains_many(as_keys(absent), present.data());
    size_t hits = 0;
    for (uint8_t p : present) hits += p;
    return static_cast<double>(hits) / static_cast<double>(absent.size());
}

}  // namespace

TEST_CASE("BloomFilter: no false negatives, batch == scalar, FPR near the request") {
    const auto keys = distinct_keys(20000, 1);
    const auto absent = distinct_keys(100000, 2);
    BloomFilter batch(geometry(20000, 0.01, 7));
    BloomFilter scalar(geometry(20000, 0.01, 7));

    std::vector<uint8_t> was_present(keys.size());
    batch.add_many(as_keys(keys), was_present.data());
    for (size_t i = 0; i < keys.size(); ++i) REQUIRE(scalar.add(digest(keys[i], 7)) == (was_present[i] != 0));
    CHECK(batch == scalar);
    CHECK(batch.serialize() == scalar.serialize());

    std::vector<uint8_t> present(keys.size());
    batch.contains_many(as_keys(keys), present.data());
    for (size_t i = 0; i < keys.size(); ++i) REQUIRE(present[i] == 1);

    // p = 0.01 over 1e5 probes: sigma = 3.1e-4; 1.1 p + 5 sigma as in tests/support.py.
    const double fpr = measured_fpr(batch, absent);
    CHECK(fpr < 0.011 + 5 * 3.15e-4);
    CHECK(fpr > 0.005);
}

TEST_CASE("BloomFilter: a repeated key reports present; clear empties") {
    BloomFilter f(geometry(100, 0.01, 0));
    CHECK_FALSE(f.add(digest(42, 0)));
    CHECK(f.add(digest(42, 0)));
    CHECK(f.contains(digest(42, 0)));
    f.clear();
    CHECK_FALSE(f.contains(digest(42, 0)));
    CHECK(f == BloomFilter(geometry(100, 0.01, 0)));
}

TEST_CASE("BloomFilter: union is the filter of the union; incompatible filters are refused") {
    const auto a = distinct_keys(3000, 3), b = distinct_keys(3000, 4);
    BloomFilter fa(geometry(6000, 0.01, 1)), fb(geometry(6000, 0.01, 1)), both(geometry(6000, 0.01, 1));
    fa.add_many(as_keys(a), nullptr);
    fb.add_many(as_keys(b), nullptr);
    both.add_many(as_keys(a), nullptr);
    both.add_many(as_keys(b), nullptr);
    fa.union_with(fb);
    CHECK(fa == both);

    BloomFilter other_seed(geometry(6000, 0.01, 2));
    const auto before = fa.serialize();
    CHECK_THROWS_AS(fa.union_with(other_seed), std::invalid_argument);
    CHECK(fa.serialize() == before);
}

TEST_CASE("BloomFilter: serialize/deserialize round-trips byte for byte") {
    BloomFilter f(geometry(5000, 0.001, 99));
    f.add_many(as_keys(distinct_keys(4000, 5)), nullptr);
    const std::vector<uint8_t> frame = f.serialize();
    const BloomFilter g = BloomFilter::deserialize(frame.data(), frame.size());
    CHECK(g == f);
    CHECK(g.serialize() == frame);
}

TEST_CASE("CountingBloomFilter: a multiset with saturating counters") {
    CountingBloomFilter f(geometry(1000, 0.01, 3), 4);
    const Hash128 x = digest(1, 3), y = digest(2, 3);
    CHECK_FALSE(f.add(x));
    CHECK(f.add(x));
    CHECK(f.count(x) == 2);
    CHECK(f.remove(x));
    CHECK(f.contains(x));
    CHECK(f.remove(x));
    CHECK_FALSE(f.contains(x));

    // Removing an absent key fails and changes nothing.
    f.add(y);
    const auto before = f.serialize();
    CHECK_FALSE(f.remove(x));
    CHECK(f.serialize() == before);

    // 4-bit counters saturate at 15 and are never decremented again: a key
    // added 20 times stays present however often it is removed.
    CountingBloomFilter s(geometry(1000, 0.01, 3), 4);
    for (int i = 0; i < 20; ++i) s.add(x);
    CHECK(s.count(x) == 15);
    for (int i = 0; i < 40; ++i) s.remove(x);
    CHECK(s.contains(x));
    CHECK(s.count(x) == 15);
}

TEST_CASE("CountingBloomFilter: remove_many is all or nothing, to_bloom equals a Bloom filter of the keys") {
    const auto keys = distinct_keys(2000, 6);
    CountingBloomFilter f(geometry(4000, 0.01, 0), 8);
    BloomFilter plain(geometry(4000, 0.01, 0));
    f.add_many(as_keys(keys), nullptr);
    plain.add_many(as_keys(keys), nullptr);
    CHECK(f.to_bloom() == plain);

    // The batch removes every key once, then the first key again: it fails
    // at index keys.size() and the filter is restored exactly.
    std::vector<uint64_t> batch(keys);
    batch.push_back(keys[0]);
    const auto before = f.serialize();
    CHECK(f.remove_many(as_keys(batch)) == keys.size());
    CHECK(f.serialize() == before);

    CHECK(f.remove_many(as_keys(keys)) == keys.size());
    CHECK(f == CountingBloomFilter(geometry(4000, 0.01, 0), 8));
}

TEST_CASE("ScalableBloomFilter: grows, never forgets, stays under its compound error rate") {
    ScalableParams params;
    params.initial_capacity = 500;
    params.error_rate = 0.01;
    params.growth = 2;
    params.tightening = 0.85;
    params.seed = 11;
    ScalableBloomFilter f(params);
    const auto keys = distinct_keys(20000, 7);
    std::vector<uint8_t> was_present(keys.size());
    f.add_many(as_keys(keys), was_present.data());
    CHECK(f.slices().size() > 1);
    size_t reported_new = 0;
    for (uint8_t p : was_present) reported_new += p == 0;
    CHECK(f.count() == reported_new);

    std::vector<uint8_t> present(keys.size());
    f.contains_many(as_keys(keys), present.data());
    for (uint8_t p : present) REQUIRE(p == 1);
    CHECK(measured_fpr(f, distinct_keys(100000, 8)) < 0.011 + 5 * 3.15e-4);

    const auto frame = f.serialize();
    CHECK(ScalableBloomFilter::deserialize(frame.data(), frame.size()) == f);
}

TEST_CASE("ScalableBloomFilter: a batch needing more than kMaxScalableSlices slices is refused whole") {
    ScalableParams params;
    params.initial_capacity = 1;
    params.error_rate = 0.01;
    params.growth = 1.0001;  // slice i holds i + 1 keys: 1,024 slices hold 524,800
    params.tightening = 0.999;
    ScalableBloomFilter filter(params);
    const auto keys = distinct_keys(524801, 3);
    CHECK_THROWS_WITH_AS(filter.add_many(as_keys(keys), nullptr),
                         doctest::Contains("cannot grow to slice 1024: at most 1024 slices are supported"),
                         std::invalid_argument);
    CHECK(filter.slices().size() == 1);
    CHECK(filter.count() == 0);
}
