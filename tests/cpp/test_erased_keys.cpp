// ErasedKeys (erased_keys.hpp): the same digests, filter bytes and answers
// as the source it erases, on one thread and two; a source two threads may
// not read stays on the calling thread behind it too.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/counting_bloom.hpp>
#include <bloomkit/erased_keys.hpp>
#include <bloomkit/parallel.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::CachedKeys;
using bloomkit_test::contains_on_two_threads;
using bloomkit_test::distinct_keys;

namespace {

BloomGeometry geometry(Layout layout, uint64_t capacity) {
    return bloomkit_test::geometry_at_one_percent(layout, capacity, 11);
}

// int32 keys in 12-byte records, every third repeated later in the batch.
std::vector<int32_t> records(size_t count) {
    const std::vector<uint64_t> values = distinct_keys(count, 5);
    std::vector<int32_t> out(count * 3, -1);
    for (size_t i = 0; i < count; ++i) out[3 * i] = i % 3 == 2 ? out[3 * (i / 3)] : static_cast<int32_t>(values[i]);
    return out;
}

IntegerKeys<int32_t> as_records(const std::vector<int32_t>& r) {
    return IntegerKeys<int32_t>(reinterpret_cast<const uint8_t*>(r.data()), r.size() / 3, 12);
}

}  // namespace

TEST_CASE("ErasedKeys hashes every key as its source does, by index, range and walk") {
    const std::vector<int32_t> r = records(3 * kHashChunk + 17);
    const IntegerKeys<int32_t> keys = as_records(r);
    const ErasedKeys erased(keys);
    REQUIRE(erased.size() == keys.size());
    CHECK(erased.reads_concurrently());
    for (size_t first : {size_t(0), size_t(1), kHashChunk - 1, keys.size() - 3}) {
        CAPTURE(first);
        // The walk and the range against erased.hash(i), for both uses.
        bloomkit_test::require_walk_equals_index<DigestUse::Probed>(erased, first, keys.size() - first, 42);
        bloomkit_test::require_walk_equals_index<DigestUse::Stored>(erased, first, keys.size() - first, 42);
        // erased.hash(i) against the source's.
        for (size_t i = first; i < keys.size(); i += 97) {
            REQUIRE(erased.hash(i, 42).h1 == keys.hash(i, 42).h1);
            REQUIRE(erased.hash(i, 42).h2 == keys.hash(i, 42).h2);
        }
    }
}

TEST_CASE("an erased batch gives the source's filter bytes and answers on one thread and two") {
    const size_t count = kMinParallelKeys * 2 + 999;
    const std::vector<int32_t> r = records(count);
    const IntegerKeys<int32_t> keys = as_records(r);
    const std::vector<uint64_t> absent = distinct_keys(count, 6);
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        BloomFilter direct(geometry(layout, count)), one(geometry(layout, count)), two(geometry(layout, count));
        std::vector<uint8_t> was_direct(count), was_one(count), was_two(count);
        direct.add_many(keys, was_direct.data(), 1);
        one.add_many(ErasedKeys(keys), was_one.data(), 1);
        two.add_many(ErasedKeys(keys), was_two.data(), 2);
        CHECK(direct == one);
        CHECK(direct == two);
        CHECK(direct.set_bits() == two.set_bits());
        CHECK(was_direct == was_one);
        CHECK(was_direct == was_two);
        CHECK(was_two[2] == 1);  // key 2 repeats key 0
        CHECK(std::count(was_two.begin(), was_two.end(), 1) >= static_cast<long>(count / 3));

        const auto absent_keys = bloomkit_test::as_keys(absent);
        std::vector<uint8_t> present_direct(count), present_two(count);
        direct.contains_many(absent_keys, present_direct.data());
        contains_on_two_threads(two, ErasedKeys(absent_keys), present_two.data());
        CHECK(present_direct == present_two);
        contains_on_two_threads(two, ErasedKeys(keys), present_two.data());
        CHECK(std::count(present_two.begin(), present_two.end(), 0) == 0);
    }
}

TEST_CASE("an erased source two threads may not read stays on the calling thread") {
    const size_t count = kMinParallelKeys * 2 + 5;
    const std::vector<uint64_t> values = distinct_keys(count, 7);
    const CachedKeys keys(values);
    const ErasedKeys erased(keys);
    CHECK_FALSE(erased.reads_concurrently());
    BloomFilter filter(geometry(Layout::SplitBlock, count)), expected(geometry(Layout::SplitBlock, count));
    filter.add_many(erased, nullptr, 2);
    expected.add_many(bloomkit_test::as_keys(values), nullptr, 1);
    CHECK(filter == expected);
    std::vector<uint8_t> present(count);
    contains_on_two_threads(filter, erased, present.data());
    CHECK(std::count(present.begin(), present.end(), 0) == 0);
    CHECK(keys.foreign_calls() == 0);
}

TEST_CASE("an all-or-nothing removal of an erased batch reads keys by index like its source") {
    BloomGeometry g;
    g.num_bits = 1 << 14;
    g.num_hashes = 5;
    g.seed = 3;
    g.capacity = 1000;
    g.error_rate = 0.01;
    const std::vector<uint64_t> values = distinct_keys(1000, 8);
    const auto keys = bloomkit_test::as_keys(values);
    CountingBloomFilter filter(g, 8);
    filter.add_many(ErasedKeys(keys), nullptr);
    const CountingBloomFilter before = filter;
    std::vector<uint64_t> with_absent = values;
    with_absent[600] = distinct_keys(1, 9)[0];
    // The removal undoes the 600 keys it removed, through keys.hash(i).
    CHECK(filter.remove_many(ErasedKeys(bloomkit_test::as_keys(with_absent))) == 600);
    CHECK(filter == before);
    CHECK(filter.remove_many(ErasedKeys(keys)) == values.size());
    CHECK(filter.count(murmur3_x64_128_u64(values[0], 3)) == 0);
}
