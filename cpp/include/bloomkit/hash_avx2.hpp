// MurmurHash3_x64_128 of four 8-byte integer keys at once on AVX2's vector
// multipliers, bit-identical to murmur3_x64_128_u64 (hash.hpp) lane by lane.
//
// Why. An 8-byte key costs six 64-bit multiplies to hash (two in the tail
// mix, two in each finaliser) and a blocked layout three more (the block's
// multiply-shift and the probe seed's finaliser). On Zen 1 a scalar 64-bit
// multiply issues every other cycle, so a batch insert waits on the one
// scalar multiplier (~18 cycles a key) while the vector units sit idle.
// AVX2 has no 64 x 64 multiply, but a multiply by a constant c modulo 2^64
// is three 32 x 32 -> 64 multiplies (vpmuludq):
//     a * c = a_lo * c_lo + ((a_hi * c_lo + a_lo * c_hi) << 32)   (mod 2^64)
// (a_hi * c_hi * 2^64 vanishes). Four keys hashed that way take ~60 cycles
// of the vector pipes, slower than four scalar hashes (6.1 against 5.2
// ns/key), so the gain is in running both at once: IntegerKeys hashes four
// keys of each step here and the rest on the scalar multiplier
// (integer_hash_schedule.hpp; the balance and the figures are there).
#pragma once

#include <cstdint>

#include "hash.hpp"
#include "simd.hpp"

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)

namespace bloomkit {
namespace simd {

// x * c mod 2^64 in each 64-bit lane (formula above).
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE __m256i multiply_by_constant(__m256i x, uint64_t c) {
    const __m256i c_lo = _mm256_set1_epi64x(static_cast<long long>(c & 0xffffffffULL));
    const __m256i c_hi = _mm256_set1_epi64x(static_cast<long long>(c >> 32));
    const __m256i low = _mm256_mul_epu32(x, c_lo);
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), c_lo), _mm256_mul_epu32(x, c_hi));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE __m256i xor_shift_33(__m256i x) {
    return _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
}

// detail::fmix64 in each lane.
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE __m256i fmix64_x4(__m256i k) {
    k = multiply_by_constant(xor_shift_33(k), 0xff51afd7ed558ccdULL);
    k = multiply_by_constant(xor_shift_33(k), 0xc4ceb9fe1a85ec53ULL);
    return xor_shift_33(k);
}

// murmur3_x64_128_u64(values[i], seed) for the four lanes of `values`, as
// the four low halves in h1 and the four high halves in h2.
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE void murmur3_x64_128_u64_x4(__m256i values, uint32_t seed, __m256i& h1,
                                                                        __m256i& h2) {
    // mix_k1: rotl64(k * C1, 31) * C2.
    __m256i k = multiply_by_constant(values, detail::kC1);
    k = _mm256_or_si256(_mm256_slli_epi64(k, 31), _mm256_srli_epi64(k, 33));
    k = multiply_by_constant(k, detail::kC2);
    // Both lanes start as seed ^ 8 after the length XOR (hash.hpp).
    const __m256i lane = _mm256_set1_epi64x(static_cast<long long>(uint64_t(seed) ^ 8));
    // finalize_lanes: h1 += h2; h2 += h1; fmix64 of each; h1 += h2; h2 += h1.
    const __m256i first = _mm256_add_epi64(_mm256_xor_si256(k, lane), lane);
    const __m256i a = fmix64_x4(first);
    const __m256i b = fmix64_x4(_mm256_add_epi64(lane, first));
    h1 = _mm256_add_epi64(a, b);
    h2 = _mm256_add_epi64(b, h1);
}

}  // namespace simd
}  // namespace bloomkit

#endif
