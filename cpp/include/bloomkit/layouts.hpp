// Bloom filter layouts: where a key's k bits are, given its digest (h1, h2).
//
// A layout is one small struct built from (num_bits, num_hashes) with
//     for_each_position(h, f)   f(bit index) for each of the key's k bits
//     add<Or>(words, h)         sets them; returns how many were clear
//     contains(words, h)        true when all are set
//     prefetch(words, h)        hints every line the key touches
//     prefetch_first(words, h)  hints the line a lookup reads first
// and the blocked layouts also
//     first_word(h), probe_seed(h)          where the key's block is, and
//                                           what its in-block bits come from
//     add_block<Or, Level>(block, seed)     add / contains on the block,
//     contains_block<Level>(block, seed)    for the batch loops
//                                           (batch_probe.hpp), which
//                                           compute the two once per key
// Bit i of a filter is bit i mod 64 of word i div 64 (docs/FORMAT.md); the
// sizing of each layout is in sizing.hpp. Plain, counting (classic only) and
// scalable filters all reach their bits through these structs.
//
// `add` writes every word through an Or policy: PlainOr for memory only this
// process writes, AtomicOr for a file mapped writable by several processes
// (mapped_file.hpp). Either way the count of newly set bits comes from the
// word *before* the OR, so test-and-set stays exact under concurrency.
//
// * classic: k positions anywhere in m bits by enhanced double hashing
//   (hash.hpp, IndexSequence). k cache misses per key on a large filter.
// * blocked512: one 512-bit block (a 64-byte cache line) per key, chosen by
//   multiply-shift range reduction of h1 (as RocksDB's FastLocalBloom); k
//   positions inside the block from consecutive 9-bit chunks of
//   g = fmix64(h2), re-mixed every seven probes (BlockProbes): shifts and
//   masks, no multiply per probe. Any k; one cache miss per key.
// * split_block: one 256-bit block per key (the Parquet specification's
//   split block Bloom filter): block chosen from h1 as above, then one bit
//   in each of the block's eight 32-bit lanes, lane i's bit being
//   ((g mod 2^32) * salt_i mod 2^32) >> 27 for eight odd salts. k is 8.
//   With AVX2 (chosen at run time, simd.hpp) the eight lanes are computed,
//   tested and set at once.
//
// The block index uses h1 only and the in-block bits use h2 only, so the two
// never reuse hash bits; nothing is reduced with a modulo.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "hash.hpp"
#include "platform.hpp"
#include "simd.hpp"

namespace bloomkit {

enum class Layout : uint32_t {
    Classic = 0,
    Blocked512 = 1,
    SplitBlock = 2,
};
constexpr uint32_t kNumLayouts = 3;

inline const char* layout_name(Layout layout) {
    switch (layout) {
        case Layout::Classic: return "classic";
        case Layout::Blocked512: return "blocked512";
        case Layout::SplitBlock: return "split_block";
    }
    return "unknown";
}

inline Layout layout_from_name(const std::string& name) {
    for (uint32_t i = 0; i < kNumLayouts; ++i)
        if (name == layout_name(static_cast<Layout>(i))) return static_cast<Layout>(i);
    throw std::invalid_argument("unknown layout '" + name + "': expected 'classic', 'blocked512' or 'split_block'");
}

inline bool valid_layout_code(uint64_t code) { return code < kNumLayouts; }

// Bits per block (num_bits must be a multiple of it) and whether k is fixed.
inline uint64_t layout_block_bits(Layout layout) {
    switch (layout) {
        case Layout::Classic: return 1;
        case Layout::Blocked512: return 512;
        case Layout::SplitBlock: return 256;
    }
    return 1;
}

constexpr uint32_t kSplitBlockHashes = 8;

// word |= mask, returning the word before: plain, or one atomic RMW.
struct PlainOr {
    static uint64_t fetch_or(uint64_t& word, uint64_t mask) {
        const uint64_t old = word;
        word |= mask;
        return old;
    }
};
struct AtomicOr {
    static uint64_t fetch_or(uint64_t& word, uint64_t mask) { return platform::atomic_fetch_or64(&word, mask); }
};

struct ClassicLayout {
    static constexpr Layout id = Layout::Classic;
    uint64_t num_bits;
    uint32_t num_hashes;

    template <class F>
    void for_each_position(Hash128 h, F&& f) const {
        IndexSequence seq(h, num_bits);
        for (uint32_t i = 0; i < num_hashes; ++i) f(seq.next());
    }

    template <class Or = PlainOr>
    uint32_t add(uint64_t* words, Hash128 h) const {
        // Branch-free: whether a bit was already set is a coin flip while
        // the filter fills, so a branch would mispredict about once per key.
        uint32_t newly_set = 0;
        for_each_position(h, [&](uint64_t bit) {
            const uint64_t mask = uint64_t(1) << (bit & 63);
            newly_set += (Or::fetch_or(words[bit >> 6], mask) & mask) == 0;
        });
        return newly_set;
    }

    bool contains(const uint64_t* words, Hash128 h) const {
        IndexSequence seq(h, num_bits);
        for (uint32_t i = 0; i < num_hashes; ++i) {
            const uint64_t bit = seq.next();
            if (!((words[bit >> 6] >> (bit & 63)) & 1u)) return false;
        }
        return true;
    }

    void prefetch(const uint64_t* words, Hash128 h) const {
        for_each_position(h, [&](uint64_t bit) { platform::prefetch_read(words + (bit >> 6)); });
    }

    void prefetch_first(const uint64_t* words, Hash128 h) const {
        platform::prefetch_read(words + (IndexSequence(h, num_bits).next() >> 6));
    }
};

// The in-block bit offsets (0..511) of a blocked512 key: consecutive 9-bit
// chunks of g = fmix64(h2), low bits first, seven per 64-bit value; after
// seven, g = fmix64(g + C) supplies the next seven (only when k > 7).
class BlockProbes {
  public:
    static constexpr uint64_t kRemix = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio
    // `g` is the key's probe seed, fmix64(h2) (Blocked512Layout::probe_seed).
    explicit BlockProbes(uint64_t g) : g_(g), word_(g) {}
    uint32_t next() {
        if (left_ == 0) {
            g_ = detail::fmix64(g_ + kRemix);
            word_ = g_;
            left_ = 7;
        }
        const uint32_t bit = static_cast<uint32_t>(word_ & 511);
        word_ >>= 9;
        --left_;
        return bit;
    }

  private:
    uint64_t g_;
    uint64_t word_;
    uint32_t left_ = 7;
};

struct Blocked512Layout {
    static constexpr Layout id = Layout::Blocked512;
    uint64_t num_blocks;
    uint32_t num_hashes;

    Blocked512Layout(uint64_t num_bits, uint32_t k) : num_blocks(num_bits / 512), num_hashes(k) {}

    uint64_t first_word(Hash128 h) const { return fast_range64(h.h1, num_blocks) * 8; }

    // What the in-block probes are derived from (BlockProbes). A batch
    // computes it and first_word once per key (batch_probe.hpp).
    static uint64_t probe_seed(Hash128 h) { return detail::fmix64(h.h2); }

    // The key's bits as eight 64-bit masks, one per word of its block.
    void masks(Hash128 h, uint64_t out[8]) const {
        for (int w = 0; w < 8; ++w) out[w] = 0;
        BlockProbes probes(probe_seed(h));
        for (uint32_t i = 0; i < num_hashes; ++i) {
            const uint32_t bit = probes.next();
            out[bit >> 6] |= uint64_t(1) << (bit & 63);
        }
    }

    template <class F>
    void for_each_position(Hash128 h, F&& f) const {
        const uint64_t base = first_word(h) * 64;
        BlockProbes probes(probe_seed(h));
        for (uint32_t i = 0; i < num_hashes; ++i) f(base + probes.next());
    }

    template <class Or = PlainOr>
    uint32_t add(uint64_t* words, Hash128 h) const {
        return add_block<Or, simd::Level::Portable>(words + first_word(h), probe_seed(h));
    }

    bool contains(const uint64_t* words, Hash128 h) const {
        return contains_block<simd::Level::Portable>(words + first_word(h), probe_seed(h));
    }

    // The key with probe seed g against its block, one probe at a time:
    // no masks are built. An insert ORs each bit into its word and counts
    // it when it was clear in the word before the OR; a bit hit twice by
    // one key counts once (the second OR finds it set), so the count is
    // the number of distinct positions that were clear, as with masks and
    // a popcount, in fewer instructions (k probes instead of eight words of
    // masks, ORs and popcounts: results/2026-11-24-batch-compute-3d01bd7-epyc2.md). A
    // shared mapping pays k atomic ORs instead of eight. A lookup ANDs the k bits
    // without branching (a miss is a coin flip while the filter fills).
    // The same code at every level (the batch loops pass theirs so that
    // every layout has one interface).
    template <class Or, simd::Level>
    BLOOMKIT_ALWAYS_INLINE uint32_t add_block(uint64_t* block, uint64_t g) const {
        uint32_t newly_set = 0;
        BlockProbes probes(g);
        for (uint32_t i = 0; i < num_hashes; ++i) {
            const uint32_t bit = probes.next();
            const uint64_t mask = uint64_t(1) << (bit & 63);
            newly_set += (Or::fetch_or(block[bit >> 6], mask) & mask) == 0;
        }
        return newly_set;
    }

    template <simd::Level>
    BLOOMKIT_ALWAYS_INLINE bool contains_block(const uint64_t* block, uint64_t g) const {
        uint64_t all = 1;
        BlockProbes probes(g);
        for (uint32_t i = 0; i < num_hashes; ++i) {
            const uint32_t bit = probes.next();
            all &= block[bit >> 6] >> (bit & 63);
        }
        return (all & 1) != 0;
    }

    void prefetch(const uint64_t* words, Hash128 h) const { platform::prefetch_read(words + first_word(h)); }
    void prefetch_first(const uint64_t* words, Hash128 h) const { prefetch(words, h); }
};

struct SplitBlockLayout {
    static constexpr Layout id = Layout::SplitBlock;
    // The eight odd salts of the Parquet split block Bloom filter spec.
    static constexpr uint32_t kSalts[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                           0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};
    uint64_t num_blocks;

    static constexpr uint64_t kBlockWords = 4;  // 256 bits

    SplitBlockLayout(uint64_t num_bits, uint32_t /*k, always 8*/) : num_blocks(num_bits / 256) {}

    uint64_t first_word(Hash128 h) const { return fast_range64(h.h1, num_blocks) * kBlockWords; }

    static uint32_t lane_bit(uint32_t g, int lane) { return (g * kSalts[lane]) >> 27; }

    // What the lanes' bits come from: the low 32 bits of fmix64(h2). A
    // batch computes it and first_word once per key (batch_probe.hpp).
    static uint64_t probe_seed(Hash128 h) { return detail::fmix64(h.h2); }
    static uint32_t lane_seed(Hash128 h) { return static_cast<uint32_t>(probe_seed(h)); }

    // The key's bits as four 64-bit masks: word w holds lanes 2w (low half)
    // and 2w + 1 (high half).
    BLOOMKIT_ALWAYS_INLINE static void masks_of_seed(uint32_t g, uint64_t out[4]) {
        for (int w = 0; w < 4; ++w)
            out[w] = (uint64_t(1) << lane_bit(g, 2 * w)) | (uint64_t(1) << (32 + lane_bit(g, 2 * w + 1)));
    }

    template <class F>
    void for_each_position(Hash128 h, F&& f) const {
        const uint64_t base = first_word(h) * 64;
        const uint32_t g = lane_seed(h);
        for (int lane = 0; lane < 8; ++lane) f(base + 32 * lane + lane_bit(g, lane));
    }

    // add and contains run the AVX2 kernel when it is active (simd.hpp);
    // it reads the block's words as eight little-endian 32-bit lanes, which
    // is the layout above on every x86-64. A shared mapping's atomic ORs
    // stay scalar: there is no atomic 256-bit OR.
    template <class Or = PlainOr>
    uint32_t add(uint64_t* words, Hash128 h) const {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2)
            return add_block<Or, simd::Level::Avx2>(words + first_word(h), probe_seed(h));
#endif
        return add_block<Or, simd::Level::Portable>(words + first_word(h), probe_seed(h));
    }

    bool contains(const uint64_t* words, Hash128 h) const {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2)
            return contains_block<simd::Level::Avx2>(words + first_word(h), probe_seed(h));
#endif
        return contains_block<simd::Level::Portable>(words + first_word(h), probe_seed(h));
    }

    // The key with probe seed g against its block, with the AVX2 kernel at
    // Level::Avx2 (which must then be active).
    template <class Or, simd::Level L>
    BLOOMKIT_ALWAYS_INLINE static uint32_t add_block(uint64_t* block, uint64_t g) {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if constexpr (L == simd::Level::Avx2 && std::is_same<Or, PlainOr>::value)
            return simd::split_block_add_avx2(block, static_cast<uint32_t>(g), kSalts);
#endif
        uint64_t m[4];
        masks_of_seed(static_cast<uint32_t>(g), m);
        // Each 32-bit lane of a mask holds exactly one bit, so the newly set
        // bits are the non-zero lanes of m & ~old: two compares per word
        // instead of a popcount (a ~15-instruction SWAR sequence on baseline
        // x86-64, which has no POPCNT).
        uint32_t newly_set = 0;
        for (int w = 0; w < 4; ++w) {
            const uint64_t fresh = m[w] & ~Or::fetch_or(block[w], m[w]);
            newly_set += static_cast<uint32_t>((fresh & 0xFFFFFFFFu) != 0) + static_cast<uint32_t>((fresh >> 32) != 0);
        }
        return newly_set;
    }

    template <simd::Level L>
    BLOOMKIT_ALWAYS_INLINE static bool contains_block(const uint64_t* block, uint64_t g) {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if constexpr (L == simd::Level::Avx2)
            return simd::split_block_contains_avx2(block, static_cast<uint32_t>(g), kSalts);
#endif
        uint64_t m[4];
        masks_of_seed(static_cast<uint32_t>(g), m);
        uint64_t missing = 0;
        for (int w = 0; w < 4; ++w) missing |= m[w] & ~block[w];
        return missing == 0;
    }

    void prefetch(const uint64_t* words, Hash128 h) const { platform::prefetch_read(words + first_word(h)); }
    void prefetch_first(const uint64_t* words, Hash128 h) const { prefetch(words, h); }
};

// Calls f(layout struct) for the filter's layout, so a batch loop is
// compiled once per layout and never branches on it per key.
template <class F>
decltype(auto) with_layout(Layout layout, uint64_t num_bits, uint32_t num_hashes, F&& f) {
    switch (layout) {
        case Layout::Blocked512: return f(Blocked512Layout(num_bits, num_hashes));
        case Layout::SplitBlock: return f(SplitBlockLayout(num_bits, num_hashes));
        case Layout::Classic: break;
    }
    return f(ClassicLayout{num_bits, num_hashes});
}

}  // namespace bloomkit
