// Per-key CPU cost of the batch loops of a Bloom filter over NumPy-style
// uint64 keys: hashing alone, add_many and contains_many, for one layout at
// one SIMD level. With a filter that fits in L1 (capacity 1e3) the time is
// pure computation; at 1e7 and 1e8 it adds the memory latency that the
// prefetches hide (or not). Thread CPU time, best of `rounds`.
//
//   g++ -O2 -std=c++17 -Icpp/include benchmarks/batch_compute.cpp -o /tmp/batch_compute
//   /tmp/batch_compute 10000000 1000 contains                        # keys capacity mode
//   /tmp/batch_compute 10000000 10000000 add blocked512 portable 5   # ... layout level rounds
//   /tmp/batch_compute 10000000 1000 add split_block avx2 3 atomic   # AtomicOr (a shared mapping)
//
// mode: hash (hash_chunks only), add (add_many), contains (contains_many).
// Instructions per key, repeatable on a shared machine:
//   valgrind --tool=callgrind --toggle-collect='(anonymous namespace)::timed_*' \
//       /tmp/batch_compute 1000000 1000 contains split_block avx2 1
// and divide the reported total by the number of keys.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "bloomkit/bloom.hpp"
#include "bloomkit/simd.hpp"
#include "bloomkit/sizing.hpp"

using namespace bloomkit;

namespace {

double thread_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

using Keys = IntegerKeys<uint64_t>;

// Ends each timed_* function after its callee returns (no tail call), so
// that callgrind's --toggle-collect='(anonymous namespace)::timed_*' counts everything it runs.
inline void barrier() { asm volatile("" ::: "memory"); }

__attribute__((noinline)) uint64_t timed_hash(const Keys& keys) {
    uint64_t sum = 0;
    hash_chunks(keys, 0, [&](size_t, const Hash128* digests, size_t count) {
        for (size_t j = 0; j < count; ++j) sum += digests[j].h1 ^ digests[j].h2;
    });
    barrier();
    return sum;
}

__attribute__((noinline)) void timed_add(BloomFilter& filter, const Keys& keys, bool atomic) {
    if (atomic)
        filter.add_many_with<AtomicOr>(keys, nullptr, 1);
    else
        filter.add_many_with<PlainOr>(keys, nullptr, 1);
    barrier();
}

__attribute__((noinline)) void timed_contains(const BloomFilter& filter, const Keys& keys, uint8_t* out) {
    filter.contains_many(keys, out);
    barrier();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s keys capacity hash|add|contains [layout] [portable|avx2] [rounds] [atomic]\n",
                     argv[0]);
        return 2;
    }
    const size_t n = std::strtoull(argv[1], nullptr, 10);
    const uint64_t capacity = std::strtoull(argv[2], nullptr, 10);
    const std::string mode = argv[3];
    const Layout layout = layout_from_name(argc > 4 ? argv[4] : "split_block");
    if (argc > 5) simd::set_level(simd::level_from_name(argv[5]));
    const int rounds = argc > 6 ? std::atoi(argv[6]) : 3;
    const bool atomic = argc > 7 && std::string(argv[7]) == "atomic";

    std::vector<uint64_t> values(n);
    std::mt19937_64 rng(1);
    for (auto& v : values) v = rng();
    const Keys keys(reinterpret_cast<const uint8_t*>(values.data()), n, 8);

    const BloomSize size = layout_size(layout, capacity, 0.01);
    BloomGeometry geometry;
    geometry.num_bits = size.num_bits;
    geometry.num_hashes = size.num_hashes;
    geometry.capacity = capacity;
    geometry.error_rate = 0.01;
    geometry.layout = layout;
    BloomFilter filter(geometry);
    std::vector<uint8_t> out(n);

    double best = 1e300;
    uint64_t check = 0;
    for (int round = 0; round < rounds; ++round) {
        const double start = thread_seconds();
        if (mode == "hash")
            check += timed_hash(keys);
        else if (mode == "add")
            timed_add(filter, keys, atomic);
        else
            timed_contains(filter, keys, out.data());
        best = std::min(best, thread_seconds() - start);
    }
    for (uint8_t b : out) check += b;
    std::printf("%-8s %-11s %-8s %s keys %zu capacity %llu: %.2f ns/key (check %llu)\n", mode.c_str(),
                layout_name(layout), simd::level_name(simd::active_level()), atomic ? "atomic" : "plain", n,
                static_cast<unsigned long long>(capacity), best * 1e9 / double(n),
                static_cast<unsigned long long>(check % 1000));
    return 0;
}
