// Sizing in the core (sizing.hpp): the textbook classic formulas, every
// layout meeting the requested rate, and the checks on impossible requests.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/sizing.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;

TEST_CASE("classic sizing is m = ceil(-n ln p / ln^2 2), k = round(m/n ln 2)") {
    const BloomSize s = classic_size(100, 0.05);  // docs: (624, 4), predicted 0.0502
    CHECK(s.num_bits == 624);
    CHECK(s.num_hashes == 4);
    CHECK(s.error_rate == doctest::Approx(0.0502).epsilon(0.002));
    for (uint64_t n : {1ULL, 1000ULL, 123457ULL, 1000000000ULL}) {
        for (double p : {0.5, 0.01, 1e-4, 1e-9}) {
            const BloomSize z = classic_size(n, p);
            const double ln2 = std::log(2.0);
            CHECK(z.num_bits == static_cast<uint64_t>(std::ceil(-static_cast<double>(n) * std::log(p) / (ln2 * ln2))));
            const double k = std::nearbyint(static_cast<double>(z.num_bits) / static_cast<double>(n) * ln2);
            CHECK(z.num_hashes == static_cast<uint32_t>(k < 1 ? 1 : k));
        }
    }
}

TEST_CASE("every layout is sized to its predicted rate, blocked layouts in whole blocks") {
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        for (double p : {0.1, 0.01, 0.001}) {
            const BloomSize s = layout_size(layout, 100000, p);
            CAPTURE(layout_name(layout));
            CAPTURE(p);
            CHECK(s.num_hashes >= 1);
            CHECK(s.num_hashes <= kMaxHashes);
            CHECK(s.error_rate <= p * 1.01);  // classic rounds k; the predicted rate is reported, not the request
            if (layout != Layout::Classic) CHECK(s.num_bits % layout_block_bits(layout) == 0);
            // Blocked layouts pay memory for cache locality, never less than classic.
            CHECK(s.num_bits >= classic_size(100000, p).num_bits * 99 / 100);
        }
    }
}

TEST_CASE("a filter sized by layout_size measures the rate it predicts") {
    const auto keys = bloomkit_test::distinct_keys(20000, 21);
    const auto absent = bloomkit_test::distinct_keys(200000, 22);
    for (Layout layout : {Layout::Classic, Layout::Blocked512, Layout::SplitBlock}) {
        const BloomSize s = layout_size(layout, keys.size(), 0.01);
        BloomFilter f(BloomGeometry{s.num_bits, s.num_hashes, 3, keys.size(), 0.01, layout});
        f.add_many(bloomkit_test::as_keys(keys), nullptr);
        std::vector<uint8_t> present(keys.size());
        f.contains_many(bloomkit_test::as_keys(keys), present.data());
        for (uint8_t p : present) REQUIRE(p == 1);
        std::vector<uint8_t> hits(absent.size());
        f.contains_many(bloomkit_test::as_keys(absent), hits.data());
        size_t false_positives = 0;
        for (uint8_t h : hits) false_positives += h;
        const double rate = static_cast<double>(false_positives) / static_cast<double>(absent.size());
        CAPTURE(layout_name(layout));
        // 1.1 p + 5 sigma at 2e5 probes (tests/support.py::fpr_upper_bound).
        CHECK(rate <= 1.1 * 0.01 + 5 * std::sqrt(0.01 * 0.99 / 200000.0));
    }
}

TEST_CASE("the default layout's choice ends for rates near 1 at any capacity") {
    // 2**62 keys at 1 - 2**-53 take 1,066 classic bits: two 512-bit blocks would
    // hold 2**61 keys each, past kMaxKeysPerBlock (the model's loops hung there).
    const LayoutChoice choice = default_layout_size(uint64_t{1} << 62, 1.0 - std::ldexp(1.0, -53));
    CHECK(choice.layout == Layout::Classic);
    CHECK(choice.size.num_bits == classic_size(uint64_t{1} << 62, 1.0 - std::ldexp(1.0, -53)).num_bits);
}

TEST_CASE("the default layout is the fastest within 1.10x the classic size") {
    const Layout fastest_first[] = {Layout::SplitBlock, Layout::Blocked512, Layout::Classic};
    for (uint64_t n : {1ULL, 1000ULL, 1000000ULL}) {
        for (double p : {0.5, 0.1, 0.01, 1e-3, 5e-4, 1e-4, 1e-6, 1e-9}) {
            const LayoutChoice choice = default_layout_size(n, p);
            const double bound = kDefaultLayoutMemoryBound * static_cast<double>(classic_size(n, p).num_bits);
            Layout expected = Layout::Classic;
            for (Layout layout : fastest_first) {
                if (static_cast<double>(layout_size(layout, n, p).num_bits) <= bound) {
                    expected = layout;
                    break;
                }
            }
            CHECK(choice.layout == expected);
            CHECK(choice.size.num_bits == layout_size(expected, n, p).num_bits);
            CHECK(static_cast<double>(choice.size.num_bits) <= bound);
        }
    }
    // One million keys: split_block at 1 % (+9.9 %), blocked512 at 0.1 % (+8.1 %), classic at 1e-6.
    CHECK(default_layout(1000000, 0.01) == Layout::SplitBlock);
    CHECK(default_layout(1000000, 1e-3) == Layout::Blocked512);
    CHECK(default_layout(1000000, 1e-6) == Layout::Classic);
}

TEST_CASE("classic_capacity is the most keys whose predicted rate stays within the target") {
    for (uint64_t n : {10ULL, 5000ULL, 1000000ULL}) {
        const uint64_t m = classic_size(n, 0.01).num_bits;
        const uint64_t fits = classic_capacity(m, 0.01);
        auto rate = [&](uint64_t items) {
            return classic_false_positive_rate(static_cast<double>(m), static_cast<double>(items),
                                               classic_optimal_hashes(m, items));
        };
        CAPTURE(n);
        CHECK(rate(fits) <= 0.01);
        CHECK(rate(fits + 1) > 0.01);
        CHECK(fits + n / 50 >= n);  // rounding k costs under 2 % of the capacity
    }
}

TEST_CASE("impossible requests are refused with the reason") {
    CHECK_THROWS_WITH_AS(classic_size(0, 0.01), doctest::Contains("capacity"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(classic_size(10, 1.0), doctest::Contains("error_rate"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(classic_size(10, 1e-300), doctest::Contains("hash functions"), std::invalid_argument);
    CHECK_THROWS_AS(cuckoo_num_buckets(100, 9), std::invalid_argument);
}

TEST_CASE("cuckoo sizing: f = ceil(log2(2b/p)) or more, capacity fits at the planned load") {
    for (double p : {0.03, 0.01, 1e-4}) {
        const CuckooSize s = cuckoo_size(100000, p, 4, 0, false);
        CAPTURE(p);
        CHECK(s.fingerprint_bits >= static_cast<unsigned>(std::ceil(std::log2(8.0 / p))));
        CHECK(s.error_rate <= p);
        CHECK(s.num_buckets * 4 >= 100000);
    }
}

// --- limits: every search bounded, no absurd memory ------------------------

TEST_CASE("blocked sizing near error_rate 1 ends, with at most kMaxKeysPerBlock keys per block") {
    // Once hung: a single block held 10^6 keys and the Poisson sum (and
    // blocked512's occupancy table) ran over every one of them.
    const struct {
        Layout layout;
        uint64_t capacity;
        double error_rate;
    } cases[] = {{Layout::Blocked512, 1000000, 0.999999},
                 {Layout::SplitBlock, uint64_t(1) << 53, 1.0 - std::ldexp(1.0, -53)},
                 {Layout::Blocked512, uint64_t(1) << 53, 1.0 - std::ldexp(1.0, -53)},
                 {Layout::SplitBlock, uint64_t(1) << 60, 0.5}};
    for (const auto& c : cases) {
        CAPTURE(layout_name(c.layout));
        CAPTURE(c.capacity);
        const BloomSize s = layout_size(c.layout, c.capacity, c.error_rate);
        const double blocks = static_cast<double>(s.num_bits / layout_block_bits(c.layout));
        CHECK(static_cast<double>(c.capacity) / blocks <= kMaxKeysPerBlock);
        CHECK(s.error_rate <= c.error_rate);
    }
    // 10^6 keys at 0.999999 in blocked512, k = 1: 1 - f(j) = (511/512)^j
    // meets 1e-6 at j = ln(1e-6) / ln(511/512) = 7,067 keys per block.
    const BloomSize s = layout_size(Layout::Blocked512, 1000000, 0.999999);
    CHECK(s.num_hashes == 1);
    CHECK(s.num_bits / 512 == doctest::Approx(1000000.0 / 7067.0).epsilon(0.05));
}

TEST_CASE("the predicted rate past kMaxKeysPerBlock keys per block is 1, without summing") {
    CHECK(layout_false_positive_rate(Layout::SplitBlock, 256.0, std::ldexp(1.0, 60), 8) == 1.0);
    CHECK(layout_false_positive_rate(Layout::Blocked512, 512.0, std::ldexp(1.0, 53), 1) == 1.0);
    // Just below the cut the sum gives the same answer to double precision.
    CHECK(layout_false_positive_rate(Layout::Blocked512, 512.0, kMaxKeysPerBlock, 1) == doctest::Approx(1.0));
}

TEST_CASE("blocked512 below 2^-64 sizes with k = 64 instead of no k at all") {
    const BloomSize s = layout_size(Layout::Blocked512, 10, 1e-25);
    CHECK(s.num_hashes == kMaxHashes);
    CHECK(s.num_bits > 0);
    CHECK(s.error_rate <= 1e-25);
    CHECK_THROWS_WITH_AS(layout_size(Layout::Blocked512, 1000, 5e-324), doctest::Contains("2**62 bits"),
                         std::invalid_argument);
}

TEST_CASE("classic_capacity ends for rates near 1 (k = 1 is far from the estimate)") {
    // k = 1: 1 - e^(-n/m) <= p  <=>  n <= -m ln(1 - p); the old linear walk
    // from the estimate m (ln 2)^2 / -ln p = 4.8e11 stepped ~5e11 times.
    const uint64_t n = classic_capacity(1000000, 0.999999);
    CHECK(static_cast<double>(n) == doctest::Approx(-1e6 * std::log(1e-6)).epsilon(1e-6));
    CHECK(classic_capacity(uint64_t(1) << 62, 1.0 - std::ldexp(1.0, -53)) == kMaxCapacity - 1);
    CHECK(classic_capacity(1, 1e-300) == 0);
}

TEST_CASE("a blocked layout of 64 MiB or more costing over kMaxLayoutOverhead x classic is refused") {
    // 1,000 keys at 1e-16: split_block 2,356,615,936 bits (295 MB) against
    // classic's 76,681 bits (9,592 bytes).
    const BloomSize s = layout_size(Layout::SplitBlock, 1000, 1e-16);
    CHECK_THROWS_WITH_AS(check_layout_overhead(Layout::SplitBlock, 1000, 1e-16, s.num_bits),
                         doctest::Contains("76,681 bits (9,592 bytes); at most 16 times is accepted: use "
                                           "layout='classic'"),
                         std::invalid_argument);
    CHECK_NOTHROW(check_layout_overhead(Layout::Classic, 1000, 1e-16, classic_size(1000, 1e-16).num_bits));
    // Under kCheckedAllocation (64 MiB) the ratio is not checked: 10 keys at
    // 1e-16 take 2.9 MB; near p = 1 classic's formula gives 3 bits for 10^6
    // keys where blocked512 needs 142 blocks.
    CHECK_NOTHROW(
        check_layout_overhead(Layout::SplitBlock, 10, 1e-16, layout_size(Layout::SplitBlock, 10, 1e-16).num_bits));
    CHECK_NOTHROW(check_layout_overhead(Layout::Blocked512, 1000000, 0.999999,
                                        layout_size(Layout::Blocked512, 1000000, 0.999999).num_bits));
    for (double p : {0.5, 0.01, 1e-4, 1e-6, 1e-9}) {
        CAPTURE(p);
        CHECK_NOTHROW(check_layout_overhead(Layout::SplitBlock, 1000000, p,
                                            layout_size(Layout::SplitBlock, 1000000, p).num_bits));
        CHECK_NOTHROW(check_layout_overhead(Layout::Blocked512, 1000000, p,
                                            layout_size(Layout::Blocked512, 1000000, p).num_bits));
    }
}

TEST_CASE("cuckoo_max_capacity is the largest capacity within 2**48 buckets") {
    for (unsigned b = kCuckooMinBucketSize; b <= kCuckooMaxBucketSize; ++b) {
        CAPTURE(b);
        const uint64_t n = cuckoo_max_capacity(b);
        CHECK(cuckoo_num_buckets(n, b) <= kCuckooMaxBuckets);
        CHECK(cuckoo_num_buckets(n + 1, b) > kCuckooMaxBuckets);
    }
    CHECK(static_cast<double>(cuckoo_max_capacity(4)) == doctest::Approx(std::ldexp(4.0 * 0.93, 48)).epsilon(1e-4));
}

TEST_CASE("classic sizing with a chosen k: the fewest bits at which k hashes meet the rate") {
    for (const double p : {0.5, 0.01, 0.005, 1e-6}) {
        for (uint32_t k = 1; k <= 8; ++k) {
            CAPTURE(p);
            CAPTURE(k);
            const BloomSize s = classic_size_with_hashes(1000000, p, k);
            CHECK(s.num_hashes == k);
            CHECK(s.error_rate == classic_false_positive_rate(static_cast<double>(s.num_bits), 1e6, k));
            CHECK(s.error_rate <= p * (1 + 1e-12));
            CHECK(classic_false_positive_rate(static_cast<double>(s.num_bits - 1), 1e6, k) > p * (1 - 1e-12));
        }
    }
    // The bits a Redis filter of (1e6, 0.5 %, k = 2) has stored since before the core sized it.
    CHECK(classic_size_with_hashes(1000000, 0.005, 2).num_bits == 27272050);
    CHECK_THROWS_WITH_AS(classic_size_with_hashes(10, 0.01, 0),
                         ("num_hashes must be in [1, " + std::to_string(kMaxHashes) + "], got 0").c_str(),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(classic_size_with_hashes(10, 0.01, kMaxHashes + 1), doctest::Contains("num_hashes"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(classic_size_with_hashes(uint64_t{1} << 62, 1e-12, 1),
                         doctest::Contains("with 1 hashes needs"), std::invalid_argument);
}

TEST_CASE("counter widths: the messages list kCounterWidths") {
    CHECK(counter_widths_text() == "4, 8 or 16");
    for (uint32_t width = 0; width <= 64; ++width)
        CHECK(valid_counter_width(width) == (width == 4 || width == 8 || width == 16));
}
