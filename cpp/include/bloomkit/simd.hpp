// Kernels for split_block's in-block work, compiled for AVX2 and chosen at
// run time. (blocked512 probes one bit at a time, which needs no vector
// code and no POPCNT: layouts.hpp.)
//
// A split_block key sets one bit in each of its 256-bit block's eight 32-bit
// lanes, lane i's bit being (g * salt_i mod 2^32) >> 27 (layouts.hpp). That
// is one AVX2 instruction per step for all eight lanes: a 32-bit multiply
// (vpmulld), a shift right by 27 (vpsrld) and a variable shift of 1 left
// (vpsllvd) make the block's mask; a lookup is one vptest of the block
// against it, an insert one OR and a store. The scalar code does eight
// multiplies, shifts and ORs of each.
//
// Dispatch. The extension is built for baseline x86-64 (no -mavx2), so a
// wheel runs on every x86-64 CPU: the kernels, and the batch loops that
// inline them (batch_probe.hpp), alone are compiled for AVX2
// (__attribute__((target("avx2,popcnt")))) and only run when
// active_level() says so; a single-key call reads the level once per key,
// a batch once per chunk. The level starts as the best the CPU supports
// (__builtin_cpu_supports, which also checks that the OS saves the YMM
// registers) and can be lowered with set_level() — the Python module does
// that from the BLOOMKIT_SIMD environment variable at import, so tests can
// run the portable path on the same machine. Both paths give bit-identical
// filters (tests/cpp/test_simd.cpp, tests/test_simd.py).
//
// Only GCC/Clang on x86-64 get the kernels; other compilers and
// architectures, and BLOOMKIT_PORTABLE builds (no builtins at all), have
// the scalar path only and report Level::Portable.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "platform.hpp"

#if defined(BLOOMKIT_GNU) && defined(__x86_64__)
#define BLOOMKIT_HAVE_AVX2_KERNELS 1
#include <immintrin.h>
#endif

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
// What Level::Avx2 may use: a whole loop compiled with this attribute runs
// only when active_level() says so.
#define BLOOMKIT_TARGET_AVX2 __attribute__((target("avx2,popcnt")))
#endif

namespace bloomkit {
namespace simd {

enum class Level : uint8_t { Portable = 0, Avx2 = 1 };

inline const char* level_name(Level level) { return level == Level::Avx2 ? "avx2" : "portable"; }

// The best level this CPU (and this build) can run.
inline Level supported_level() {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    // __builtin_cpu_init: the check may run before libgcc's own constructor
    // (a static initialiser of a shared library).
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) return Level::Avx2;
#endif
    return Level::Portable;
}

// The active level. Atomic so that set_level() never races with a filter
// being used on another thread; a relaxed load is a plain load on x86-64,
// and either level gives the same bits, so a thread seeing the old one for a
// while is fine. An inline variable, not a function-local static, so that
// reading it needs no initialisation guard: a use during another
// translation unit's static initialisation sees the zero-initialised value,
// Level::Portable, which is always safe.
inline std::atomic<uint8_t> active_level_slot{static_cast<uint8_t>(supported_level())};

inline Level active_level() { return static_cast<Level>(active_level_slot.load(std::memory_order_relaxed)); }

// Selects the kernels used from now on; refuses a level the CPU lacks.
inline void set_level(Level level) {
    if (level > supported_level())
        throw std::invalid_argument(std::string("SIMD level '") + level_name(level) +
                                    "' is not supported by this CPU or build (best: '" + level_name(supported_level()) +
                                    "')");
    active_level_slot.store(static_cast<uint8_t>(level), std::memory_order_relaxed);
}

inline Level level_from_name(const std::string& name) {
    if (name == "portable") return Level::Portable;
    if (name == "avx2") return Level::Avx2;
    if (name == "auto" || name.empty()) return supported_level();
    throw std::invalid_argument("unknown SIMD level '" + name + "': expected 'auto', 'avx2' or 'portable'");
}

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)

// The eight lane masks of a split_block key, 1 << ((g * salt_i) >> 27);
// `salts` are SplitBlockLayout::kSalts (passed in so there is one copy).
__attribute__((target("avx2"))) inline __m256i split_block_mask_avx2(uint32_t g, const uint32_t* salts) {
    const __m256i salt = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(salts));
    const __m256i product = _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(g)), salt);
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(product, 27));
}

// True when every bit of the key's mask is set in the 32-byte block.
__attribute__((target("avx2"))) inline bool split_block_contains_avx2(const uint64_t* block, uint32_t g,
                                                                      const uint32_t* salts) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
    // vptest's carry flag: (~bits & mask) == 0.
    return _mm256_testc_si256(bits, split_block_mask_avx2(g, salts)) != 0;
}

// ORs the key's mask into the block (memory this process alone writes);
// returns how many of its eight bits were clear.
__attribute__((target("avx2,popcnt"))) inline uint32_t split_block_add_avx2(uint64_t* block, uint32_t g,
                                                                            const uint32_t* salts) {
    auto* address = reinterpret_cast<__m256i*>(block);
    const __m256i old = _mm256_loadu_si256(address);
    const __m256i mask = split_block_mask_avx2(g, salts);
    _mm256_storeu_si256(address, _mm256_or_si256(old, mask));
    // A lane's bit was new when mask & ~old is non-zero there: count the
    // lanes where it is zero (one sign bit per lane via movmskps).
    const __m256i fresh = _mm256_andnot_si256(old, mask);
    const int already = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(fresh, _mm256_setzero_si256())));
    return 8u - static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(already)));
}

#endif

}  // namespace simd
}  // namespace bloomkit
