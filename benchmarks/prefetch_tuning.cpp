// Sweeps the two constants of every batch loop: how many keys are hashed
// ahead (kHashChunk, keys.hpp) and how many keys ahead their blocks are
// prefetched (kPrefetchDistance, prefetch.hpp).
//
// The batch loops hide memory latency by hashing a chunk of keys, then
// probing key j after prefetching the block of key j + D. D must cover the
// miss latency divided by the per-key work (too small: the probe waits; too
// large: prefetched lines are evicted or the core's ~20 outstanding misses
// are exceeded); the chunk must be larger than D (the prefetch never crosses
// a chunk) and its digests should stay in L1. Hardware counters are not
// available on the shared machines, so this measures wall time, best of
// several interleaved rounds, over the same keys and filter for every
// setting, next to a random gather over an array of the filter's size (the
// memory floor).
//
//   g++ -O2 -std=c++17 -Icpp/include benchmarks/prefetch_tuning.cpp -o /tmp/prefetch_tuning
//   /tmp/prefetch_tuning 10000000 5                # keys, rounds
//   /tmp/prefetch_tuning 100000000 2 split_block   # one layout only
//
// The loop bodies are BloomFilter::add_many_with / contains_many's, with the
// two constants as template arguments.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "bloomkit/bits.hpp"
#include "bloomkit/layouts.hpp"
#include "bloomkit/prefetch.hpp"
#include "bloomkit/sizing.hpp"

using namespace bloomkit;

namespace {

// Thread CPU time, not wall time: on a shared machine a descheduled thread
// would otherwise count another process's time slice as its own. A memory
// stall is still CPU time (the thread is running, waiting on the load).
double thread_seconds() {
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

template <size_t Chunk, size_t Distance, class LayoutT>
double time_add(const LayoutT& layout, uint64_t* words, const IntegerKeys<uint64_t>& keys) {
    const double start = thread_seconds();
    uint64_t newly_set = 0;
    hash_chunks<Chunk>(keys, 0, [&](size_t, const Hash128* digests, size_t count) {
        for_each_prefetched<Distance>(
            digests, count, [&](Hash128 h) { layout.prefetch(words, h); },
            [&](size_t j) { newly_set += layout.template add<PlainOr>(words, digests[j]); });
    });
    const double elapsed = thread_seconds() - start;
    if (newly_set == 1) std::puts("");  // keep the work observable
    return elapsed;
}

template <size_t Chunk, size_t Distance, class LayoutT>
double time_contains(const LayoutT& layout, const uint64_t* words, const IntegerKeys<uint64_t>& keys,
                     std::vector<uint8_t>& present) {
    const double start = thread_seconds();
    hash_chunks<Chunk>(keys, 0, [&](size_t first, const Hash128* digests, size_t count) {
        for_each_prefetched<Distance>(
            digests, count, [&](Hash128 h) { layout.prefetch(words, h); },
            [&](size_t j) { present[first + j] = layout.contains(words, digests[j]); });
    });
    return thread_seconds() - start;
}

struct Setting {
    size_t chunk, distance;
    double best_add = 1e30, best_contains = 1e30;
};

template <size_t Chunk, size_t Distance, class LayoutT>
void run(Setting& s, const LayoutT& layout, BitArray& bits, const IntegerKeys<uint64_t>& keys,
         std::vector<uint8_t>& present) {
    std::fill(bits.words(), bits.words() + bits.num_words(), 0);
    s.best_add = std::min(s.best_add, time_add<Chunk, Distance>(layout, bits.words(), keys));
    s.best_contains = std::min(s.best_contains, time_contains<Chunk, Distance>(layout, bits.words(), keys, present));
}

// Every (chunk, distance) pair swept, as template arguments.
template <class LayoutT>
void sweep(const char* name, LayoutT layout, BitArray& bits, const IntegerKeys<uint64_t>& keys, int rounds) {
    std::vector<uint8_t> present(keys.size());
    std::vector<Setting> settings = {{64, 4},   {64, 8},   {64, 16},  {256, 4},   {256, 8},  {256, 16},
                                     {256, 24}, {256, 32}, {1024, 8}, {1024, 16}, {1024, 32}};
    for (int round = 0; round < rounds; ++round) {
        size_t i = 0;
        run<64, 4>(settings[i++], layout, bits, keys, present);
        run<64, 8>(settings[i++], layout, bits, keys, present);
        run<64, 16>(settings[i++], layout, bits, keys, present);
        run<256, 4>(settings[i++], layout, bits, keys, present);
        run<256, 8>(settings[i++], layout, bits, keys, present);
        run<256, 16>(settings[i++], layout, bits, keys, present);
        run<256, 24>(settings[i++], layout, bits, keys, present);
        run<256, 32>(settings[i++], layout, bits, keys, present);
        run<1024, 8>(settings[i++], layout, bits, keys, present);
        run<1024, 16>(settings[i++], layout, bits, keys, present);
        run<1024, 32>(settings[i++], layout, bits, keys, present);
    }
    const double n = static_cast<double>(keys.size());
    for (const Setting& s : settings)
        std::printf("| %s | %zu | %zu | %.1f | %.1f |\n", name, s.chunk, s.distance, 1e9 * s.best_add / n,
                    1e9 * s.best_contains / n);
}

// ns per random 8-byte read over an array of `bytes`: the memory floor.
double gather_ns(uint64_t bytes, size_t count, int rounds) {
    std::vector<uint64_t> array(bytes / 8, 1);
    std::vector<uint64_t> index(count);
    std::mt19937_64 rng(7);
    for (auto& i : index) i = rng() % array.size();
    double best = 1e30;
    for (int round = 0; round < rounds; ++round) {
        const double start = thread_seconds();
        uint64_t sum = 0;
        for (uint64_t i : index) sum += array[i];
        best = std::min(best, thread_seconds() - start);
        if (sum == 0) std::puts("");
    }
    return 1e9 * best / static_cast<double>(count);
}

}  // namespace

int main(int argc, char** argv) {
    const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    const std::string only = argc > 3 ? argv[3] : "";
    std::vector<uint64_t> values(n);
    std::mt19937_64 rng(1);
    for (auto& v : values) v = rng();
    const IntegerKeys<uint64_t> keys(reinterpret_cast<const uint8_t*>(values.data()), n, sizeof(uint64_t));
    std::printf("%zu random uint64 keys, error_rate 0.01, best of %d rounds, ns/key\n\n", n, rounds);
    std::printf("| layout | chunk | distance | add | contains |\n|---|---:|---:|---:|---:|\n");
    for (Layout layout : {Layout::SplitBlock, Layout::Blocked512, Layout::Classic}) {
        const BloomSize size = layout_size(layout, n, 0.01);
        BitArray bits(size.num_bits);
        bool swept = false;
        with_layout(layout, size.num_bits, size.num_hashes, [&](const auto& l) {
            const char* name = layout == Layout::SplitBlock   ? "split_block"
                               : layout == Layout::Blocked512 ? "blocked512"
                                                              : "classic";
            swept = only.empty() || only == name;
            if (swept) sweep(name, l, bits, keys, rounds);
        });
        if (swept)
            std::printf("| gather over %.1f MB | | | %.1f | |\n", static_cast<double>(bits.nbytes()) / 1e6,
                        gather_ns(bits.nbytes(), n, rounds));
    }
}
