// BinaryFuseFilter: every key found, the false-positive rate of f-bit
// fingerprints, the paper's sizes, duplicates, and frames checked before use.
#include <doctest/doctest.h>

#include <bloomkit/binary_fuse.hpp>

#include <cstring>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::digest;
using bloomkit_test::distinct_keys;

namespace {

BinaryFuseFilter build_from(const std::vector<uint64_t>& keys, uint32_t bits, uint32_t seed = 3) {
    std::vector<uint64_t> hashes;
    BinaryFuseFilter::append_hashes(as_keys(keys), seed, hashes);
    return BinaryFuseFilter::build(hashes, bits, seed);
}

size_t count_present(const BinaryFuseFilter& f, const std::vector<uint64_t>& keys) {
    std::vector<uint8_t> present(keys.size());
    f.contains_many(as_keys(keys), present.data());
    size_t n = 0;
    for (uint8_t p : present) n += p;
    return n;
}

}  // namespace

TEST_CASE("binary_fuse_shape follows the paper's segment length and size factor") {
    // 10^7 keys: L = 2^floor(ln(1e7)/ln(3.33) + 2.25) = 2^15; factor 1.125;
    // ceil(1.125e7 / 32768) = 344 segments, 342 of them start segments.
    const BinaryFuseShape big = binary_fuse_shape(10000000);
    CHECK(big.segment_length == 32768);
    CHECK(big.segment_count == 342);
    CHECK(big.array_length() == 344ull * 32768);
    // 1000 keys: L = 2^floor(5.74 + 2.25) = 2^7; factor 0.875 + 0.25 * 2 = 1.375.
    const BinaryFuseShape small = binary_fuse_shape(1000);
    CHECK(small.segment_length == 128);
    CHECK(small.segment_count == 11 - 2);
    // The smallest sets: one start segment of 4 cells.
    CHECK(binary_fuse_shape(0).array_length() == 12);
    CHECK(binary_fuse_shape(1).array_length() == 12);
    // The segment length is capped at 2^18.
    CHECK(binary_fuse_shape(kBinaryFuseMaxKeys).segment_length == kBinaryFuseMaxSegmentLength);
    CHECK_THROWS_WITH_AS(binary_fuse_shape(kBinaryFuseMaxKeys + 1), doctest::Contains("at most 2**31"),
                         std::invalid_argument);
}

TEST_CASE("BinaryFuseFilter: no false negatives, FPR near 2^-f, ~9 and ~18 bits per key") {
    const auto keys = distinct_keys(200000, 1);
    const auto absent = distinct_keys(1000000, 2);
    for (uint32_t bits : {8u, 16u}) {
        const BinaryFuseFilter f = build_from(keys, bits);
        CHECK(f.size() == keys.size());
        CHECK(count_present(f, keys) == keys.size());
        for (size_t i = 0; i < 1000; ++i) CHECK(f.contains(digest(keys[i], 3)));
        const double fpr = double(count_present(f, absent)) / double(absent.size());
        // 2^-8 = 0.39 %: 1e6 probes put 3 sigma at +-0.019 %; 2^-16 = 0.0015 %.
        if (bits == 8) CHECK(fpr == doctest::Approx(1.0 / 256).epsilon(0.06));
        if (bits == 16) CHECK(fpr < 3.5e-5);
        // 2e5 keys: size factor 0.875 + 0.25 ln(1e6) / ln(2e5) = 1.1580, so
        // 231,594 cells, rounded up to 57 segments of 2^12: 1.1674 cells per key.
        CHECK(f.params().array_length() == 57 * 4096);
        const double bits_per_key = 8.0 * double(f.params().fingerprint_bytes()) / double(keys.size());
        CHECK(bits_per_key == doctest::Approx(bits * 1.16736).epsilon(0.0001));
    }
}

TEST_CASE("BinaryFuseFilter: duplicates are dropped, tiny and empty sets build") {
    std::vector<uint64_t> keys = distinct_keys(5000, 3);
    const std::vector<uint64_t> distinct = keys;
    for (size_t i = 0; i < 5000; i += 3) keys.push_back(keys[i]);  // 1667 repeats
    for (int i = 0; i < 100; ++i) keys.push_back(keys[7]);         // one key 101 times: a count overflow
    const BinaryFuseFilter f = build_from(keys, 8);
    CHECK(f == build_from(distinct, 8));  // the set decides, not the repeats
    CHECK(f.size() == distinct.size());
    CHECK(count_present(f, distinct) == distinct.size());
    for (size_t n : {0, 1, 2, 3, 10, 100}) {
        const auto few = distinct_keys(n, 4);
        const BinaryFuseFilter g = build_from(few, 16);
        CHECK(g.size() == n);
        CHECK(count_present(g, few) == n);
    }
    // The same keys in any order give the same filter.
    std::vector<uint64_t> reversed(distinct.rbegin(), distinct.rend());
    CHECK(build_from(reversed, 8) == build_from(distinct, 8));
    std::vector<uint64_t> hashes{1, 2};
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::build(hashes, 12, 0), "fingerprint_bits must be 8 or 16, got 12",
                         std::invalid_argument);
}

TEST_CASE("BinaryFuseFilter: frames round-trip byte for byte and are checked before allocation") {
    const auto keys = distinct_keys(3000, 5);
    const BinaryFuseFilter f = build_from(keys, 16, 9);
    const std::vector<uint8_t> frame = f.serialize();
    const BinaryFuseFilter g = BinaryFuseFilter::deserialize(frame.data(), frame.size());
    CHECK(g == f);
    CHECK(g.serialize() == frame);
    CHECK(count_present(g, keys) == keys.size());

    // Rewrites a params field and the checksum, as a hostile writer would.
    const size_t params = kHeaderSize;
    auto with = [&](size_t offset, const void* value, size_t width) {
        std::vector<uint8_t> bad = frame;
        std::memcpy(bad.data() + params + offset, value, width);
        const uint64_t sum = frame_checksum(bad.data(), bad.size() - kChecksumSize);
        for (int i = 0; i < 8; ++i) bad[bad.size() - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
        return bad;
    };
    const uint64_t huge = uint64_t(1) << 40;
    auto bad = with(0, &huge, 8);  // num_keys
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(bad.data(), bad.size()),
                         doctest::Contains("invalid stored parameters: a binary fuse filter holds at most 2**31"),
                         FormatError);
    const uint64_t more = keys.size() * 4;
    bad = with(0, &more, 8);  // a key count whose geometry differs from the stored one
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(bad.data(), bad.size()), doctest::Contains("does not match"),
                         FormatError);
    const uint32_t segment = 1u << 30;
    bad = with(20, &segment, 4);  // segment_length
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(bad.data(), bad.size()), doctest::Contains("segment geometry"),
                         FormatError);
    const uint8_t width = 12;
    bad = with(28, &width, 1);  // fingerprint_bits
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(bad.data(), bad.size()),
                         doctest::Contains("fingerprint_bits must be 8 or 16, got 12"), FormatError);
    const uint8_t eight = 8;
    bad = with(28, &eight, 1);  // 8 bits: the payload is twice what the params need
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(bad.data(), bad.size()),
                         doctest::Contains("but the parameters need"), FormatError);
    std::vector<uint8_t> flipped = frame;
    flipped[flipped.size() - 20] ^= 1;
    CHECK_THROWS_WITH_AS(BinaryFuseFilter::deserialize(flipped.data(), flipped.size()),
                         "checksum mismatch: the data is corrupt", FormatError);
}

TEST_CASE("BinaryFuseFilter: the pipelined batch lookup equals the single-key lookup") {
    // 10^6 present and 10^6 absent keys interleaved, plus 3 so the last
    // hash chunk is partial; every prefetch distance ends in the tail loop.
    const auto keys = distinct_keys(1000000, 6);
    const auto absent = distinct_keys(1000003, 7);
    std::vector<uint64_t> batch;
    batch.reserve(keys.size() + absent.size());
    for (size_t i = 0; i < absent.size(); ++i) {
        if (i < keys.size()) batch.push_back(keys[i]);
        batch.push_back(absent[i]);
    }
    for (uint32_t bits : {8u, 16u}) {
        const BinaryFuseFilter f = build_from(keys, bits, 11);
        std::vector<uint8_t> present(batch.size(), 2);
        f.contains_many(as_keys(batch), present.data());
        std::vector<uint8_t> far(batch.size(), 2);  // another distance: the same answers
        if (bits == 8)
            f.contains_many_as<uint8_t, 3>(as_keys(batch), far.data());
        else
            f.contains_many_as<uint16_t, 3>(as_keys(batch), far.data());
        size_t mismatches = 0, found = 0, false_positives = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
            const bool single = f.contains(digest(batch[i], 11));
            mismatches += present[i] != uint8_t(single) || far[i] != present[i];
            found += present[i];
            false_positives += i % 2 == 1 || i >= 2 * keys.size() ? present[i] : 0;
        }
        CHECK(mismatches == 0);
        // Every present key, and absent ones at ~2^-f: 1e6 * 2^-8 = 3906
        // (3 sigma: +-188); 1e6 * 2^-16 = 15 (at most 40 with overwhelming odds).
        CHECK(found - false_positives == keys.size());
        if (bits == 8) CHECK(false_positives == doctest::Approx(1000003.0 / 256).epsilon(0.05));
        if (bits == 16) CHECK(false_positives < 40);
    }
}

TEST_CASE("BinaryFuseFilter: batches shorter than the distance or ending at a chunk edge are answered exactly") {
    // The lookup checks key i - Distance while it prefetches key i, across
    // hash chunks (kHashChunk keys): a batch shorter than the distance is
    // all tail, and one ending just before, at or after a chunk edge leaves
    // the tail in another chunk. Each answer must be the single-key one, and
    // no byte past the batch may be written.
    const auto keys = distinct_keys(5000, 21);
    const auto absent = distinct_keys(600, 22);
    std::vector<uint64_t> mixed;
    for (size_t i = 0; i < absent.size(); ++i) {
        mixed.push_back(keys[i]);
        mixed.push_back(absent[i]);
    }
    // Around the distances 1, 32 (the default) and 60 (the most), and the edges of
    // the first two chunks of kHashChunk = 256 keys.
    static_assert(kHashChunk == 256, "the lengths below straddle 256-key chunk edges");
    const std::vector<size_t> lengths = {0,  1,  2,   3,   15,  16,  17,  31,  32,  33,  63,
                                         64, 65, 255, 256, 257, 288, 509, 512, 545, 1200};
    REQUIRE(mixed.size() == 1200);
    for (uint32_t bits : {8u, 16u}) {
        const BinaryFuseFilter f = build_from(keys, bits, 5);
        size_t mismatches = 0, overwritten = 0, found = 0;
        for (size_t length : lengths) {
            const std::vector<uint64_t> batch(mixed.begin(), mixed.begin() + static_cast<ptrdiff_t>(length));
            for (int distance = 0; distance < 3; ++distance) {
                std::vector<uint8_t> present(length + 8, 7);
                const auto run = [&](auto cell) {
                    using Cell = decltype(cell);
                    if (distance == 0) f.contains_many_as<Cell, 1>(as_keys(batch), present.data());
                    if (distance == 1) f.contains_many(as_keys(batch), present.data());
                    if (distance == 2)
                        f.contains_many_as<Cell, BinaryFuseFilter::kMaxLookupDistance>(as_keys(batch), present.data());
                };
                if (bits == 8)
                    run(uint8_t{});
                else
                    run(uint16_t{});
                for (size_t i = 0; i < length; ++i) {
                    mismatches += present[i] != uint8_t(f.contains(digest(batch[i], 5)));
                    found += i % 2 == 0 && present[i] == 1;
                }
                for (size_t i = length; i < present.size(); ++i) overwritten += present[i] != 7;
            }
        }
        CHECK(mismatches == 0);
        CHECK(overwritten == 0);
        // Every present key of every batch, at each of the three distances.
        size_t expected_found = 0;
        for (size_t length : lengths) expected_found += 3 * ((length + 1) / 2);
        CHECK(found == expected_found);
    }
}
