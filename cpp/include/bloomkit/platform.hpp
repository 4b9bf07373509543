// Compiler-specific primitives, in one place: 64x64 -> 128-bit multiply
// (high half), popcount, count-trailing-zeros, byte swap, prefetch and an
// atomic 64-bit OR.
//
// Each has a GCC/Clang builtin, an MSVC intrinsic and a portable C++
// fallback. Defining BLOOMKIT_PORTABLE before including any bloomkit header
// forces the portable fallbacks everywhere, so they can be checked against
// the builtins on any machine (tests/cpp/portable_check.cpp and
// tests/test_layouts.py::test_portable_build_matches build the core both
// ways and compare digests and positions).
#pragma once

#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif
#if !defined(BLOOMKIT_PORTABLE) && defined(_MSC_VER) && !defined(__clang__)
#define BLOOMKIT_MSVC 1
#endif

#if !defined(BLOOMKIT_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#define BLOOMKIT_GNU 1
#endif

// Marks a function that runs rarely (an error path), so the compiler keeps
// it out of line and its callers small enough to inline.
#if defined(__GNUC__) || defined(__clang__)
#define BLOOMKIT_COLD __attribute__((noinline, cold))
#elif defined(_MSC_VER)
#define BLOOMKIT_COLD __declspec(noinline)
#else
#define BLOOMKIT_COLD
#endif

// Forces a small function into its caller. The batch loops compiled for
// AVX2 (batch_probe.hpp) are built from such functions so that they and the
// AVX2 kernels they call become one loop body; a plain call could not be
// inlined across the target change.
//
// BLOOMKIT_INLINE_LAMBDA does the same for a lambda, written after its
// parameter list: `[&](size_t j) BLOOMKIT_INLINE_LAMBDA { ... }`. Under the
// extension's link-time optimisation GCC left the two-thread insert's
// per-key lambda out of line, one call per key (parallel.hpp).
#if defined(__GNUC__) || defined(__clang__)
#define BLOOMKIT_ALWAYS_INLINE inline __attribute__((always_inline))
#define BLOOMKIT_INLINE_LAMBDA __attribute__((always_inline))
#elif defined(_MSC_VER)
#define BLOOMKIT_ALWAYS_INLINE __forceinline
#define BLOOMKIT_INLINE_LAMBDA
#else
#define BLOOMKIT_ALWAYS_INLINE inline
#define BLOOMKIT_INLINE_LAMBDA
#endif

namespace bloomkit {
namespace platform {

// floor(a * b / 2^64): the high 64 bits of the full 128-bit product.
inline uint64_t mul_high64(uint64_t a, uint64_t b) {
#if defined(BLOOMKIT_GNU) && defined(__SIZEOF_INT128__)
    // __extension__: the 128-bit type is a GNU extension; without it
    // -Wpedantic warns in every file that includes the core.
    __extension__ using u128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
#elif defined(BLOOMKIT_MSVC) && (defined(_M_X64) || defined(_M_ARM64))
#if defined(_M_X64)
    uint64_t high;
    (void)_umul128(a, b, &high);
    return high;
#else
    return __umulh(a, b);
#endif
#else
    // Schoolbook multiplication on 32-bit limbs: a = a1 2^32 + a0, etc.
    // The middle sum cannot overflow: (2^32-1)^2 + 2 (2^32-1) < 2^64.
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    const uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0;
    const uint64_t p01 = a0 * b1;
    const uint64_t p10 = a1 * b0;
    const uint64_t p11 = a1 * b1;
    const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
#endif
}

inline uint32_t popcount64(uint64_t x) {
#if defined(BLOOMKIT_GNU) && defined(__POPCNT__)
    return static_cast<uint32_t>(__builtin_popcountll(x));
#elif defined(BLOOMKIT_MSVC) && defined(_M_X64)
    // __popcnt64 needs POPCNT (SSE4.2 era); every x86-64 MSVC target
    // bloomkit supports has it only from Nehalem on, so check at run time.
    static const bool has_popcnt = [] {
        int info[4];
        __cpuid(info, 1);
        return (info[2] & (1 << 23)) != 0;
    }();
    if (has_popcnt) return static_cast<uint32_t>(__popcnt64(x));
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return static_cast<uint32_t>((x * 0x0101010101010101ULL) >> 56);
#else
    // SWAR: sum bits in pairs, nibbles, bytes, then add the bytes with one
    // multiply (Hacker's Delight, 5-2). Also used by GCC/Clang builds for
    // baseline x86-64 (no POPCNT), where __builtin_popcountll would be a
    // call into libgcc's table-driven __popcountdi2: about 2x slower (one
    // noisy run) on blocked512 inserts, which count new bits in 8 words/key.
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return static_cast<uint32_t>((x * 0x0101010101010101ULL) >> 56);
#endif
}

// Index of the lowest set bit; x must not be 0.
inline uint32_t ctz64(uint64_t x) {
#if defined(BLOOMKIT_GNU)
    return static_cast<uint32_t>(__builtin_ctzll(x));
#elif defined(BLOOMKIT_MSVC) && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long index;
    _BitScanForward64(&index, x);
    return static_cast<uint32_t>(index);
#else
    // popcount of the bits below the lowest set bit.
    return popcount64((x & (0 - x)) - 1);
#endif
}

inline uint64_t bswap64(uint64_t x) {
#if defined(BLOOMKIT_GNU)
    return __builtin_bswap64(x);
#elif defined(BLOOMKIT_MSVC)
    return _byteswap_uint64(x);
#else
    x = ((x & 0x00ff00ff00ff00ffULL) << 8) | ((x >> 8) & 0x00ff00ff00ff00ffULL);
    x = ((x & 0x0000ffff0000ffffULL) << 16) | ((x >> 16) & 0x0000ffff0000ffffULL);
    return (x << 32) | (x >> 32);
#endif
}

// A hint that `address` will be read (or written, with prefetch_write) soon.
// Always inlined: GCC 12 treats an out-of-line prefetch function as having
// no effect and deletes calls to it that end up in a function with another
// target attribute (the AVX2 batch loops) instead of inlining them.
BLOOMKIT_ALWAYS_INLINE void prefetch_read(const void* address) {
#if defined(BLOOMKIT_GNU)
    __builtin_prefetch(address, 0, 3);
#elif defined(BLOOMKIT_MSVC) && (defined(_M_X64) || defined(_M_IX86))
    _mm_prefetch(static_cast<const char*>(address), _MM_HINT_T0);
#else
    (void)address;
#endif
}

BLOOMKIT_ALWAYS_INLINE void prefetch_write(const void* address) {
#if defined(BLOOMKIT_GNU)
    __builtin_prefetch(address, 1, 3);
#else
    prefetch_read(address);
#endif
}

// *word |= mask as one atomic read-modify-write; returns the word before.
// For bit arrays in a file mapped MAP_SHARED by several processes
// (mapped_file.hpp): a plain `word |= mask` is load, or, store, and two
// processes setting different bits of one word could each store a value
// without the other's bit (a lost bit: a false negative). Relaxed ordering
// suffices: a set bit publishes nothing but itself, and bits are only ever
// set, so any interleaving ends with the union. A zero mask writes nothing
// and is answered with a plain atomic load (no locked instruction).
// BLOOMKIT_PORTABLE keeps the atomic builtins: there is no portable
// fallback for an atomic operation on memory shared between processes.
inline uint64_t atomic_fetch_or64(uint64_t* word, uint64_t mask) {
#if defined(_MSC_VER) && !defined(__clang__)
    if (mask == 0) return static_cast<uint64_t>(_InterlockedOr64(reinterpret_cast<volatile __int64*>(word), 0));
    return static_cast<uint64_t>(
        _InterlockedOr64(reinterpret_cast<volatile __int64*>(word), static_cast<__int64>(mask)));
#else
    if (mask == 0) return __atomic_load_n(word, __ATOMIC_RELAXED);
    return __atomic_fetch_or(word, mask, __ATOMIC_RELAXED);
#endif
}

// One read of a value that another thread may write meanwhile (a caller's
// buffer read with the GIL released): a relaxed atomic load, so the compiler
// cannot read the memory a second time after the value was checked.
template <class T>
inline T load_once(const T* value) {
#if defined(_MSC_VER) && !defined(__clang__)
    return *static_cast<const volatile T*>(value);
#else
    return __atomic_load_n(value, __ATOMIC_RELAXED);
#endif
}

// A word of state shared with other processes (a rotating filter's state
// block in a file mapped "r+", rotating_bloom.hpp): the writer publishes with
// a release store, readers load with acquire, so a reader that sees a new
// generation number also sees the cleared bits written before it.
inline uint64_t load_acquire64(const uint64_t* word) {
#if defined(_MSC_VER) && !defined(__clang__)
    return *static_cast<const volatile uint64_t*>(word);
#else
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
#endif
}

inline void store_release64(uint64_t* word, uint64_t value) {
#if defined(_MSC_VER) && !defined(__clang__)
    *static_cast<volatile uint64_t*>(word) = value;
#else
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
#endif
}

// Whether this build uses the portable fallbacks (reported by the bindings).
constexpr bool kPortable =
#if defined(BLOOMKIT_PORTABLE)
    true;
#else
    false;
#endif

}  // namespace platform
}  // namespace bloomkit
