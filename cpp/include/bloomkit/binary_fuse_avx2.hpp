// A binary fuse filter's placement of four keys at once on AVX2, lane by
// lane bit-identical to BinaryFuseFilter::place (binary_fuse.hpp): the batch
// lookup places keys four at a time with it (BinaryFuseFilter::
// lookup_chunk_avx2). Construction keeps the scalar placement; both must
// put every key in the same three cells, since a filter built by one is
// read by the other (tests/cpp/test_binary_fuse.cpp compares them key by
// key).
//
// The one step AVX2 lacks is h0 = floor(x * R / 2^64), the high half of a
// 64 x 64 multiply (R = segment_count * segment_length). R < 2^32 for every
// stored shape (kBinaryFuseMaxKeys keys need fewer cells), so with
// x = x_hi 2^32 + x_lo two 32 x 32 -> 64 multiplies (vpmuludq) give it
// exactly:
//     floor(x R / 2^64) = floor((x_hi R + floor(x_lo R / 2^32)) / 2^32)
// (dividing by 2^32 twice, each floor exact), and x_hi R + (x_lo R >> 32)
// < 2^64 does not overflow. Taking the top 32 bits of x alone, as the
// reference implementation's fast path does, can be one cell short.
#pragma once

#include <cstdint>

#include "hash_avx2.hpp"
#include "simd.hpp"

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)

namespace bloomkit {
namespace simd {

// The placement constants (BinaryFuseFilter::Placement) broadcast to the
// four lanes once per chunk.
struct FusePlacementX4 {
    __m256i length, twice_length, mask, range, fingerprint_mask, build_seed;
};

BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE FusePlacementX4 fuse_placement_x4(uint64_t length, uint64_t mask,
                                                                              uint64_t range, uint64_t build_seed,
                                                                              uint32_t fingerprint_mask) {
    FusePlacementX4 at;
    at.length = _mm256_set1_epi64x(static_cast<long long>(length));
    at.twice_length = _mm256_set1_epi64x(static_cast<long long>(2 * length));
    at.mask = _mm256_set1_epi64x(static_cast<long long>(mask));
    at.range = _mm256_set1_epi64x(static_cast<long long>(range));
    at.fingerprint_mask = _mm256_set1_epi64x(static_cast<long long>(fingerprint_mask));
    at.build_seed = _mm256_set1_epi64x(static_cast<long long>(build_seed));
    return at;
}

// Four keys' cells and fingerprints from their 64-bit key hashes: x =
// fmix64(key_hash + build_seed), h0 = floor(x R / 2^64) (above),
// h1 = (h0 + L) ^ ((x >> 18) & (L - 1)), h2 = (h0 + 2 L) ^ (x & (L - 1)),
// fingerprint (x ^ (x >> 32)) & fingerprint_mask.
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE void fuse_place_x4(__m256i key_hashes, const FusePlacementX4& at,
                                                               __m256i& cell0, __m256i& cell1, __m256i& cell2,
                                                               __m256i& fingerprint) {
    const __m256i x = fmix64_x4(_mm256_add_epi64(key_hashes, at.build_seed));
    const __m256i low = _mm256_mul_epu32(x, at.range);
    const __m256i high = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), at.range);
    cell0 = _mm256_srli_epi64(_mm256_add_epi64(high, _mm256_srli_epi64(low, 32)), 32);
    cell1 = _mm256_xor_si256(_mm256_add_epi64(cell0, at.length), _mm256_and_si256(_mm256_srli_epi64(x, 18), at.mask));
    cell2 = _mm256_xor_si256(_mm256_add_epi64(cell0, at.twice_length), _mm256_and_si256(x, at.mask));
    fingerprint = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 32)), at.fingerprint_mask);
}

}  // namespace simd
}  // namespace bloomkit

#endif
