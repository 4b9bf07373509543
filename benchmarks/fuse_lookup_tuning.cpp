// Sweeps the prefetch distance of BinaryFuseFilter's batch lookup
// (contains_many_as, binary_fuse.hpp), sets its placing of four keys at a
// time (AVX2) beside placing one at a time (8-bit cells place four at a time,
// 16-bit ones one at a time, unless a row says otherwise), measures the alternatives of planning
// a whole chunk before reading its cells (two_pass_lookup) and of sorting a
// block of keys by segment (sorted_lookup), and sets them beside a split_block
// Bloom filter's batch lookup of the same keys at the same rate (2^-8) and
// at 1 %, and beside random gathers of one and of three bytes per key over
// an array of the fuse filter's size (the memory floors), the three
// prefetches alone, and the hashing and placing alone (the arithmetic).
//
// A fuse lookup reads three cells in three segments, so three cache lines
// per key where a split_block lookup reads one; prefetched D keys ahead it
// keeps 3 D lines in flight. Too small a D leaves the check waiting on its
// lines; too large a D exceeds the core's outstanding misses. Thread CPU
// time, best of several interleaved rounds, the same keys for every setting.
//
//   g++ -O2 -std=c++17 -Icpp/include benchmarks/fuse_lookup_tuning.cpp -o /tmp/fuse_lookup_tuning -pthread
//   python benchmarks/run.py fuse-lookup-tuning -- 10000000 5   # the same, recorded in results/
//   /tmp/fuse_lookup_tuning 10000000 5      # keys, rounds
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <utility>
#include <vector>

#include "bloomkit/binary_fuse.hpp"
#include "bloomkit/bloom.hpp"

using namespace bloomkit;

namespace {

double thread_seconds() {
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

struct Row {
    const char* name;
    double best = 1e30;
    size_t found = 0;
};

template <class Run>
void timed(Row& row, std::vector<uint8_t>& present, Run&& run) {
    const double start = thread_seconds();
    run(present.data());
    row.best = std::min(row.best, thread_seconds() - start);
    row.found = 0;
    for (uint8_t p : present) row.found += p;
}

// ns per key for `per_key` random 1-byte reads per key over `bytes`, in
// the filters' storage (WordStorage: huge pages, as the filters have); with
// `prefetch_only`, the same addresses only prefetched (nothing waits on
// them): what issuing the misses costs the core by itself.
double gather_ns(uint64_t bytes, size_t keys, unsigned per_key, int rounds, bool prefetch_only = false) {
    WordStorage words((bytes + 7) / 8);
    const uint8_t* array = reinterpret_cast<const uint8_t*>(words.data());
    std::vector<uint64_t> index(keys * per_key);
    std::mt19937_64 rng(7);
    for (auto& i : index) i = rng() % bytes;
    double best = 1e30;
    for (int round = 0; round < rounds; ++round) {
        const double start = thread_seconds();
        uint64_t sum = 0;
        if (prefetch_only)
            for (uint64_t i : index) platform::prefetch_read(array + i);
        else
            for (uint64_t i : index) sum += array[i];
        best = std::min(best, thread_seconds() - start);
        if (sum == 1) std::puts("");  // keep the reads observable
    }
    return 1e9 * best / static_cast<double>(keys);
}

// ns per key for hashing a batch and placing each key (cells and
// fingerprint, as BinaryFuseFilter::probe_of), with no cell read: the
// arithmetic of a lookup without its memory.
double place_only_ns(const BinaryFuseFilter& f, const IntegerKeys<uint64_t>& keys, int rounds) {
    const BinaryFuseParams& p = f.params();
    const uint64_t length = p.shape.segment_length, mask = length - 1;
    const uint64_t range = uint64_t(p.shape.segment_count) * length;
    double best = 1e30;
    for (int round = 0; round < rounds; ++round) {
        const double start = thread_seconds();
        uint64_t sum = 0;
        hash_chunks(keys, p.seed, [&](size_t, const Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) {
                const uint64_t x = detail::fmix64(digests[j].h1 + p.build_seed);
                const uint64_t h0 = platform::mul_high64(x, range);
                sum += h0 ^ ((h0 + length) ^ ((x >> 18) & mask)) ^ ((h0 + 2 * length) ^ (x & mask)) ^ (x >> 32);
            }
        });
        best = std::min(best, thread_seconds() - start);
        if (sum == 1) std::puts("");  // keep the arithmetic observable
    }
    return 1e9 * best / static_cast<double>(keys.size());
}

// The loop contains_many_as replaced: a chunk's digests, then every key's
// cells and fingerprint planned into arrays, then a second pass checking key
// j after prefetching the cells of key j + 16. The planning pass reads no
// memory and the checking pass does little else, so the two times add up.
// 8-bit cells, as BinaryFuseFilter::probe_of places them.
void two_pass_lookup(const BinaryFuseFilter& f, const IntegerKeys<uint64_t>& keys, uint8_t* present) {
    constexpr size_t D = kPrefetchDistance;
    const BinaryFuseParams& p = f.params();
    const uint8_t* base = reinterpret_cast<const uint8_t*>(f.words().data());
    const uint64_t length = p.shape.segment_length, mask = length - 1;
    const uint64_t range = uint64_t(p.shape.segment_count) * length;
    uint64_t cell0[kHashChunk], cell1[kHashChunk], cell2[kHashChunk];
    uint32_t fingerprint[kHashChunk];
    hash_chunks(keys, p.seed, [&](size_t first, const Hash128* digests, size_t count) {
        for (size_t j = 0; j < count; ++j) {
            const uint64_t x = detail::fmix64(digests[j].h1 + p.build_seed);
            const uint64_t h0 = platform::mul_high64(x, range);
            cell0[j] = h0;
            cell1[j] = (h0 + length) ^ ((x >> 18) & mask);
            cell2[j] = (h0 + 2 * length) ^ (x & mask);
            fingerprint[j] = (x ^ (x >> 32)) & 0xff;
        }
        const auto prefetch = [&](size_t j) {
            platform::prefetch_read(base + cell0[j]);
            platform::prefetch_read(base + cell1[j]);
            platform::prefetch_read(base + cell2[j]);
        };
        const auto check = [&](size_t j) {
            return (fingerprint[j] ^ base[cell0[j]] ^ base[cell1[j]] ^ base[cell2[j]]) == 0;
        };
        for (size_t j = 0; j < std::min(count, D); ++j) prefetch(j);
        size_t j = 0;
        for (; j + D < count; ++j) {
            prefetch(j + D);
            present[first + j] = check(j);
        }
        for (; j < count; ++j) present[first + j] = check(j);
    });
}

// The alternative to prefetching: sort each block of `block` keys by the
// segment of their first cell (a counting sort on mul_high64(x, segments)),
// look them up in array order, so the three segments a key reads are the
// ones just read, and write each answer back to its key's index. It mirrors
// BinaryFuseFilter::probe_of (8-bit cells); main() checks its answers
// against contains_many's. Scratch: 20 bytes per key of a block.
void sorted_lookup(const BinaryFuseFilter& f, const std::vector<uint64_t>& values, uint8_t* present, size_t block) {
    const BinaryFuseParams& p = f.params();
    const uint8_t* base = reinterpret_cast<const uint8_t*>(f.words().data());
    const uint64_t segments = p.shape.segment_count, length = p.shape.segment_length, mask = length - 1;
    std::vector<uint64_t> mixed(block), sorted(block);
    std::vector<uint32_t> index(block), start(segments);
    for (size_t first = 0; first < values.size(); first += block) {
        const size_t m = std::min(block, values.size() - first);
        const IntegerKeys<uint64_t> keys(reinterpret_cast<const uint8_t*>(values.data() + first), m, sizeof(uint64_t));
        std::fill(start.begin(), start.end(), 0);
        hash_chunks(keys, p.seed, [&](size_t at, const Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) {
                const uint64_t x = detail::fmix64(digests[j].h1 + p.build_seed);
                mixed[at + j] = x;
                ++start[platform::mul_high64(x, segments)];
            }
        });
        uint32_t sum = 0;
        for (uint32_t& s : start) sum += std::exchange(s, sum);
        for (size_t i = 0; i < m; ++i) {
            const uint32_t at = start[platform::mul_high64(mixed[i], segments)]++;
            sorted[at] = mixed[i];
            index[at] = static_cast<uint32_t>(i);
        }
        for (size_t i = 0; i < m; ++i) {
            const uint64_t x = sorted[i];
            const uint64_t h0 = platform::mul_high64(x, segments * length);
            const uint32_t value =
                base[h0] ^ base[(h0 + length) ^ ((x >> 18) & mask)] ^ base[(h0 + 2 * length) ^ (x & mask)];
            present[first + index[i]] = value == ((x ^ (x >> 32)) & 0xff);
        }
    }
}

BloomGeometry split_block(uint64_t capacity, double error_rate) {
    const BloomSize size = layout_size(Layout::SplitBlock, capacity, error_rate);
    BloomGeometry g;
    g.num_bits = size.num_bits;
    g.num_hashes = size.num_hashes;
    g.capacity = capacity;
    g.error_rate = error_rate;
    g.layout = Layout::SplitBlock;
    return g;
}

}  // namespace

int main(int argc, char** argv) {
    const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    std::vector<uint64_t> values(n);
    std::mt19937_64 rng(1);
    for (auto& v : values) v = rng();
    const IntegerKeys<uint64_t> keys(reinterpret_cast<const uint8_t*>(values.data()), n, sizeof(uint64_t));

    std::vector<uint64_t> hashes;
    BinaryFuseFilter::append_hashes(keys, 0, hashes);
    const BinaryFuseFilter fuse8 = BinaryFuseFilter::build(hashes, 8, 0);
    hashes.clear();
    BinaryFuseFilter::append_hashes(keys, 0, hashes);
    const BinaryFuseFilter fuse16 = BinaryFuseFilter::build(hashes, 16, 0);
    std::vector<uint8_t> ignored(n);
    BloomFilter bloom8(split_block(n, 1.0 / 256));
    bloom8.add_many(keys, ignored.data());
    BloomFilter bloom1(split_block(n, 0.01));
    bloom1.add_many(keys, ignored.data());

    std::vector<uint8_t> present(n);
    std::vector<Row> rows = {{"fuse 8-bit, distance 2"},
                             {"fuse 8-bit, distance 4"},
                             {"fuse 8-bit, distance 6"},
                             {"fuse 8-bit, distance 8"},
                             {"fuse 8-bit, distance 12"},
                             {"fuse 8-bit, distance 16"},
                             {"fuse 8-bit, distance 24"},
                             {"fuse 8-bit, distance 32"},
                             {"fuse 8-bit, distance 32, keys placed one at a time"},
                             {"fuse 16-bit, distance 4"},
                             {"fuse 16-bit, distance 8"},
                             {"fuse 16-bit, distance 16"},
                             {"fuse 16-bit, distance 24"},
                             {"fuse 16-bit, distance 32"},
                             {"fuse 16-bit, distance 32, keys placed four at a time"},
                             {"fuse 8-bit, two passes per chunk (the previous loop)"},
                             {"fuse 8-bit, sorted blocks of 2^18"},
                             {"fuse 8-bit, sorted blocks of 2^20"},
                             {"split_block 2^-8"},
                             {"split_block 0.01"}};
    for (int round = 0; round < rounds; ++round) {
        size_t i = 0;
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 2>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 4>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 6>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 8>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 12>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 16>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 24>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 32>(keys, out); });
        timed(rows[i++], present,
              [&](uint8_t* out) { fuse8.contains_many_as<uint8_t, 32, kHashChunk, false>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 4>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 8>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 16>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 24>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 32>(keys, out); });
        timed(rows[i++], present,
              [&](uint8_t* out) { fuse16.contains_many_as<uint16_t, 32, kHashChunk, true>(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { two_pass_lookup(fuse8, keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { sorted_lookup(fuse8, values, out, size_t(1) << 18); });
        timed(rows[i++], present, [&](uint8_t* out) { sorted_lookup(fuse8, values, out, size_t(1) << 20); });
        if (std::vector<uint8_t>(present) != [&] {
                std::vector<uint8_t> expected(n);
                fuse8.contains_many(keys, expected.data());
                return expected;
            }()) {
            std::puts("the sorted lookup disagrees with contains_many");
            return 1;
        }
        timed(rows[i++], present, [&](uint8_t* out) { bloom8.contains_many(keys, out); });
        timed(rows[i++], present, [&](uint8_t* out) { bloom1.contains_many(keys, out); });
    }
    std::printf("%zu random uint64 keys (all present), best of %d rounds, thread CPU ns/key\n\n", n, rounds);
    std::printf("| lookup | MB | ns/key | found |\n|---|---:|---:|---:|\n");
    for (const Row& r : rows) {
        const bool is_fuse16 = r.name[5] == '1';
        const bool is_fuse = r.name[0] == 'f';
        const double mb = (is_fuse ? (is_fuse16 ? fuse16.nbytes() : fuse8.nbytes())
                                   : (r.name[15] == '^' ? bloom8.nbytes() : bloom1.nbytes())) /
                          1e6;
        std::printf("| %s | %.1f | %.2f | %zu |\n", r.name, mb, 1e9 * r.best / double(n), r.found);
    }
    std::printf("| gather 1 byte/key over %.1f MB | | %.2f | |\n", fuse8.nbytes() / 1e6,
                gather_ns(fuse8.nbytes(), n, 1, rounds));
    std::printf("| gather 3 bytes/key over %.1f MB | | %.2f | |\n", fuse8.nbytes() / 1e6,
                gather_ns(fuse8.nbytes(), n, 3, rounds));
    std::printf("| prefetch 3 bytes/key over %.1f MB, nothing read | | %.2f | |\n", fuse8.nbytes() / 1e6,
                gather_ns(fuse8.nbytes(), n, 3, rounds, true));
    std::printf("| fuse 8-bit, hash and place only (no cell read) | | %.2f | |\n", place_only_ns(fuse8, keys, rounds));
}
