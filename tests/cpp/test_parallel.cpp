// Two-thread batches (parallel.hpp): the same filter bytes and answers as
// one thread for every layout and repeated keys; sources two threads may
// not read stay on one; the split point of the insert halves; the chunk
// ring with a slow thread, and its exception path; the pointer walk
// (for_each_hash) of strided and reversed sources.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/parallel.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::CachedKeys;
using bloomkit_test::contains_on_two_threads;
using bloomkit_test::distinct_keys;
using bloomkit_test::splitmix64;

namespace {

BloomGeometry geometry(Layout layout, uint64_t capacity) {
    return bloomkit_test::geometry_at_one_percent(layout, capacity, 7);
}

// A batch with every third key repeated later in it, so "was present"
// answers depend on key order within the batch.
std::vector<uint64_t> batch_with_repeats(size_t count) {
    std::vector<uint64_t> keys = distinct_keys(count, 3);
    for (size_t i = 2; i < count; i += 3) keys[i] = keys[i / 3];
    return keys;
}

}  // namespace

TEST_CASE("two-thread batches give one thread's bytes and answers for every layout") {
    const size_t count = kMinParallelKeys * 3 + 12345;
    const std::vector<uint64_t> keys = batch_with_repeats(count);
    const std::vector<uint64_t> absent = distinct_keys(count, 4);
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        BloomFilter one(geometry(layout, count)), two(geometry(layout, count));
        std::vector<uint8_t> was_one(count), was_two(count);
        one.add_many(as_keys(keys), was_one.data(), 1);
        two.add_many(as_keys(keys), was_two.data(), 2);
        CHECK(one == two);
        CHECK(one.set_bits() == two.set_bits());
        CHECK(was_one == was_two);
        CHECK(was_two[5] == 1);  // keys[5] repeats keys[1]

        std::vector<uint8_t> present_one(count), present_two(count);
        one.contains_many(as_keys(absent), present_one.data());
        contains_on_two_threads(two, as_keys(absent), present_two.data());
        CHECK(present_one == present_two);
        contains_on_two_threads(two, as_keys(keys), present_two.data());
        CHECK(std::count(present_two.begin(), present_two.end(), 0) == 0);
    }
}

TEST_CASE("a source two threads may not read stays on the calling thread") {
    const size_t count = kMinParallelKeys * 2 + 77;
    const std::vector<uint64_t> keys = batch_with_repeats(count);
    BloomFilter one(geometry(Layout::SplitBlock, count)), two(geometry(Layout::SplitBlock, count));
    std::vector<uint8_t> was_one(count), was_two(count);
    one.add_many(as_keys(keys), was_one.data(), 1);
    CachedKeys cached(keys);
    two.add_many(cached, was_two.data(), 2);
    CHECK(cached.calls() == count);
    CHECK(cached.foreign_calls() == 0);
    CHECK(one == two);
    CHECK(was_one == was_two);
    std::vector<uint8_t> present(count);
    contains_on_two_threads(two, cached, present.data());
    CHECK(std::count(present.begin(), present.end(), 0) == 0);
    CHECK(cached.foreign_calls() == 0);
}

// for_each_hash and hash_range from the start, the second key and a third
// of the way in, to the end, against keys.hash(first + j).
template <class Keys>
void check_walk_equals_index(const Keys& keys, uint32_t seed) {
    for (size_t first : {size_t(0), size_t(1), keys.size() / 3})
        bloomkit_test::require_walk_equals_index(keys, first, keys.size() - first, seed);
}

TEST_CASE("for_each_hash walks strided, reversed and sub-range sources as hash(i) does") {
    const std::vector<uint64_t> values = distinct_keys(3000, 9);
    // int32 keys in 12-byte records (a NumPy column of a structured array).
    std::vector<uint8_t> records(values.size() * 12);
    for (size_t i = 0; i < values.size(); ++i) {
        const int32_t v = static_cast<int32_t>(values[i]);
        std::memcpy(records.data() + 12 * i + 4, &v, sizeof v);
    }
    check_walk_equals_index(IntegerKeys<int32_t>(records.data() + 4, values.size(), 12), 3);
    // uint64 keys read backwards (a[::-1]).
    check_walk_equals_index(IntegerKeys<uint64_t>(reinterpret_cast<const uint8_t*>(&values.back()), values.size(), -8),
                            0);
    // float64 keys with -0.0 and NaN, every other element (a[::2]).
    std::vector<double> floats(2 * values.size());
    for (size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<double>(values[i / 2] >> 11) / 7.0;
    floats[2] = -0.0;
    floats[4] = std::nan("");
    check_walk_equals_index(FloatKeys<double>(reinterpret_cast<const uint8_t*>(floats.data()), values.size(), 16), 5);
    // A sub-range (each thread's half of a lookup) and a source with no walk of its own.
    const IntegerKeys<uint64_t> all = as_keys(values);
    check_walk_equals_index(KeyRange<IntegerKeys<uint64_t>>(all, 700, 1500), 1);
    CachedKeys cached(values);
    check_walk_equals_index(cached, 2);
}

TEST_CASE("a two-thread insert of a reversed strided array stores one thread's bits") {
    const size_t count = kMinParallelKeys * 2 + 501;
    const std::vector<uint64_t> keys = batch_with_repeats(count);
    std::vector<uint64_t> every_other(2 * count);
    for (size_t i = 0; i < count; ++i) every_other[2 * (count - 1 - i)] = keys[i];
    // keys[i] read as every other element of every_other, from the end.
    const IntegerKeys<uint64_t> reversed(reinterpret_cast<const uint8_t*>(&every_other[2 * (count - 1)]), count, -16);
    for (Layout layout : {Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        BloomFilter one(geometry(layout, count)), two(geometry(layout, count)), reports(geometry(layout, count));
        std::vector<uint8_t> was_one(count), was_two(count);
        one.add_many(as_keys(keys), was_one.data(), 1);
        two.add_many(reversed, nullptr, 2);
        reports.add_many(reversed, was_two.data(), 2);
        CHECK(one == two);
        CHECK(one.set_bits() == two.set_bits());
        CHECK(one == reports);
        CHECK(was_one == was_two);
    }
}

TEST_CASE("upper_half_start splits the blocks exactly in two") {
    for (uint64_t blocks : {uint64_t(1), uint64_t(2), uint64_t(3), uint64_t(7), uint64_t(1000003), uint64_t(1) << 40,
                            (uint64_t(1) << 63) + 5, ~uint64_t(0)}) {
        CAPTURE(blocks);
        const uint64_t split = upper_half_start(blocks);
        CHECK(fast_range64(split, blocks) >= blocks / 2);
        if (split > 0) CHECK(fast_range64(split - 1, blocks) < blocks / 2);
    }
}

// A source whose hash() throws at one key, like a list of Python objects
// that changed size while it was read.
class FailingKeys {
  public:
    FailingKeys(const std::vector<uint64_t>& keys, size_t failing) : keys_(keys), failing_(failing) {}
    size_t size() const { return keys_.size(); }
    Hash128 hash(size_t i, uint32_t seed) const {
        if (i == failing_) throw std::runtime_error("key " + std::to_string(i) + " failed");
        return murmur3_x64_128_u64(keys_[i], seed);
    }

  private:
    const std::vector<uint64_t>& keys_;
    size_t failing_;
};

// A pure view, like IntegerKeys: two threads may read it.
template <>
struct bloomkit::reads_concurrently<FailingKeys> : std::true_type {};

TEST_CASE("an exception while hashing stops both threads and is rethrown") {
    const std::vector<uint64_t> keys = distinct_keys(kParallelChunk * 10, 5);
    for (size_t failing : {size_t(0), kParallelChunk * 6 + 3, keys.size() - 1}) {
        CAPTURE(failing);
        std::atomic<size_t> probed{0};
        bool ran = false;
        CHECK_THROWS_WITH_AS(ran = pipeline_on_two_threads<Hash128>(
                                 FailingKeys(keys, failing), 0, false, [](const Hash128& h) { return h; },
                                 [](const Hash128& h) { return (h.h1 & 1) != 0; },
                                 [&](int, size_t, const Hash128*, const uint32_t*, size_t) { ++probed; }),
                             ("key " + std::to_string(failing) + " failed").c_str(), std::runtime_error);
        CHECK(!ran);
        // No chunk at or after the failing one was probed by anyone.
        CHECK(probed.load() <= 2 * (failing / kParallelChunk));
    }
}

TEST_CASE("every key is probed once, by its part's thread, in order, whichever thread is slow") {
    const std::vector<uint64_t> keys = distinct_keys(kParallelChunk * 9 + 5, 6);
    for (int slow : {0, 1}) {
        CAPTURE(slow);
        std::vector<size_t> seen[2];  // key indices each thread probed, in order
        std::atomic<int> wrong{0};
        const bool ran = pipeline_on_two_threads<Hash128>(
            as_keys(keys), 3, true, [](const Hash128& h) { return h; },
            [](const Hash128& h) { return (h.h2 & 1) != 0; },
            [&](int thread, size_t first, const Hash128* digests, const uint32_t* places, size_t n) {
                // The slow thread is descheduled now and then: the other runs
                // ahead, at most the ring's length.
                if (thread == slow && first % (3 * kParallelChunk) == 0)
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                for (size_t i = 0; i < n; ++i) {
                    const size_t key = first + places[i];
                    const Hash128 expected = murmur3_x64_128_u64(keys[key], 3);
                    if (digests[i].h1 != expected.h1 || digests[i].h2 != expected.h2) ++wrong;
                    if (static_cast<int>(expected.h2 & 1) != thread) ++wrong;
                    seen[thread].push_back(key);
                }
            });
        CHECK(ran);
        CHECK(wrong.load() == 0);
        CHECK(std::is_sorted(seen[0].begin(), seen[0].end()));
        CHECK(std::is_sorted(seen[1].begin(), seen[1].end()));
        CHECK(seen[0].size() + seen[1].size() == keys.size());
        CHECK(seen[0].size() > keys.size() / 3);
        CHECK(seen[1].size() > keys.size() / 3);
    }
}
