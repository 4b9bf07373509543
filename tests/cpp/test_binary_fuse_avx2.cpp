// The binary fuse filter's four-lane placement (binary_fuse_avx2.hpp)
// against the scalar placement key by key, and the batch lookup with AVX2 on
// and off: the same cells, fingerprints and answers, bit for bit (a filter
// is built by the scalar code and read by either).
#include <doctest/doctest.h>

#include <bloomkit/binary_fuse.hpp>
#include <bloomkit/binary_fuse_avx2.hpp>
#include <bloomkit/simd.hpp>

#include <cstdint>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::distinct_keys;
using bloomkit_test::LevelRestore;
using bloomkit_test::splitmix64;

namespace {

BinaryFuseFilter build_from(const std::vector<uint64_t>& keys, uint32_t bits, uint32_t seed) {
    std::vector<uint64_t> hashes;
    BinaryFuseFilter::append_hashes(as_keys(keys), seed, hashes);
    return BinaryFuseFilter::build(hashes, bits, seed);
}

}  // namespace

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
TEST_CASE("binary fuse AVX2: four-lane placement equals the scalar placement key by key") {
    if (simd::supported_level() != simd::Level::Avx2) return;  // nothing to compare on this CPU
    // Shapes from the smallest segment to 2^18-cell segments (1e7 keys);
    // 2^20 key hashes each, with the extremes of 64 bits among them.
    for (uint64_t n : {uint64_t(1), uint64_t(1000), uint64_t(100000), uint64_t(10000000)}) {
        for (uint32_t bits : {8u, 16u}) {
            CAPTURE(n);
            CAPTURE(bits);
            BinaryFuseParams p;
            p.num_keys = n;
            p.build_seed = splitmix64(n + bits);
            p.fingerprint_bits = bits;
            p.shape = binary_fuse_shape(n);
            const BinaryFuseFilter f(p);  // placement only: its cells are never read
            const uint64_t range = uint64_t(p.shape.segment_count) * p.shape.segment_length;
            const simd::FusePlacementX4 lanes = [&]() BLOOMKIT_TARGET_AVX2 {
                return simd::fuse_placement_x4(p.shape.segment_length, p.shape.segment_length - 1, range, p.build_seed,
                                               bits == 8 ? 0xffu : 0xffffu);
            }();
            std::vector<uint64_t> key_hashes = {
                0, 1, ~uint64_t(0), uint64_t(1) << 63, 0xffffffffULL, ~p.build_seed + 1};
            for (uint64_t i = 0; key_hashes.size() < (size_t(1) << 20); ++i) key_hashes.push_back(splitmix64(i ^ n));
            size_t mismatches = 0, top_bits_off = 0;
            for (size_t i = 0; i < key_hashes.size(); i += 4) {
                alignas(32) uint64_t cell[3][4];
                alignas(32) uint64_t fingerprint[4];
                [&]() BLOOMKIT_TARGET_AVX2 {
                    __m256i c0, c1, c2, fp;
                    simd::fuse_place_x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&key_hashes[i])), lanes, c0,
                                        c1, c2, fp);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(cell[0]), c0);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(cell[1]), c1);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(cell[2]), c2);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(fingerprint), fp);
                }();
                for (size_t lane = 0; lane < 4; ++lane) {
                    const BinaryFuseFilter::Probe expected = f.probe(Hash128{key_hashes[i + lane], 0});
                    mismatches += cell[0][lane] != expected.cell[0] || cell[1][lane] != expected.cell[1] ||
                                  cell[2][lane] != expected.cell[2] || fingerprint[lane] != expected.fingerprint;
                    // What multiplying only the top 32 bits of x would give.
                    const uint64_t x = detail::fmix64(key_hashes[i + lane] + p.build_seed);
                    top_bits_off += (((x >> 32) * range) >> 32) != expected.cell[0];
                }
            }
            CHECK(mismatches == 0);
            // The comparison has power: the cheaper top-bits product would
            // misplace about range / 2^33 of the keys (~1.3e-3 of them at
            // 1e7 keys; none, likely, for one key's 4-cell range).
            if (n >= 100000) CHECK(top_bits_off > 0);
        }
    }
}
#endif

TEST_CASE("binary fuse AVX2: batch lookups answer as the portable ones, 8 and 16 bits") {
    LevelRestore restore;
    if (simd::supported_level() != simd::Level::Avx2) return;  // one path only on this CPU
    // 300 000 present keys interleaved with absent ones, 1 000 003 in all
    // (not a multiple of 4, 32 or 256), and shorter batches starting at an
    // odd key so no group of four or hash chunk lines up with the whole.
    const auto keys = distinct_keys(300000, 31);
    const auto absent = distinct_keys(700003, 32);
    std::vector<uint64_t> batch;
    for (size_t i = 0; i < absent.size(); ++i) {
        if (i < keys.size()) batch.push_back(keys[i]);
        batch.push_back(absent[i]);
    }
    REQUIRE(batch.size() == 1000003);
    for (uint32_t bits : {8u, 16u}) {
        CAPTURE(bits);
        const BinaryFuseFilter f = build_from(keys, bits, 9);
        const auto lookup = [&](simd::Level level, size_t first, size_t length) {
            simd::set_level(level);
            const std::vector<uint64_t> part(batch.begin() + static_cast<ptrdiff_t>(first),
                                             batch.begin() + static_cast<ptrdiff_t>(first + length));
            std::vector<uint8_t> present(length + 4, 7);
            f.contains_many(as_keys(part), present.data());
            return present;
        };
        const std::vector<uint8_t> vector_answers = lookup(simd::Level::Avx2, 0, batch.size());
        const std::vector<uint8_t> scalar_answers = lookup(simd::Level::Portable, 0, batch.size());
        CHECK(vector_answers == scalar_answers);
        if (bits == 16) {  // 16-bit cells are placed one at a time unless asked (binary_fuse.hpp)
            simd::set_level(simd::Level::Avx2);
            std::vector<uint8_t> four_at_a_time(batch.size() + 4, 7);
            f.contains_many_as<uint16_t, kFuseLookupDistance, kHashChunk, true>(as_keys(batch), four_at_a_time.data());
            four_at_a_time.resize(batch.size());
            std::vector<uint8_t> scalar(scalar_answers.begin(), scalar_answers.begin() + batch.size());
            CHECK(four_at_a_time == scalar);
        }
        size_t found = 0, false_positives = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
            found += vector_answers[i] == 1;
            false_positives += (i % 2 == 1 || i >= 2 * keys.size()) && vector_answers[i] == 1;
        }
        CHECK(found - false_positives == keys.size());
        // 700 003 absent keys at 2^-8: 2734 +- 157 (3 sigma); at 2^-16, 11.
        if (bits == 8) CHECK(false_positives == doctest::Approx(700003.0 / 256).epsilon(0.06));
        if (bits == 16) CHECK(false_positives < 40);
        for (size_t length : {1, 3, 5, 31, 33, 63, 65, 255, 257, 259, 1021, 4099, 65539}) {
            CAPTURE(length);
            CHECK(lookup(simd::Level::Avx2, 1, length) == lookup(simd::Level::Portable, 1, length));
        }
    }
}
