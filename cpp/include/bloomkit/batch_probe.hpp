// The probe loops of a batch on a blocked layout (blocked512, split_block):
// one chunk of digests in, each key's bits set or tested, in key order.
//
// Per key the work is small next to its bookkeeping, so the loop is shaped
// for it (benchmarks/batch_compute.cpp, results/2026-11-24-batch-compute-3d01bd7-epyc2.md):
//   * the SIMD level is read once per call, not once per key, and the whole
//     loop is compiled for it: at Level::Avx2 one function with
//     BLOOMKIT_TARGET_AVX2 holds the loop with the kernel inlined (a call
//     from baseline code into an AVX2 function cannot be inlined);
//   * each key's block (first word) and probe seed (fmix64(h2)) are
//     computed once, in a pass over the chunk right after hashing, instead
//     of once for the prefetch and again for the probe;
//   * whether results are wanted is a template argument, not a branch.
// The blocks are prefetched kBlockPrefetchDistance keys ahead.
// The results and the bits set are exactly the per-key add()/contains()'s.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hash.hpp"
#include "keys.hpp"
#include "layouts.hpp"
#include "platform.hpp"
#include "prefetch.hpp"
#include "simd.hpp"

namespace bloomkit {
namespace batch_probe {

// How many keys ahead the probe loop prefetches. Twice the distance of the
// other batch loops (prefetch.hpp): a key's probe costs half of what it did
// before the loop was reshaped, so 16 keys no longer cover a miss; 32 was
// 3-6 % faster than 16 at 1e7 and 1e8 keys, 64 no better
// (results/2026-11-24-batch-compute-3d01bd7-epyc2.md).
constexpr size_t kBlockPrefetchDistance = 2 * kPrefetchDistance;

// Where each key of (at most kHashChunk) digests is: its block's first word
// and its probe seed.
struct BlockPlan {
    uint64_t word[kHashChunk];
    uint64_t seed[kHashChunk];

    template <class LayoutT>
    BLOOMKIT_ALWAYS_INLINE void fill(const LayoutT& layout, const Hash128* digests, size_t count) {
        for (size_t j = 0; j < count; ++j) {
            word[j] = layout.first_word(digests[j]);
            seed[j] = LayoutT::probe_seed(digests[j]);
        }
    }
    uint64_t word_of(size_t j) const { return word[j]; }
    uint64_t seed_of(size_t j) const { return seed[j]; }
};

// A split_block key's probe in 8 bytes: its block and the low 32 bits of
// its probe seed, which are all that the lanes read (SplitBlockLayout).
// The two-thread insert hands these from the thread that hashed a key to
// the thread that owns its block (parallel.hpp): half the bytes of a
// digest, which took that insert from 8.4 to 7.3 ns/key at 1e7 keys
// (docs/decisions.md, "Batches on two cores"). For a filter of at most
// kMaxCompactBlocks blocks (128 GiB).
struct CompactProbe {
    uint32_t block;
    uint32_t seed;

    static constexpr uint64_t kMaxCompactBlocks = uint64_t(1) << 32;
    BLOOMKIT_ALWAYS_INLINE static CompactProbe of(const SplitBlockLayout& layout, Hash128 h) {
        return {static_cast<uint32_t>(fast_range64(h.h1, layout.num_blocks)),
                static_cast<uint32_t>(SplitBlockLayout::probe_seed(h))};
    }
};

// A run of CompactProbes seen as a BlockPlan.
struct CompactPlan {
    const CompactProbe* probes;
    uint64_t word_of(size_t j) const { return uint64_t(probes[j].block) * SplitBlockLayout::kBlockWords; }
    uint64_t seed_of(size_t j) const { return probes[j].seed; }
};

// Runs probe(block, seed, j) for every key of the chunk, in order, after
// prefetching the block of key j + kBlockPrefetchDistance (two loops, so the
// prefetch needs no bounds check). `probe` is a function object, not a
// lambda: a lambda's body is a function of its own without the caller's
// target attribute, so the AVX2 kernel inside it might not be inlined.
template <class Words, class Plan, class Probe>
BLOOMKIT_ALWAYS_INLINE void probe_prefetched(Words* words, const Plan& plan, size_t count, Probe& probe) {
    constexpr size_t D = kBlockPrefetchDistance;
    const size_t lead = std::min(count, D);
    for (size_t j = 0; j < lead; ++j) platform::prefetch_read(words + plan.word_of(j));
    size_t j = 0;
    for (; j + D < count; ++j) {
        platform::prefetch_read(words + plan.word_of(j + D));
        probe(words + plan.word_of(j), plan.seed_of(j), j);
    }
    for (; j < count; ++j) probe(words + plan.word_of(j), plan.seed_of(j), j);
}

template <simd::Level L, class Or, bool Report, class LayoutT>
struct AddProbe {
    const LayoutT& layout;
    uint8_t* was_present;
    uint64_t newly_set;
    BLOOMKIT_ALWAYS_INLINE void operator()(uint64_t* block, uint64_t seed, size_t j) {
        const uint32_t added = layout.template add_block<Or, L>(block, seed);
        newly_set += added;
        if (Report) was_present[j] = added == 0;
    }
};

template <simd::Level L, class LayoutT>
struct ContainsProbe {
    const LayoutT& layout;
    uint8_t* present;
    BLOOMKIT_ALWAYS_INLINE void operator()(const uint64_t* block, uint64_t seed, size_t j) {
        present[j] = layout.template contains_block<L>(block, seed);
    }
};

template <simd::Level L, class Or, bool Report, class LayoutT>
BLOOMKIT_ALWAYS_INLINE uint64_t add_loop(const LayoutT& layout, uint64_t* words, const Hash128* digests, size_t count,
                                         uint8_t* was_present) {
    BlockPlan plan;
    AddProbe<L, Or, Report, LayoutT> probe{layout, nullptr, 0};
    for (size_t first = 0; first < count; first += kHashChunk) {
        const size_t n = std::min(kHashChunk, count - first);
        plan.fill(layout, digests + first, n);
        if (Report) probe.was_present = was_present + first;
        probe_prefetched(words, plan, n, probe);
    }
    return probe.newly_set;
}

template <simd::Level L, class Or, bool Report>
BLOOMKIT_ALWAYS_INLINE uint64_t add_compact_loop(const SplitBlockLayout& layout, uint64_t* words,
                                                 const CompactProbe* probes, size_t count, uint8_t* was_present) {
    AddProbe<L, Or, Report, SplitBlockLayout> probe{layout, was_present, 0};
    probe_prefetched(words, CompactPlan{probes}, count, probe);
    return probe.newly_set;
}

template <simd::Level L, class LayoutT>
BLOOMKIT_ALWAYS_INLINE void contains_loop(const LayoutT& layout, const uint64_t* words, const Hash128* digests,
                                          size_t count, uint8_t* present) {
    BlockPlan plan;
    ContainsProbe<L, LayoutT> probe{layout, nullptr};
    for (size_t first = 0; first < count; first += kHashChunk) {
        const size_t n = std::min(kHashChunk, count - first);
        plan.fill(layout, digests + first, n);
        probe.present = present + first;
        probe_prefetched(words, plan, n, probe);
    }
}

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
template <class Or, bool Report, class LayoutT>
BLOOMKIT_TARGET_AVX2 uint64_t add_loop_avx2(const LayoutT& layout, uint64_t* words, const Hash128* digests,
                                            size_t count, uint8_t* was_present) {
    return add_loop<simd::Level::Avx2, Or, Report>(layout, words, digests, count, was_present);
}
template <class Or, bool Report>
BLOOMKIT_TARGET_AVX2 uint64_t add_compact_loop_avx2(const SplitBlockLayout& layout, uint64_t* words,
                                                    const CompactProbe* probes, size_t count, uint8_t* was_present) {
    return add_compact_loop<simd::Level::Avx2, Or, Report>(layout, words, probes, count, was_present);
}
template <class LayoutT>
BLOOMKIT_TARGET_AVX2 void contains_loop_avx2(const LayoutT& layout, const uint64_t* words, const Hash128* digests,
                                             size_t count, uint8_t* present) {
    contains_loop<simd::Level::Avx2>(layout, words, digests, count, present);
}
#endif

template <class Or, bool Report, class LayoutT>
uint64_t add_at_level(const LayoutT& layout, uint64_t* words, const Hash128* digests, size_t count,
                      uint8_t* was_present) {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    if (simd::active_level() == simd::Level::Avx2)
        return add_loop_avx2<Or, Report>(layout, words, digests, count, was_present);
#endif
    return add_loop<simd::Level::Portable, Or, Report>(layout, words, digests, count, was_present);
}

// Sets the bits of `count` keys in order; writes was_present[j] (key j's
// bits were all set before) unless was_present is null. Returns how many
// bits were newly set.
template <class Or, class LayoutT>
uint64_t add(const LayoutT& layout, uint64_t* words, const Hash128* digests, size_t count, uint8_t* was_present) {
    return was_present ? add_at_level<Or, true>(layout, words, digests, count, was_present)
                       : add_at_level<Or, false>(layout, words, digests, count, nullptr);
}

template <class Or, bool Report>
uint64_t add_compact_at_level(const SplitBlockLayout& layout, uint64_t* words, const CompactProbe* probes, size_t count,
                              uint8_t* was_present) {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    if (simd::active_level() == simd::Level::Avx2)
        return add_compact_loop_avx2<Or, Report>(layout, words, probes, count, was_present);
#endif
    return add_compact_loop<simd::Level::Portable, Or, Report>(layout, words, probes, count, was_present);
}

// add() for keys given as CompactProbes.
template <class Or>
uint64_t add_compact(const SplitBlockLayout& layout, uint64_t* words, const CompactProbe* probes, size_t count,
                     uint8_t* was_present) {
    return was_present ? add_compact_at_level<Or, true>(layout, words, probes, count, was_present)
                       : add_compact_at_level<Or, false>(layout, words, probes, count, nullptr);
}

// present[j] = whether all of key j's bits are set.
template <class LayoutT>
void contains(const LayoutT& layout, const uint64_t* words, const Hash128* digests, size_t count, uint8_t* present) {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    if (simd::active_level() == simd::Level::Avx2) return contains_loop_avx2(layout, words, digests, count, present);
#endif
    contains_loop<simd::Level::Portable>(layout, words, digests, count, present);
}

}  // namespace batch_probe
}  // namespace bloomkit
