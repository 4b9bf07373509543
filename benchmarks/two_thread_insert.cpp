// Wall time per key of a split_block insert of random uint64 keys with
// add_many on one and on two threads (parallel.hpp's ChunkRing), next to a
// bound for any way of handing keys between the threads: each thread
// inserting its half of the keys into the whole filter with no hand-over
// at all. That bound races (two threads may write one block) and is not a
// correct algorithm; it only shows what the ring's hand-over costs.
// Best of `rounds`, runs alternated so that a busy machine hits all three.
//
//   g++ -O2 -std=c++17 -Icpp/include benchmarks/two_thread_insert.cpp -o /tmp/two_thread_insert -lpthread
//   /tmp/two_thread_insert 10000000 10000000 5     # keys capacity rounds
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "bloomkit/bloom.hpp"
#include "bloomkit/parallel.hpp"
#include "bloomkit/scalable_bloom.hpp"  // bloom_geometry_at_most

using namespace bloomkit;

namespace {

double wall_seconds() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

using Keys = IntegerKeys<uint64_t>;

// Each thread hashes and inserts half of the keys into the whole filter.
void racing_halves(const Keys& keys, const BloomGeometry& geometry, uint64_t* words) {
    const SplitBlockLayout layout(geometry.num_bits, geometry.num_hashes);
    run_on_two_threads([&](int thread) {
        const size_t mid = keys.size() / 2;
        const size_t begin = thread == 0 ? 0 : mid, end = thread == 0 ? mid : keys.size();
        hash_chunks(KeyRange<Keys>(keys, begin, end - begin), geometry.seed,
                    [&](size_t, const Hash128* digests, size_t count) {
                        BloomFilter::add_digests<PlainOr>(layout, words, digests, count, nullptr);
                    });
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s keys capacity [rounds]\n", argv[0]);
        return 2;
    }
    const size_t n = std::strtoull(argv[1], nullptr, 10);
    const uint64_t capacity = std::strtoull(argv[2], nullptr, 10);
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;

    std::vector<uint64_t> values(n);
    std::mt19937_64 random(1);
    for (uint64_t& v : values) v = random();
    const Keys keys(reinterpret_cast<const uint8_t*>(values.data()), n, 8);
    const BloomGeometry geometry = bloom_geometry_at_most(Layout::SplitBlock, capacity, 0.01, 0);
    BloomFilter filter(geometry);

    double best[3] = {1e30, 1e30, 1e30};
    std::vector<uint64_t> one_thread_words;
    for (int round = 0; round < rounds; ++round) {
        for (int variant = 0; variant < 3; ++variant) {
            filter.clear();
            const double start = wall_seconds();
            if (variant == 2)
                racing_halves(keys, geometry, const_cast<uint64_t*>(filter.bits().words()));
            else
                filter.add_many(keys, nullptr, variant == 0 ? 1 : 2);
            best[variant] = std::min(best[variant], wall_seconds() - start);
            if (variant == 0 && round == 0)
                one_thread_words.assign(filter.bits().words(), filter.bits().words() + filter.bits().num_words());
            if (variant == 1 && !std::equal(one_thread_words.begin(), one_thread_words.end(), filter.bits().words())) {
                std::fprintf(stderr, "two threads stored other bits than one thread\n");
                return 1;
            }
        }
    }
    std::printf("split_block insert, %zu keys, capacity %llu, best of %d (ns/key):\n", n,
                static_cast<unsigned long long>(capacity), rounds);
    std::printf("  one thread          %6.2f\n", best[0] * 1e9 / double(n));
    std::printf("  two threads (ring)  %6.2f\n", best[1] * 1e9 / double(n));
    std::printf("  racing halves bound %6.2f\n", best[2] * 1e9 / double(n));
    return 0;
}
