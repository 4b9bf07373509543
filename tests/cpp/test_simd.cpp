// The SIMD kernels (simd.hpp) against the scalar split_block code, and the
// batch loops (batch_probe.hpp) against the single-key calls: the same bits
// set, the same counts of new bits, the same answers, and whole filters
// byte-identical with the kernels on and off. The four-lane MurmurHash3
// (hash_avx2.hpp) against the scalar one, and the integer keys' hashing
// walk with it on and off: the same digests in the same order.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/hash_avx2.hpp>
#include <bloomkit/keys.hpp>
#include <bloomkit/scalable_bloom.hpp>  // bloom_geometry_at_most
#include <bloomkit/simd.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::digest;
using bloomkit_test::distinct_keys;
using bloomkit_test::LevelRestore;
using bloomkit_test::splitmix64;

namespace {

BloomFilter filter_of(Layout layout, uint64_t capacity) {
    return BloomFilter(bloom_geometry_at_most(layout, capacity, 0.01, 3));
}

}  // namespace

TEST_CASE("simd: level names, parsing and refusal of unsupported levels") {
    LevelRestore restore;
    CHECK(simd::level_from_name("portable") == simd::Level::Portable);
    CHECK(simd::level_from_name("auto") == simd::supported_level());
    CHECK(simd::level_from_name("avx2") == simd::Level::Avx2);
    CHECK_THROWS_WITH_AS(simd::level_from_name("sse9"),
                         "unknown SIMD level 'sse9': expected 'auto', 'avx2' or 'portable'", std::invalid_argument);
    simd::set_level(simd::Level::Portable);
    CHECK(simd::active_level() == simd::Level::Portable);
    if (simd::supported_level() == simd::Level::Avx2) {
        simd::set_level(simd::Level::Avx2);
        CHECK(simd::active_level() == simd::Level::Avx2);
    } else {
        CHECK_THROWS_AS(simd::set_level(simd::Level::Avx2), std::invalid_argument);
        CHECK(simd::active_level() == simd::Level::Portable);
    }
#if defined(BLOOMKIT_PORTABLE)
    CHECK(simd::supported_level() == simd::Level::Portable);
#endif
}

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
TEST_CASE("simd: AVX2 split_block kernels match the scalar code key by key") {
    if (simd::supported_level() != simd::Level::Avx2) {
        MESSAGE("this CPU has no AVX2: kernels not run");
        return;
    }
    const SplitBlockLayout layout(256 * 64, 8);
    // Two copies of a small filter, filled by the scalar code and by the
    // kernel; after every insert the blocks, the counts of new bits and the
    // answers for fresh keys must agree.
    std::vector<uint64_t> scalar(4 * 64, 0), vector(4 * 64, 0);
    uint32_t total_new = 0;
    for (uint64_t i = 0; i < 5000; ++i) {
        const Hash128 h = digest(splitmix64(i), 11);
        const uint64_t word = layout.first_word(h);
        const uint32_t g = SplitBlockLayout::lane_seed(h);
        const uint32_t expected = SplitBlockLayout::add_block<PlainOr, simd::Level::Portable>(
            scalar.data() + word, SplitBlockLayout::probe_seed(h));
        const uint32_t got = simd::split_block_add_avx2(vector.data() + word, g, SplitBlockLayout::kSalts);
        REQUIRE(got == expected);
        total_new += got;
        REQUIRE(std::memcmp(scalar.data() + word, vector.data() + word, 32) == 0);
        const Hash128 probe = digest(splitmix64(i + (uint64_t(1) << 40)), 11);
        REQUIRE(simd::split_block_contains_avx2(vector.data() + layout.first_word(probe),
                                                SplitBlockLayout::lane_seed(probe), SplitBlockLayout::kSalts) ==
                SplitBlockLayout::contains_block<simd::Level::Portable>(scalar.data() + layout.first_word(probe),
                                                                        SplitBlockLayout::probe_seed(probe)));
        REQUIRE(simd::split_block_contains_avx2(vector.data() + word, g, SplitBlockLayout::kSalts));
    }
    CHECK(scalar == vector);
    // 5000 keys into 64 blocks saturate them: most inserts set nothing new,
    // early ones set all eight bits, so the counts were really compared.
    CHECK(total_new > 64 * 8 / 2);
    CHECK(total_new <= 64 * 256);
    // A lookup fails when exactly one of the key's eight bits is missing,
    // whichever lane it is in.
    std::vector<uint64_t> block(4, 0);
    const Hash128 h = digest(12345, 0);
    const SplitBlockLayout one_block(256, 8);
    CHECK(simd::split_block_add_avx2(block.data(), SplitBlockLayout::lane_seed(h), SplitBlockLayout::kSalts) == 8);
    for (int lane = 0; lane < 8; ++lane) {
        std::vector<uint64_t> damaged = block;
        const uint32_t bit = 32 * lane + SplitBlockLayout::lane_bit(SplitBlockLayout::lane_seed(h), lane);
        damaged[bit / 64] &= ~(uint64_t(1) << (bit % 64));
        CHECK_FALSE(
            simd::split_block_contains_avx2(damaged.data(), SplitBlockLayout::lane_seed(h), SplitBlockLayout::kSalts));
        CHECK_FALSE(SplitBlockLayout::contains_block<simd::Level::Portable>(damaged.data() + one_block.first_word(h),
                                                                            SplitBlockLayout::probe_seed(h)));
    }
}

#endif

TEST_CASE("simd: filters of every layout are byte-identical at every level") {
    LevelRestore restore;
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        const auto keys = distinct_keys(30000, 5);
        const auto probes = distinct_keys(30000, 6);
        std::vector<std::vector<uint8_t>> frames;
        std::vector<std::vector<uint8_t>> answers;
        std::vector<simd::Level> levels = {simd::Level::Portable};
        if (simd::supported_level() == simd::Level::Avx2) levels.push_back(simd::Level::Avx2);
        for (simd::Level level : levels) {
            simd::set_level(level);
            BloomFilter f = filter_of(layout, 30000);
            std::vector<uint8_t> was_present(keys.size());
            f.add_many(as_keys(keys), was_present.data());
            for (uint64_t i = 0; i < 2000; ++i) f.add(digest(i, 3));  // the single-key path too
            std::vector<uint8_t> present(probes.size());
            f.contains_many(as_keys(probes), present.data());
            for (uint64_t i = 0; i < 2000; ++i) REQUIRE(f.contains(digest(i, 3)));
            present.insert(present.end(), was_present.begin(), was_present.end());
            frames.push_back(f.serialize());
            answers.push_back(present);
            CHECK(f.set_bits() == f.bits().popcount());  // the kernels count new bits exactly
        }
        for (size_t i = 1; i < frames.size(); ++i) {
            CHECK(frames[i] == frames[0]);
            CHECK(answers[i] == answers[0]);
        }
    }
}

// blocked512 inserts probe one bit at a time (layouts.hpp); the count of new
// bits must equal the mask-and-popcount definition, repeated probes of one
// key included (k = 16 hits a bit twice for many keys).
TEST_CASE("simd: blocked512 inserts count new bits as masks and popcount do") {
    for (uint32_t k : {1u, 7u, 8u, 16u}) {
        CAPTURE(k);
        const Blocked512Layout layout(512 * 16, k);
        std::vector<uint64_t> reference(8 * 16, 0), plain(8 * 16, 0), atomic(8 * 16, 0);
        uint64_t total_new = 0;
        for (uint64_t i = 0; i < 3000; ++i) {
            const Hash128 h = digest(splitmix64(i), 5);
            uint64_t m[8];
            layout.masks(h, m);
            const uint64_t word = layout.first_word(h);
            uint32_t expected = 0;
            for (int w = 0; w < 8; ++w) {
                expected += platform::popcount64(m[w] & ~reference[word + w]);
                reference[word + w] |= m[w];
            }
            const Hash128 probe = digest(splitmix64(i + (uint64_t(1) << 40)), 5);
            uint64_t pm[8];
            layout.masks(probe, pm);
            uint64_t missing = 0;
            for (int w = 0; w < 8; ++w) missing |= pm[w] & ~reference[layout.first_word(probe) + w];
            REQUIRE(layout.add(plain.data(), h) == expected);
            REQUIRE(layout.add<AtomicOr>(atomic.data(), h) == expected);
            REQUIRE(layout.contains(plain.data(), probe) == (missing == 0));
            REQUIRE(layout.contains(plain.data(), h));
            total_new += expected;
        }
        CHECK(plain == reference);
        CHECK(atomic == reference);
        // Over half the bits the inserts could set are set (counts really compared).
        CHECK(total_new > std::min<uint64_t>(3000 * k, 16 * 512) / 2);
    }
}

// The batch loops against the single-key add/contains, at every level, for
// both write policies, with and without results, and for chunks that are
// not a multiple of the batch loop's inner chunk (the two-thread batches
// call add_digests / contains_digests with counts of their own).
TEST_CASE("simd: batch probes equal the single-key calls at every level") {
    LevelRestore restore;
    std::vector<simd::Level> levels = {simd::Level::Portable};
    if (simd::supported_level() == simd::Level::Avx2) levels.push_back(simd::Level::Avx2);
    for (Layout layout : {Layout::Blocked512, Layout::SplitBlock}) {
        CAPTURE(layout_name(layout));
        // A small filter, so that many keys are already present.
        const BloomGeometry geometry = bloom_geometry_at_most(layout, 2000, 0.01, 9);
        std::vector<Hash128> digests;
        for (uint64_t i = 0; i < 5000; ++i) digests.push_back(digest(splitmix64(i % 3700), 9));  // repeats
        std::vector<Hash128> probes;
        for (uint64_t i = 0; i < 3001; ++i) probes.push_back(digest(splitmix64(i + (uint64_t(1) << 33)), 9));
        for (uint64_t i = 0; i < 999; ++i) probes.push_back(digests[i * 5]);

        BloomFilter single(geometry);
        std::vector<uint8_t> single_was(digests.size()), single_present(probes.size());
        uint64_t single_new = 0;
        for (size_t i = 0; i < digests.size(); ++i) {
            const uint64_t before = single.set_bits();
            single_was[i] = single.add(digests[i]);
            single_new += single.set_bits() - before;
        }
        for (size_t i = 0; i < probes.size(); ++i) single_present[i] = single.contains(probes[i]);
        CHECK(std::count(single_present.begin(), single_present.end(), 1) >= 999);

        for (simd::Level level : levels) {
            CAPTURE(simd::level_name(level));
            simd::set_level(level);
            for (size_t step : {size_t(1), size_t(255), size_t(256), size_t(1000), size_t(5000)}) {
                CAPTURE(step);
                for (bool atomic : {false, true}) {
                    for (bool report : {false, true}) {
                        std::vector<uint64_t> words(single.bits().num_words(), 0);
                        std::vector<uint8_t> was(digests.size(), 2), present(probes.size(), 2);
                        uint64_t newly_set = 0;
                        with_layout(layout, geometry.num_bits, geometry.num_hashes, [&](const auto& l) {
                            for (size_t first = 0; first < digests.size(); first += step) {
                                const size_t count = std::min(step, digests.size() - first);
                                uint8_t* out = report ? was.data() + first : nullptr;
                                newly_set += atomic ? BloomFilter::add_digests<AtomicOr>(
                                                          l, words.data(), digests.data() + first, count, out)
                                                    : BloomFilter::add_digests<PlainOr>(
                                                          l, words.data(), digests.data() + first, count, out);
                            }
                            for (size_t first = 0; first < probes.size(); first += step)
                                BloomFilter::contains_digests(l, words.data(), probes.data() + first,
                                                              std::min(step, probes.size() - first),
                                                              present.data() + first);
                        });
                        REQUIRE(std::memcmp(words.data(), single.bits().words(), words.size() * 8) == 0);
                        CHECK(newly_set == single_new);
                        CHECK(present == single_present);
                        if (report)
                            CHECK(was == single_was);
                        else
                            CHECK(std::count(was.begin(), was.end(), 2) == static_cast<ptrdiff_t>(was.size()));
                    }
                }
            }
        }
    }
}

TEST_CASE("simd: compact split_block probes insert what their digests do, at every level") {
    LevelRestore restore;
    std::vector<simd::Level> levels = {simd::Level::Portable};
    if (simd::supported_level() == simd::Level::Avx2) levels.push_back(simd::Level::Avx2);
    const BloomGeometry geometry = bloom_geometry_at_most(Layout::SplitBlock, 2000, 0.01, 9);
    const SplitBlockLayout layout(geometry.num_bits, geometry.num_hashes);
    std::vector<Hash128> digests;
    for (uint64_t i = 0; i < 5000; ++i) digests.push_back(digest(splitmix64(i % 3700), 9));  // repeats
    std::vector<batch_probe::CompactProbe> compact;
    for (const Hash128& h : digests) {
        compact.push_back(batch_probe::CompactProbe::of(layout, h));
        // The block is first_word's, the seed the lanes' 32 bits.
        REQUIRE(compact.back().block * SplitBlockLayout::kBlockWords == layout.first_word(h));
        REQUIRE(compact.back().seed == SplitBlockLayout::lane_seed(h));
    }
    BloomFilter single(geometry);
    std::vector<uint8_t> single_was(digests.size());
    for (size_t i = 0; i < digests.size(); ++i) single_was[i] = single.add(digests[i]);
    CHECK(std::count(single_was.begin(), single_was.end(), 1) >= 1300);

    for (simd::Level level : levels) {
        CAPTURE(simd::level_name(level));
        simd::set_level(level);
        for (bool atomic : {false, true}) {
            for (bool report : {false, true}) {
                std::vector<uint64_t> words(single.bits().num_words(), 0);
                std::vector<uint8_t> was(digests.size(), 2);
                uint8_t* out = report ? was.data() : nullptr;
                const uint64_t newly_set =
                    atomic
                        ? batch_probe::add_compact<AtomicOr>(layout, words.data(), compact.data(), compact.size(), out)
                        : batch_probe::add_compact<PlainOr>(layout, words.data(), compact.data(), compact.size(), out);
                REQUIRE(std::memcmp(words.data(), single.bits().words(), words.size() * 8) == 0);
                CHECK(newly_set == single.set_bits());
                if (report)
                    CHECK(was == single_was);
                else
                    CHECK(std::count(was.begin(), was.end(), 2) == static_cast<ptrdiff_t>(was.size()));
            }
        }
    }
}

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
TEST_CASE("simd: the four-lane MurmurHash3 of 8-byte keys equals murmur3_x64_128_u64 lane by lane") {
    if (simd::supported_level() != simd::Level::Avx2) return;  // nothing to compare on this CPU
    std::vector<uint64_t> values = {0,
                                    1,
                                    8,
                                    0xffffffffULL,
                                    0x100000000ULL,
                                    uint64_t(1) << 63,
                                    ~uint64_t(0),
                                    0x87c37b91114253d5ULL,
                                    0xffffffff00000000ULL};
    for (uint64_t i = 0; i < 4000; ++i) values.push_back(splitmix64(i));
    while (values.size() % 4 != 0) values.push_back(values.size());
    for (uint32_t seed : {0u, 1u, 8u, 0x7fffffffu, 0xffffffffu, 0x9747b28cu}) {
        CAPTURE(seed);
        for (size_t i = 0; i < values.size(); i += 4) {
            const uint64_t* four = &values[i];
            uint64_t low[4];
            uint64_t high[4];
            [&]() BLOOMKIT_TARGET_AVX2 {
                __m256i h1;
                __m256i h2;
                simd::murmur3_x64_128_u64_x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(four)), seed, h1, h2);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(low), h1);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(high), h2);
            }();
            for (int lane = 0; lane < 4; ++lane) {
                const Hash128 expected = murmur3_x64_128_u64(four[lane], seed);
                REQUIRE(low[lane] == expected.h1);
                REQUIRE(high[lane] == expected.h2);
            }
        }
    }
}
#endif

namespace {

// for_each_hash of every (first, count) with count across the AVX2 loop's
// step edges (5 and 7 keys, and the last full step), for either digest use,
// against keys.hash(first + j): the same digests, called in order.
template <DigestUse Use, class Keys>
void check_for_each_hash(const Keys& keys, uint32_t seed) {
    for (size_t first : {size_t(0), size_t(3)}) {
        for (size_t count = 0; count <= 40 && first + count <= keys.size(); ++count) {
            CAPTURE(first);
            CAPTURE(count);
            bloomkit_test::require_walk_equals_index<Use>(keys, first, count, seed);
        }
    }
    bloomkit_test::require_walk_equals_index<Use>(keys, 0, keys.size(), seed);
}

}  // namespace

TEST_CASE("simd: integer keys hash to the same digests in the same order at every level") {
    LevelRestore restore;
    std::vector<simd::Level> levels = {simd::Level::Portable};
    if (simd::supported_level() == simd::Level::Avx2) levels.push_back(simd::Level::Avx2);
    const std::vector<uint64_t> values = distinct_keys(1001, 4);
    std::vector<int64_t> signed_values(values.begin(), values.end());
    signed_values[1] = -1;
    signed_values[6] = INT64_MIN;
    // int16 keys every third element (negative ones sign-extend).
    std::vector<int16_t> shorts(3 * values.size());
    for (size_t i = 0; i < values.size(); ++i) shorts[3 * i] = static_cast<int16_t>(values[i]);
    for (simd::Level level : levels) {
        CAPTURE(simd::level_name(level));
        simd::set_level(level);
        const IntegerKeys<uint64_t> contiguous = as_keys(values);
        const IntegerKeys<uint64_t> reversed(reinterpret_cast<const uint8_t*>(&values.back()), values.size(), -8);
        const IntegerKeys<int64_t> negative(reinterpret_cast<const uint8_t*>(signed_values.data()),
                                            signed_values.size(), 8);
        const IntegerKeys<int16_t> strided(reinterpret_cast<const uint8_t*>(shorts.data()), values.size(), 6);
        check_for_each_hash<DigestUse::Probed>(contiguous, 0);
        check_for_each_hash<DigestUse::Stored>(contiguous, 7);
        check_for_each_hash<DigestUse::Probed>(reversed, 3);
        check_for_each_hash<DigestUse::Stored>(reversed, 3);
        check_for_each_hash<DigestUse::Probed>(negative, 8);
        check_for_each_hash<DigestUse::Stored>(negative, 0xffffffffu);
        check_for_each_hash<DigestUse::Probed>(strided, 5);
        check_for_each_hash<DigestUse::Stored>(strided, 5);
    }
}
