// Two-thread batches (parallel.hpp): the same filter bytes and answers as
// one thread for every layout, repeated keys and sources read by one thread
// only; the split point of the insert halves; the barrier and the
// exception path of run_on_two_threads.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/parallel.hpp>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::distinct_keys;
using bloomkit_test::splitmix64;

namespace {

BloomGeometry geometry(Layout layout, uint64_t capacity) {
    const BloomSize size = layout_size(layout, capacity, 0.01);
    BloomGeometry g;
    g.num_bits = size.num_bits;
    g.num_hashes = size.num_hashes;
    g.seed = 7;
    g.capacity = capacity;
    g.error_rate = 0.01;
    g.layout = layout;
    return g;
}

// A batch with every third key repeated later in it, so "was present"
// answers depend on key order within the batch.
std::vector<uint64_t> batch_with_repeats(size_t count) {
    std::vector<uint64_t> keys = distinct_keys(count, 3);
    for (size_t i = 2; i < count; i += 3) keys[i] = keys[i / 3];
    return keys;
}

// Hashes through a cache, like the bindings' Python-object source: never
// read by two threads at once (reads_concurrently is false for it).
class CachedKeys {
  public:
    explicit CachedKeys(const std::vector<uint64_t>& keys) : keys_(keys) {}
    size_t size() const { return keys_.size(); }
    Hash128 hash(size_t i, uint32_t seed) const {
        ++calls_;
        return murmur3_x64_128_u64(keys_[i], seed);
    }
    size_t calls() const { return calls_; }

  private:
    const std::vector<uint64_t>& keys_;
    mutable size_t calls_ = 0;  // a data race if two threads called hash()
};

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
        one.contains_many(as_keys(absent), present_one.data(), 1);
        two.contains_many(as_keys(absent), present_two.data(), 2);
        CHECK(present_one == present_two);
        two.contains_many(as_keys(keys), present_two.data(), 2);
        CHECK(std::count(present_two.begin(), present_two.end(), 0) == 0);
    }
}

TEST_CASE("a source read by one thread only is hashed by the calling thread, probes still split") {
    const size_t count = kMinParallelKeys * 2 + 77;
    const std::vector<uint64_t> keys = batch_with_repeats(count);
    BloomFilter one(geometry(Layout::SplitBlock, count)), two(geometry(Layout::SplitBlock, count));
    std::vector<uint8_t> was_one(count), was_two(count);
    one.add_many(as_keys(keys), was_one.data(), 1);
    CachedKeys cached(keys);
    two.add_many(cached, was_two.data(), 2);
    CHECK(cached.calls() == count);
    CHECK(one == two);
    CHECK(was_one == was_two);
    std::vector<uint8_t> present(count);
    two.contains_many(cached, present.data(), 2);
    CHECK(std::count(present.begin(), present.end(), 0) == 0);
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

TEST_CASE("an exception on either thread stops the other at the barrier and is rethrown") {
    for (int failing : {0, 1}) {
        PairBarrier barrier;
        std::atomic<int> steps{0};
        auto work = [&](int thread) {
            for (int step = 0; step < 1000; ++step) {
                if (thread == failing && step == 3) throw std::runtime_error("step 3 failed");
                if (!barrier.arrive_and_wait()) return;
                ++steps;
            }
        };
        bool ran = false;
        CHECK_THROWS_WITH_AS(ran = run_on_two_threads(work, &barrier), "step 3 failed", std::runtime_error);
        CHECK(!ran);
        CHECK(steps.load() <= 8);
    }
}

TEST_CASE("the pair barrier keeps two threads in step") {
    PairBarrier barrier;
    std::vector<uint64_t> seen(2000);
    std::atomic<int> out_of_step{0};
    const bool ran = run_on_two_threads(
        [&](int thread) {
            for (size_t step = 0; step < 1000; ++step) {
                seen[2 * step + static_cast<size_t>(thread)] = splitmix64(step);
                if (!barrier.arrive_and_wait()) return;
                // The other thread's write of this step is visible after the barrier.
                if (seen[2 * step + static_cast<size_t>(1 - thread)] != splitmix64(step)) ++out_of_step;
            }
        },
        &barrier);
    CHECK(ran);
    CHECK(out_of_step.load() == 0);
}
