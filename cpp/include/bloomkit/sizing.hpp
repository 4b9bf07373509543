// Sizing of every filter and every limit, in one place (python/bloomkit/calc.py
// is a thin wrapper over these functions).
//
// Bloom filters, by layout (layouts.hpp):
//
// * classic: after n keys in m bits with k positions, an absent key tests
//   positive with p = (1 - e^(-kn/m))^k (Bloom 1970; Broder & Mitzenmacher
//   2004). For a target p: m = ceil(-n ln p / (ln 2)^2),
//   k = max(1, round(m/n ln 2)) (round half to even, as Python's round()).
// * blocked layouts (blocked512, split_block): a key's bits are all in one
//   block of B bits, and blocks receive different numbers of keys. With
//   n keys over N = m / B blocks, the number of keys j in the block an absent
//   key lands in is ~ Poisson(lambda = n / N), and
//       p = sum_j Poisson(j; lambda) * f(j)
//   where f(j) is the false-positive rate of one block holding j keys
//   (Putze, Sanders & Singler, "Cache-, Hash- and Space-Efficient Bloom
//   Filters", 2007):
//       split_block:  f(j) = (1 - (1 - 1/32)^j)^8   exactly: each of the 8
//                     lanes gets exactly one of a key's bits, independently.
//       blocked512:   f(j) = E[(X / 512)^k], X the number of set bits after
//                     k j uniform throws into 512 bits. The usual shortcut
//                     (1 - (1 - 1/512)^(kj))^k replaces X by its mean and is
//                     ~3 % optimistic at 0.1 % (measured; Jensen), so X's
//                     distribution is computed exactly by dynamic programming
//                     over the throws (BlockOccupancy).
//   The classic formula ignores the block-load variance altogether: a split
//   block filter sized with it at 1 % measures about 1.1 %. The sizing picks
//   the fewest blocks whose p meets the target (and, for blocked512, the k
//   that needs the fewest blocks).
//
// Cuckoo filters: Fan et al., "Cuckoo Filter: Practically Better Than Bloom"
// (CoNEXT 2014), section 4; see docs/cuckoo.md and the comments below.
//
// Sliding windows (window.hpp): g live generations OR-ed, each sized for
// p_g = 1 - (1 - p)^(1/g) so the whole window meets p (see below).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "layouts.hpp"
#include "memory.hpp"

namespace bloomkit {

// --- limits ---------------------------------------------------------------

constexpr uint32_t kMaxHashes = 64;
constexpr uint64_t kMaxCapacity = uint64_t(1) << 63;  // capacities are < 2^63
// Counting filter counter widths: divisors of 64, so no counter straddles words.
inline constexpr uint32_t kCounterWidths[] = {4, 8, 16};
constexpr bool valid_counter_width(uint32_t width) {
    for (const uint32_t valid : kCounterWidths)
        if (width == valid) return true;
    return false;
}
constexpr uint32_t kDefaultCounterBits = 4;
// The widths as messages list them: "4, 8 or 16".
inline std::string counter_widths_text() {
    std::string text;
    const size_t count = sizeof(kCounterWidths) / sizeof(kCounterWidths[0]);
    for (size_t i = 0; i < count; ++i)
        text += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::to_string(kCounterWidths[i]);
    return text;
}
// Cuckoo: b = 1 reaches only ~50 % load and fails early at any size.
constexpr unsigned kCuckooMinBucketSize = 2;
constexpr unsigned kCuckooMaxBucketSize = 8;
constexpr uint64_t kCuckooMaxBuckets = uint64_t(1) << 48;
constexpr unsigned kCuckooMinFingerprintBits = 4;
constexpr unsigned kCuckooMaxFingerprintBits = 32;
// Blocked layouts: the predicted rate is taken as 1 above this many keys per
// block (lambda = n / blocks). Fewest-filled case, blocked512 with k = 1: an
// absent key is a false positive unless its bit is one of the block's still
// clear bits, so 1 - f(j) = (1 - 1/512)^j, and with j ~ Poisson(2^16)
// 1 - p < e^-100 (split_block and larger k are closer still) -- far below
// 2^-53, the gap between 1 and the largest error_rate below it. Sizing
// never evaluates a block count under n / 2^16, so no Poisson sum runs over
// more than ~18 sqrt(2^16) = 4,600 terms or memoises more than ~2^17 keys.
constexpr double kMaxKeysPerBlock = 65536.0;
// A blocked layout of at least kCheckedAllocation bytes (memory.hpp, 64 MiB)
// may cost at most this many times the classic layout's bits for the same
// request. Below ~1e-10 split_block (8 bits per key, one block) can only
// meet the rate by leaving most blocks empty, and its size explodes (1,000
// keys at 1e-16: 295 MB against classic's 9.6 KB, 30,732 times); blocked512
// stays within 6.4 times down to 1e-16 (layout_size, 10^6 keys). Such a
// request is refused with the classic size to use instead. Smaller filters
// pass whatever the ratio: near error_rate 1 the classic formula gives a
// few bits where a block is the least a blocked filter has.
constexpr double kMaxLayoutOverhead = 16.0;
// Scalable Bloom filter: at most this many slices in a chain (built, grown
// or loaded). An absent key probes every slice, and each slice costs its own
// allocation, so the count bounds a lookup's cost and a load's memory (a
// valid 104 MB file of 10^6 tiny slices took ~350 MB to load and 0.16 s per
// lookup). Real chains end long before: slice capacities grow by `growth`
// and reach 2^63 keys within 64 slices at growth 2 (1,024 slices need a
// growth under 2^(63/1024) = 1.044), and slice rates shrink by `tightening`
// to the 64-hash limit (2^-64) within ~240 slices at 0.85 from 1 %.
constexpr uint32_t kMaxScalableSlices = 1024;

namespace detail {
// A double in %g notation with 6 significant digits (std::to_string prints
// 1e-20 as "0.000000").
inline std::string format_number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

// The shortest %g text that reads back as `value` (Python's repr of a float,
// up to the ".0" of integral values).
inline std::string format_repr(double value) {
    char text[40];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(text, sizeof text, "%.*g", precision, value);
        if (std::strtod(text, nullptr) == value) break;
    }
    return text;
}

// "1234567" -> "1,234,567" (Python's format(n, ",")).
inline std::string with_commas(const std::string& digits) {
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

inline const double kLn2 = std::log(2.0);

// sum_j Poisson(j; lambda) f(j), summed outwards from the mode until the
// remaining terms cannot change the result (f is at most 1 and increasing).
template <class F>
double poisson_expectation(double lambda, F&& f) {
    // Callers keep lambda <= kMaxKeysPerBlock; each loop below stops within
    // ~9 sqrt(lambda) terms of the mode (the pmf falls as e^(-d^2 / 2 lambda),
    // under 1e-17 of its peak at d = 9 sqrt(lambda)).
    const double mode = std::floor(lambda);
    const double log_lambda = std::log(lambda);
    const double mode_pmf = std::exp(-lambda + mode * log_lambda - std::lgamma(mode + 1.0));
    double total = mode_pmf * f(mode);
    double pmf = mode_pmf;
    for (double j = mode + 1.0;; j += 1.0) {
        pmf *= lambda / j;
        total += pmf * f(j);
        if (pmf < 1e-17 * total || pmf < 1e-300) break;
    }
    pmf = mode_pmf;
    for (double j = mode; j >= 1.0; j -= 1.0) {
        pmf *= j / lambda;
        const double term = pmf * f(j - 1.0);
        total += term;
        if (term < 1e-17 * total || pmf < 1e-300) break;
    }
    return total;
}
}  // namespace detail

// --- Bloom filter rates ---------------------------------------------------

// Classic prediction (1 - e^(-kn/m))^k.
inline double classic_false_positive_rate(double num_bits, double num_items, uint32_t num_hashes) {
    const double k = num_hashes;
    return std::pow(-std::expm1(-k * num_items / num_bits), k);
}

// f(j) of a blocked512 filter with k hashes: E[(X/512)^k] after k j throws,
// from the exact occupancy distribution P(X = x), advanced one throw at a
// time (x -> x + 1 with probability (512 - x) / 512). Values are memoised
// as j grows, so a Poisson sum costs one pass over the throws.
class BlockOccupancy {
  public:
    static constexpr int kBits = 512;
    explicit BlockOccupancy(uint32_t k) : k_(k), occupancy_(kBits + 1, 0.0), power_(kBits + 1, 0.0) {
        occupancy_[0] = 1.0;
        for (int x = 0; x <= kBits; ++x) power_[x] = std::pow(double(x) / kBits, double(k));
        rate_.push_back(0.0);  // j = 0: an empty block never answers "present"
    }

    double operator()(double j_real) {
        const size_t j = static_cast<size_t>(j_real);
        while (rate_.size() <= j) advance_one_key();
        return rate_[j];
    }

  private:
    void advance_one_key() {
        for (uint32_t t = 0; t < k_; ++t) {
            const int top = std::min<uint64_t>(throws_, kBits - 1);
            if (throws_ >= uint64_t(kBits) && occupancy_[kBits] > 1.0 - 1e-300) break;
            for (int x = top; x >= 0; --x) {
                const double p = occupancy_[x];
                occupancy_[x + 1] += p * (double(kBits - x) / kBits);
                occupancy_[x] = p * (double(x) / kBits);
            }
            ++throws_;
        }
        double rate = 0.0;
        for (int x = 0; x <= kBits; ++x) rate += occupancy_[x] * power_[x];
        rate_.push_back(std::min(1.0, rate));
    }

    uint32_t k_;
    uint64_t throws_ = 0;
    std::vector<double> occupancy_;
    std::vector<double> power_;
    std::vector<double> rate_;
};

// Predicted false-positive rate of a filter of `layout` with m bits and k
// hashes after n distinct keys (see the top of this file). `occupancy`, when
// given, is a BlockOccupancy for k to reuse across calls (blocked512).
inline double layout_false_positive_rate(Layout layout, double num_bits, double num_items, uint32_t num_hashes,
                                         BlockOccupancy* occupancy = nullptr) {
    if (num_items <= 0.0) return 0.0;
    const double blocks = num_bits / static_cast<double>(layout_block_bits(layout));
    const double lambda = num_items / blocks;
    // Past kMaxKeysPerBlock keys per block the rate is 1 to within 2^-100
    // (see the constant), and summing it would cost O(sqrt(lambda)) terms
    // and, for blocked512, memory in lambda.
    if (!(lambda <= kMaxKeysPerBlock)) return 1.0;
    switch (layout) {
        case Layout::Blocked512: {
            if (occupancy != nullptr) return detail::poisson_expectation(lambda, *occupancy);
            BlockOccupancy local(num_hashes);
            return detail::poisson_expectation(lambda, local);
        }
        case Layout::SplitBlock: {
            const double log_clear = std::log1p(-1.0 / 32.0);
            return detail::poisson_expectation(
                lambda, [&](double j) { return std::pow(-std::expm1(j * log_clear), double(kSplitBlockHashes)); });
        }
        case Layout::Classic: break;
    }
    return classic_false_positive_rate(num_bits, num_items, num_hashes);
}

// --- Bloom filter sizing --------------------------------------------------

struct BloomSize {
    uint64_t num_bits;
    uint32_t num_hashes;
    double error_rate;  // predicted at capacity
};

// The range checks shared by the constructors, the sizing requests and the
// loaders (stored parameters), so each kind of parameter has one wording.
inline void require_count(const char* name, uint64_t value) {
    if (value == 0 || value >= kMaxCapacity)
        throw std::invalid_argument(std::string(name) + " must be in [1, 2**63), got " + std::to_string(value));
}
inline void require_open_unit(const char* name, double value) {
    if (!(value > 0.0 && value < 1.0))
        throw std::invalid_argument(std::string(name) + " must be in (0, 1) exclusive, got " +
                                    detail::format_repr(value));
}

inline void check_sizing_request(uint64_t capacity, double error_rate) {
    require_count("capacity", capacity);
    require_open_unit("error_rate", error_rate);
}

inline uint32_t classic_optimal_hashes(uint64_t num_bits, uint64_t capacity) {
    const double k = std::nearbyint(static_cast<double>(num_bits) / static_cast<double>(capacity) * detail::kLn2);
    return k < 1.0 ? 1u : k > 1e9 ? 1000000000u : static_cast<uint32_t>(k);
}

inline void check_hash_count(uint32_t k, double error_rate) {
    if (k > kMaxHashes)
        throw std::invalid_argument("error_rate " + detail::format_repr(error_rate) + " needs " + std::to_string(k) +
                                    " hash functions; at most " + std::to_string(kMaxHashes) + " are supported");
}

// The classic sizing, bit-identical to bloomkit's original Python formula.
inline BloomSize classic_size(uint64_t capacity, double error_rate) {
    check_sizing_request(capacity, error_rate);
    const double n = static_cast<double>(capacity);
    const double bits = std::ceil(-n * std::log(error_rate) / (detail::kLn2 * detail::kLn2));
    if (!(bits < 9223372036854775808.0)) {
        char text[64];
        std::snprintf(text, sizeof text, "%.0f", bits);
        throw std::invalid_argument("capacity " + detail::with_commas(std::to_string(capacity)) + " at error_rate " +
                                    detail::format_repr(error_rate) + " needs about " + detail::with_commas(text) +
                                    " bits; at most 2**63 - 1 are supported (a ScalableBloomFilter, or several "
                                    "filters, can hold more keys)");
    }
    const uint64_t num_bits = bits < 1.0 ? 1 : static_cast<uint64_t>(bits);
    const uint32_t k = classic_optimal_hashes(num_bits, capacity);
    check_hash_count(k, error_rate);
    return {num_bits, k, classic_false_positive_rate(static_cast<double>(num_bits), n, k)};
}

// Classic sizing with k chosen by the caller instead of the optimal k (a Redis
// filter trades bits for server work, which is proportional to k): the fewest
// bits m at which k hashes meet p, (1 - e^(-kn/m))^k <= p, i.e.
// m >= -k n / ln(1 - p^(1/k)) (classic_false_positive_rate's model).
inline BloomSize classic_size_with_hashes(uint64_t capacity, double error_rate, uint32_t num_hashes) {
    check_sizing_request(capacity, error_rate);
    if (num_hashes < 1 || num_hashes > kMaxHashes)
        throw std::invalid_argument("num_hashes must be in [1, " + std::to_string(kMaxHashes) + "], got " +
                                    std::to_string(num_hashes));
    const double n = static_cast<double>(capacity);
    const double k = static_cast<double>(num_hashes);
    const double bits = std::ceil(-k * n / std::log1p(-std::pow(error_rate, 1.0 / k)));
    if (!(bits < 9223372036854775808.0)) {
        char text[64];
        std::snprintf(text, sizeof text, "%.0f", bits);
        throw std::invalid_argument("capacity " + detail::with_commas(std::to_string(capacity)) + " at error_rate " +
                                    detail::format_repr(error_rate) + " with " + std::to_string(num_hashes) +
                                    " hashes needs " + detail::with_commas(text) + " bits; at most 2**63 - 1");
    }
    const uint64_t num_bits = bits < 1.0 ? 1 : static_cast<uint64_t>(bits);
    return {num_bits, num_hashes, classic_false_positive_rate(static_cast<double>(num_bits), n, num_hashes)};
}

// The fewest blocks of `layout` (with k hashes) meeting `error_rate` at
// `capacity` keys: an exponential then binary search on a monotone rate.
inline uint64_t blocks_needed(Layout layout, uint64_t capacity, double error_rate, uint32_t k) {
    const double n = static_cast<double>(capacity);
    const double block_bits = static_cast<double>(layout_block_bits(layout));
    BlockOccupancy occupancy(k);
    const uint64_t max_blocks = (uint64_t(1) << 62) / layout_block_bits(layout);
    // Fewer blocks than n / kMaxKeysPerBlock never fit (the rate rounds to 1).
    const uint64_t min_blocks =
        static_cast<uint64_t>(std::min(std::ceil(n / kMaxKeysPerBlock), static_cast<double>(max_blocks)));
    auto fits = [&](uint64_t blocks) {
        if (blocks < min_blocks) return false;
        return layout_false_positive_rate(layout, static_cast<double>(blocks) * block_bits, n, k, &occupancy) <=
               error_rate;
    };
    // Start from the classic optimum -n ln p / (ln 2)^2 (a blocked layout
    // never needs fewer bits).
    const double classic_bits = -n * std::log(error_rate) / (detail::kLn2 * detail::kLn2);
    uint64_t high =
        std::max<uint64_t>(std::max<uint64_t>(1, min_blocks),
                           static_cast<uint64_t>(std::min(classic_bits / block_bits, static_cast<double>(max_blocks))));
    while (!fits(high)) {
        if (high >= max_blocks)
            throw std::invalid_argument("capacity " + detail::with_commas(std::to_string(capacity)) +
                                        " at error_rate " + detail::format_repr(error_rate) +
                                        " needs more than 2**62 bits in the " + layout_name(layout) +
                                        " layout; at most 2**62 are supported (a ScalableBloomFilter, or "
                                        "several filters, can hold more keys)");
        high = std::min(max_blocks, high * 2);
    }
    uint64_t low = high / 2;                // does not fit, or 0
    while (low > 0 && fits(low)) low /= 2;  // at most 62 halvings; fits() is false under min_blocks
    while (high - low > 1) {                // invariant: !fits(low) (or low == 0), fits(high)
        const uint64_t middle = low + (high - low) / 2;
        if (fits(middle))
            high = middle;
        else
            low = middle;
    }
    return high;
}

// Sizing for a layout. Classic keeps its historical formula (files and
// tests pin it); blocked layouts are sized with the Poisson model so that
// the predicted rate at capacity is at most the request.
inline BloomSize layout_size(Layout layout, uint64_t capacity, double error_rate) {
    if (layout == Layout::Classic) return classic_size(capacity, error_rate);
    check_sizing_request(capacity, error_rate);
    const double n = static_cast<double>(capacity);
    const uint64_t block_bits = layout_block_bits(layout);
    uint32_t best_k = kSplitBlockHashes;
    uint64_t best_blocks = 0;
    if (layout == Layout::SplitBlock) {
        best_blocks = blocks_needed(layout, capacity, error_rate, kSplitBlockHashes);
    } else {
        // Blocked512's best k sits a little below the classic optimum
        // log2(1/p) (fuller blocks want fewer bits per key): 6 at 1 %, 9 at
        // 0.1 %, 12 at 0.01 %; search just below it.
        // Rates below 2^-64 (center > 64) try k = 64 alone, the most supported.
        const int max_k = static_cast<int>(kMaxHashes);
        const int center = static_cast<int>(std::min(std::ceil(-std::log2(error_rate)), 1100.0));
        for (int k = std::min(std::max(1, center - 3), max_k); k <= std::max(1, std::min(max_k, center)); ++k) {
            const uint64_t blocks = blocks_needed(layout, capacity, error_rate, static_cast<uint32_t>(k));
            if (best_blocks == 0 || blocks < best_blocks) {
                best_blocks = blocks;
                best_k = static_cast<uint32_t>(k);
            }
        }
    }
    const uint64_t num_bits = best_blocks * block_bits;
    return {num_bits, best_k, layout_false_positive_rate(layout, static_cast<double>(num_bits), n, best_k)};
}

// The layout a filter gets when none is named, and its size: the fastest
// layout whose size for this request is at most kDefaultLayoutMemoryBound
// times the classic size. Batch speed ranks split_block, blocked512,
// classic (one cache line per key with 8 SIMD lanes; one line with k scalar
// bits; k lines); memory ranks them the other way round, by how much
// depending on the rate: split_block's 8 bits in 256 cost +9.9 % at 1 %,
// +17.5 % at 0.1 %, +125 % at 1e-6; blocked512 with its own k +3.5 %,
// +8.1 %, +35 % (1e6 keys). So the choice is split_block near 1 %,
// blocked512 from 0.5 down to about 5e-4, classic below that and wherever
// whole blocks cost too much (docs/decisions.md, "Default layout").
constexpr double kDefaultLayoutMemoryBound = 1.10;

struct LayoutChoice {
    Layout layout;
    BloomSize size;
};

namespace detail {
// False when no k lets blocked512 meet `error_rate` in `blocks` blocks,
// judged by the mean-occupancy rate (1 - (1 - 1/512)^(kj))^k, a lower bound
// of the exact E[(X/512)^k] (Jensen: x^k is convex and E[X] = 512 (1 -
// (1 - 1/512)^(kj))). It skips the exact model's dynamic programme at rates
// where blocked512 is far from the bound (+35 % at 1e-6).
inline bool blocked512_might_fit(double capacity, double blocks, double error_rate) {
    // Past kMaxKeysPerBlock keys per block the rate is 1 to within 2^-100
    // (and poisson_expectation's loops are bounded only below it).
    if (!(capacity / blocks <= kMaxKeysPerBlock)) return false;
    const double log_clear = std::log1p(-1.0 / BlockOccupancy::kBits);
    for (uint32_t k = 1; k <= kMaxHashes; ++k) {
        const double rate = poisson_expectation(
            capacity / blocks, [&](double j) { return std::pow(-std::expm1(k * j * log_clear), double(k)); });
        if (rate <= error_rate) return true;
    }
    return false;
}
}  // namespace detail

inline LayoutChoice default_layout_size(uint64_t capacity, double error_rate) {
    const BloomSize classic = classic_size(capacity, error_rate);
    const double bound = kDefaultLayoutMemoryBound * static_cast<double>(classic.num_bits);
    for (Layout layout : {Layout::SplitBlock, Layout::Blocked512}) {
        const double blocks = std::floor(bound / static_cast<double>(layout_block_bits(layout)));
        if (blocks < 1.0) continue;  // not even one whole block
        if (layout == Layout::Blocked512 &&
            !detail::blocked512_might_fit(static_cast<double>(capacity), blocks, error_rate))
            continue;
        BloomSize size{};
        try {
            size = layout_size(layout, capacity, error_rate);
        } catch (const std::invalid_argument&) {
            continue;  // more than the blocked layouts' 2**62 bits; classic goes up to 2**63
        }
        if (static_cast<double>(size.num_bits) <= bound) return {layout, size};
    }
    return {Layout::Classic, classic};
}

inline Layout default_layout(uint64_t capacity, double error_rate) {
    return default_layout_size(capacity, error_rate).layout;
}

// The smallest classic geometry whose predicted rate at `capacity` keys is at
// most `error_rate` with an integer k (the scalable filter's slices need a
// guaranteed bound, which the historical formula misses by rounding k).
// For a fixed k the rate equals p exactly at m = -k n / ln(1 - p^(1/k)); the
// best k is next to log2(1/p); both neighbours are tried and the smaller m
// wins. Blocked layouts already size to "at most".
inline BloomSize layout_size_at_most(Layout layout, uint64_t capacity, double error_rate) {
    if (layout != Layout::Classic) return layout_size(layout, capacity, error_rate);
    check_sizing_request(capacity, error_rate);
    const double n = static_cast<double>(capacity);
    const double best_k = std::log2(1.0 / error_rate);
    if (best_k > kMaxHashes + 0.5)
        throw std::invalid_argument("error_rate " + detail::format_number(error_rate) + " needs about " +
                                    std::to_string(static_cast<int>(best_k)) + " hash functions; at most " +
                                    std::to_string(kMaxHashes) + " are supported");
    double best_bits = 0.0;
    uint32_t chosen_k = 0;
    for (double candidate : {std::floor(best_k), std::ceil(best_k)}) {
        const uint32_t k = static_cast<uint32_t>(std::min<double>(std::max(candidate, 1.0), kMaxHashes));
        const double kd = k;
        const double bits = std::ceil(-kd * n / std::log1p(-std::pow(error_rate, 1.0 / kd)));
        if (chosen_k == 0 || bits < best_bits) {
            best_bits = bits;
            chosen_k = k;
        }
    }
    // Rounding in pow/log can leave the rate a hair (relative ~1e-15) above
    // p: add bits until the prediction is at or below it (a step or two; the
    // step doubles each time, so even near p = 1 this ends within ~45 steps).
    for (double step = 1e-13; classic_false_positive_rate(best_bits, n, chosen_k) > error_rate; step *= 2.0)
        best_bits = std::max(best_bits + 1.0, std::ceil(best_bits * (1.0 + step)));
    if (!(best_bits < 9.2e18))
        throw std::invalid_argument("a slice of " + std::to_string(capacity) + " keys at error_rate " +
                                    detail::format_number(error_rate) + " needs more than 2**63 bits");
    return {static_cast<uint64_t>(best_bits), chosen_k, classic_false_positive_rate(best_bits, n, chosen_k)};
}

// Refuses a blocked-layout geometry of `num_bits` (at least 64 MiB) for
// (capacity, error_rate) that costs more than kMaxLayoutOverhead times the
// classic layout's bits, naming both sizes and the layout to use instead.
// Classic passes as is.
inline void check_layout_overhead(Layout layout, uint64_t capacity, double error_rate, uint64_t num_bits) {
    if (layout == Layout::Classic || num_bits / 8 < kCheckedAllocation) return;
    // The classic formula -n ln p / (ln 2)^2 as a double: neither the classic
    // size limit nor its hash-count limit applies to the comparison.
    const double n = static_cast<double>(capacity);
    const double classic_bits = std::max(1.0, std::ceil(-n * std::log(error_rate) / (detail::kLn2 * detail::kLn2)));
    const double ratio = static_cast<double>(num_bits) / classic_bits;
    if (ratio <= kMaxLayoutOverhead) return;
    auto bytes_of = [](double bits) { return std::ceil(bits / 64.0) * 8.0; };
    auto count = [](double value) {
        char text[48];
        std::snprintf(text, sizeof text, "%.0f", value);
        return detail::with_commas(text);
    };
    throw std::invalid_argument(
        "the " + std::string(layout_name(layout)) + " layout needs " + count(static_cast<double>(num_bits)) +
        " bits (" + count(bytes_of(static_cast<double>(num_bits))) + " bytes) for " +
        detail::with_commas(std::to_string(capacity)) + " keys at error_rate " + detail::format_repr(error_rate) +
        ", " + count(std::floor(ratio)) + " times the classic layout's " + count(classic_bits) + " bits (" +
        count(bytes_of(classic_bits)) + " bytes); at most " + count(kMaxLayoutOverhead) +
        " times is accepted: use layout='classic' (or a larger "
        "error_rate)");
}

// The most keys a classic filter of `num_bits` holds at or below
// `error_rate` with the optimal integer k for each count (0 if not one):
// the count n with fits(n) and not fits(n + 1), found by bracketing the
// estimate m (ln 2)^2 / -ln p and bisecting (the rate grows with n), so at
// most ~130 evaluations for any input (the estimate is off by a factor of
// 10^5 near p = 1, where k = 1 is far from the continuous optimum).
inline uint64_t classic_capacity(uint64_t num_bits, double error_rate) {
    const double m = static_cast<double>(num_bits);
    auto fits = [&](uint64_t items) {
        return classic_false_positive_rate(m, static_cast<double>(items), classic_optimal_hashes(num_bits, items)) <=
               error_rate;
    };
    const uint64_t top = kMaxCapacity - 1;
    const double estimate = std::floor(m * detail::kLn2 * detail::kLn2 / -std::log(error_rate));
    uint64_t low = estimate >= static_cast<double>(top) ? top : std::max<uint64_t>(1, uint64_t(estimate));
    uint64_t high = low;  // invariant below: fits(low) or low == 0; !fits(high) or high == top + 1
    if (fits(low)) {
        high = low;
        while (high <= top && fits(high)) {
            low = high;
            high = high > top / 2 ? top + 1 : high * 2;
        }
    } else {
        while (low > 0 && !fits(low)) {
            high = low;
            low /= 2;
        }
    }
    while (high - low > 1) {
        const uint64_t middle = low + (high - low) / 2;
        if (fits(middle))
            low = middle;
        else
            high = middle;
    }
    return low;
}

// --- sliding windows (window.hpp) -------------------------------------------

// A window of g generations answers "present" when any live generation
// does. With generation i at false-positive rate p_i, and the generations
// holding different keys (an absent key's probes in one generation are
// independent of the others' contents), the window's rate is
//     P = 1 - prod_i (1 - p_i) <= 1 - (1 - p_g)^g   when every p_i <= p_g,
// so each generation is sized for
//     p_g = 1 - (1 - p)^(1/g)   (computed as -expm1(log1p(-p) / g))
// to keep the window at or below p. For small p, p_g ~ p / g: 5 generations
// at 1 % are sized for 0.2008 % each.
// Live generations are counted whole: the newest g hold keys from at most
// g intervals -- the g - 1 the window W spans plus the one in progress
// (kept at least W, forgotten by W + W / (g - 1); window.hpp) -- so each is
// sized for the keys of one interval, n_g = ceil(capacity / (g - 1)) when
// `capacity` keys arrive per window, and all g together hold up to
// g / (g - 1) times `capacity` at the moment before a rotation.
inline double window_generation_error_rate(double error_rate, uint32_t generations) {
    require_open_unit("error_rate", error_rate);
    if (generations == 0) throw std::invalid_argument("generations must be at least 1");
    return -std::expm1(std::log1p(-error_rate) / static_cast<double>(generations));
}

// The window's rate when each of `generations` generations has `generation_rate`:
// 1 - (1 - p_g)^g.
inline double window_error_rate(double generation_rate, uint32_t generations) {
    return -std::expm1(static_cast<double>(generations) * std::log1p(-generation_rate));
}

inline uint64_t window_generation_capacity(uint64_t capacity, uint32_t generations) {
    require_count("capacity", capacity);
    if (generations < 2) throw std::invalid_argument("a window needs at least 2 generations");
    const uint64_t intervals = generations - 1;
    return capacity / intervals + (capacity % intervals != 0);
}

// --- rotating generations (Redis filter families) -------------------------

// A family member (python/bloomkit/redis_family.py) fills one classic
// generation of m bits and k hashes; before a key that could carry it past
// f = rotate_at of its bits set, the generation becomes the previous one and a
// fresh one starts. Lookups OR the two, so
//   * at rotation a generation errs at most f^k (k set bits, each set with
//     probability <= f), and k = ceil(ln(p/2) / ln f) makes that <= p/2: the
//     member errs at most 1 - (1 - p/2)^2 < p;
//   * `capacity` keys should fit in ONE generation, or a member holding just
//     its capacity pays for two. With t = k n probes into m bits, the number
//     of bits left clear has (balls into bins)
//         E = m q1^t,   Var = m q1^t + m (m - 1) q2^t - m^2 q1^(2t),
//     q1 = 1 - 1/m, q2 = 1 - 2/m. m is the fewest 64-bit words with
//         (m - E) + z sqrt(Var) + k <= floor(f m),   z = 4,
//     i.e. n keys stay below the rotation point (which comes k bits early)
//     in all but ~3e-5 of members (one-sided normal tail at 4 sigma). The
//     margin costs +3.3 % bits at n = 1,000, p = 1 %, f = 0.5 (11,968 bits
//     against the expected-fill size 11,584), and shrinks as 1/sqrt(m).
constexpr double kRotatingFitSigmas = 4.0;

inline BloomSize rotating_generation_size(uint64_t capacity, double error_rate, double rotate_at) {
    check_sizing_request(capacity, error_rate);
    if (!(rotate_at > 0.0 && rotate_at < 1.0))
        throw std::invalid_argument("rotate_at must be a fill fraction strictly between 0 and 1, got " +
                                    detail::format_repr(rotate_at));
    const double k_real = std::ceil(std::log(error_rate / 2.0) / std::log(rotate_at));
    if (k_real > kMaxHashes)
        throw std::invalid_argument("error_rate " + detail::format_repr(error_rate) + " at rotate_at " +
                                    detail::format_repr(rotate_at) + " needs " + detail::format_number(k_real) +
                                    " hashes; at most " + std::to_string(kMaxHashes) + " (rotate at a lower fill)");
    const uint32_t k = k_real < 1.0 ? 1u : static_cast<uint32_t>(k_real);
    const double n = static_cast<double>(capacity);
    const double t = static_cast<double>(k) * n;
    auto words_fit = [&](double words) {
        const double m = 64.0 * words;
        const double clear = m * std::exp(t * std::log1p(-1.0 / m));
        const double both_clear = m * (m - 1.0) * std::exp(t * std::log1p(-2.0 / m));
        const double variance = std::max(0.0, clear + both_clear - clear * clear);
        return (m - clear) + kRotatingFitSigmas * std::sqrt(variance) + k <= std::floor(rotate_at * m);
    };
    // The expected-fill size m0 = -k n / ln(1 - f) is a lower bound; the
    // condition is monotone in m: double, then bisect, over 64-bit words.
    const double start = std::ceil(-t / std::log1p(-rotate_at) / 64.0);
    if (!(start < 9.0e15))
        throw std::invalid_argument("capacity " + detail::with_commas(std::to_string(capacity)) +
                                    " needs more than 2**59 bits per generation");
    double low = std::max(1.0, start) - 1.0, high = std::max(1.0, start);
    while (!words_fit(high)) {
        low = high;
        high *= 2.0;
        if (high > 9.0e15)
            throw std::invalid_argument("capacity " + detail::with_commas(std::to_string(capacity)) +
                                        " needs more than 2**59 bits per generation");
    }
    while (high - low > 1.0) {
        const double mid = std::floor((low + high) / 2.0);
        (words_fit(mid) ? high : low) = mid;
    }
    const uint64_t num_bits = static_cast<uint64_t>(high) * 64;
    return {num_bits, k, std::pow(rotate_at, static_cast<double>(k))};
}

// --- cuckoo filter sizing -------------------------------------------------

// The load factor planned for a table of m buckets of b slots is
// L_b - s_b / sqrt(m). L_b sits a little under the highest load the
// 500-kick walk reaches before its first failure in large tables (paper,
// Table 2: ~84 % at b=2, ~95 % at b=4, ~98 % at b=8); the s_b / sqrt(m) term
// covers the wider spread of small tables. Both were fitted to the 0.1 %
// quantile of the first-failure load measured over thousands of seeds per
// (b, m) (docs/cuckoo.md), so `capacity` keys fit on practically every seed.
struct CuckooLoad {
    double load;
    double spread;
};
inline CuckooLoad cuckoo_sizing_load(unsigned bucket_size) {
    static const CuckooLoad table[] = {{0.83, 2.0},  {0.90, 1.5}, {0.93, 1.0}, {0.95, 0.8},
                                       {0.955, 0.8}, {0.96, 0.7}, {0.965, 0.6}};
    if (bucket_size < kCuckooMinBucketSize || bucket_size > kCuckooMaxBucketSize)
        throw std::invalid_argument("bucket_size must be in [2, 8], got " + std::to_string(bucket_size));
    return table[bucket_size - kCuckooMinBucketSize];
}

// Buckets for `capacity` keys: the least m with m b (L - s / sqrt(m)) >= n,
// i.e. with x = sqrt(m): x = (s + sqrt(s^2 + 4 L n / b)) / (2 L), m = ceil(x^2);
// rounded up to even, the even-bucket rule CuckooTable::alternate relies on
// (with even m no fingerprint has a bucket that is its own alternate).
inline uint64_t cuckoo_num_buckets(uint64_t capacity, unsigned bucket_size) {
    const CuckooLoad l = cuckoo_sizing_load(bucket_size);
    const double n = static_cast<double>(capacity);
    const double x = (l.spread + std::sqrt(l.spread * l.spread + 4.0 * l.load * n / bucket_size)) / (2.0 * l.load);
    const double buckets = std::ceil(x * x);
    if (!(buckets < 1.8e19)) throw std::invalid_argument("capacity " + std::to_string(capacity) + " is too large");
    const uint64_t m = static_cast<uint64_t>(buckets);
    return m + (m & 1);
}

// The most keys a table of kCuckooMaxBuckets buckets is sized for: the
// inequality above at m = 2^48, n = m b (L - s / sqrt(m)) (about 1.05e15 at
// b = 4). cuckoo_size() refuses larger capacities.
inline uint64_t cuckoo_max_capacity(unsigned bucket_size) {
    const CuckooLoad l = cuckoo_sizing_load(bucket_size);
    const double m = static_cast<double>(kCuckooMaxBuckets);
    uint64_t n = static_cast<uint64_t>(std::floor(m * bucket_size * (l.load - l.spread / std::sqrt(m))));
    while (n > 1 && cuckoo_num_buckets(n, bucket_size) > kCuckooMaxBuckets) --n;  // rounding: a few keys
    return n;
}

// One stage's bound: an absent key is compared with 2 b alpha stored
// fingerprints; at stage s each matches with probability 1/((2^f - 1) 2^s):
//     1 - (1 - 1/((2^f - 1) 2^s))^(2 b alpha)
inline double cuckoo_stage_false_positive_rate(unsigned fingerprint_bits, unsigned stage, unsigned bucket_size,
                                               double load_factor) {
    if (!(load_factor >= 0.0 && load_factor <= 1.0))
        throw std::invalid_argument("load_factor must be in [0, 1], got " + detail::format_number(load_factor));
    const double match = 1.0 / ((std::exp2(double(fingerprint_bits)) - 1.0) * std::exp2(double(stage)));
    return -std::expm1(2.0 * bucket_size * load_factor * std::log1p(-match));
}

// The bound of a full filter: one stage, or (auto_grow) every stage it can
// ever open (stage s has f + s bits, up to 32), summed.
inline double cuckoo_bound(unsigned fingerprint_bits, unsigned bucket_size, bool auto_grow) {
    if (!auto_grow) return cuckoo_stage_false_positive_rate(fingerprint_bits, 0, bucket_size, 1.0);
    double total = 0.0;
    for (unsigned s = 0; s + fingerprint_bits <= kCuckooMaxFingerprintBits; ++s)
        total += cuckoo_stage_false_positive_rate(fingerprint_bits, s, bucket_size, 1.0);
    return total;
}

struct CuckooSize {
    uint64_t num_buckets;
    unsigned fingerprint_bits;
    uint64_t nbytes;
    double error_rate;  // the bound these parameters guarantee
};

// f = ceil(log2(2 b / p)) (paper, eq. 6), raised while the exact bound still
// exceeds p. fingerprint_bits = 0 means "derive from error_rate"; error_rate
// <= 0 means "none given" (then fingerprint_bits must be given).
inline CuckooSize cuckoo_size(uint64_t capacity, double error_rate, unsigned bucket_size, unsigned fingerprint_bits,
                              bool auto_grow) {
    require_count("capacity", capacity);
    (void)cuckoo_sizing_load(bucket_size);  // validates bucket_size
    const bool has_rate = error_rate > 0.0;
    if (has_rate) require_open_unit("error_rate", error_rate);
    unsigned f = fingerprint_bits;
    if (f != 0) {
        if (f < kCuckooMinFingerprintBits || f > kCuckooMaxFingerprintBits)
            throw std::invalid_argument("fingerprint_bits must be in [4, 32], got " + std::to_string(f));
        if (has_rate) {
            const double bound = cuckoo_bound(f, bucket_size, auto_grow);
            if (bound > error_rate) {
                const unsigned needed = cuckoo_size(capacity, error_rate, bucket_size, 0, auto_grow).fingerprint_bits;
                char text[64];
                std::snprintf(text, sizeof text, "%.3g", bound);
                throw std::invalid_argument(
                    "fingerprint_bits=" + std::to_string(f) + " bounds the false-positive rate by " + text +
                    ", above error_rate=" + detail::format_repr(error_rate) + "; use at least " +
                    std::to_string(needed) + " bits or omit one of the two");
            }
        }
    } else {
        if (!has_rate) throw std::invalid_argument("cuckoo sizing needs error_rate or fingerprint_bits");
        // log2(2b) - log2(p), not log2(2b / p): 2b / p overflows to inf for
        // subnormal p (error_rate=1e-320), and such rates need > 32 bits anyway.
        const double bits = std::ceil(std::log2(2.0 * bucket_size) - std::log2(error_rate));
        f = bits > 64.0 ? 64u : std::max<unsigned>(kCuckooMinFingerprintBits, static_cast<unsigned>(bits));
        while (f <= kCuckooMaxFingerprintBits && cuckoo_bound(f, bucket_size, auto_grow) > error_rate) ++f;
        if (f > kCuckooMaxFingerprintBits) {
            char text[64];
            std::snprintf(text, sizeof text, "%.3g", cuckoo_bound(kCuckooMaxFingerprintBits, bucket_size, auto_grow));
            throw std::invalid_argument(
                "error_rate=" + detail::format_repr(error_rate) +
                " needs fingerprints wider than 32 bits with bucket_size=" + std::to_string(bucket_size) +
                (auto_grow ? " and auto_grow" : "") + "; the lowest supported rate is " + text);
        }
    }
    const uint64_t num_buckets = cuckoo_num_buckets(capacity, bucket_size);
    if (num_buckets > kCuckooMaxBuckets)
        throw std::invalid_argument("capacity " + std::to_string(capacity) + " needs " + std::to_string(num_buckets) +
                                    " buckets; at most 2**48 are supported");
    const uint64_t bits = num_buckets * bucket_size * f;  // < 2^48 * 8 * 32 = 2^56
    return {num_buckets, f, (bits + 7) / 8, cuckoo_bound(f, bucket_size, auto_grow)};
}

// --- binary fuse filter sizing ----------------------------------------------

// Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters"
// (ACM JEA 27, 2022), 3-wise. The array of c cells is cut into segments of
// L cells (a power of two); a key's three cells lie in three consecutive
// segments, so c = (S + 2) L for S start segments. With n keys:
//     L = 2^floor(log_3.33(n) + 2.25), at most 2^18   (paper, section 5)
//     c >= n * max(1.125, 0.875 + 0.25 ln(10^6) / ln(n))
// Small sets need the larger factor for the peeling to succeed with a
// useful probability; from ~3e5 keys on the factor is 1.125, so an 8-bit
// filter takes ~9.0 bits per key. Keys are limited to 2^31 so every cell
// index fits the 32-bit peeling queue (c < 1.125 * 2^31 + 3 * 2^18 < 2^32).
constexpr uint64_t kBinaryFuseMaxKeys = uint64_t(1) << 31;
constexpr uint32_t kBinaryFuseMaxSegmentLength = uint32_t(1) << 18;
constexpr uint32_t kBinaryFuseMinSegmentLength = 4;

struct BinaryFuseShape {
    uint32_t segment_length;
    uint32_t segment_count;  // start segments S; the array has S + 2 segments
    uint64_t array_length() const { return (uint64_t(segment_count) + 2) * segment_length; }
    bool operator==(const BinaryFuseShape& o) const {
        return segment_length == o.segment_length && segment_count == o.segment_count;
    }
};

inline void require_binary_fuse_keys(uint64_t num_keys) {
    if (num_keys > kBinaryFuseMaxKeys)
        throw std::invalid_argument("a binary fuse filter holds at most 2**31 distinct keys, got " +
                                    std::to_string(num_keys));
}

inline BinaryFuseShape binary_fuse_shape(uint64_t num_keys) {
    require_binary_fuse_keys(num_keys);
    const double n = static_cast<double>(num_keys);
    uint32_t length = kBinaryFuseMinSegmentLength;
    if (num_keys > 1) {
        const double exponent = std::floor(std::log(n) / std::log(3.33) + 2.25);
        length = exponent >= 18.0 ? kBinaryFuseMaxSegmentLength : uint32_t(1) << static_cast<int>(exponent);
    }
    const double factor = num_keys <= 1 ? 0.0 : std::max(1.125, 0.875 + 0.25 * std::log(1e6) / std::log(n));
    const uint64_t cells = static_cast<uint64_t>(std::llround(n * factor));
    const uint64_t segments = (cells + length - 1) / length;  // covering the cells
    const uint64_t start_segments = segments <= 2 ? 1 : segments - 2;
    return {length, static_cast<uint32_t>(start_segments)};
}

// Fingerprint widths: an absent key matches with probability 2^-f
// (8 bits: 0.39 %, 16 bits: 0.0015 %).
inline bool valid_binary_fuse_bits(uint32_t bits) { return bits == 8 || bits == 16; }
inline double binary_fuse_false_positive_rate(uint32_t bits) { return std::exp2(-double(bits)); }

}  // namespace bloomkit
