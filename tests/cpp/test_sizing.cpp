// Sizing in the core (sizing.hpp): the textbook classic formulas, every
// layout meeting the requested rate, and the checks on impossible requests.
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/sizing.hpp>

#include <cmath>
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
