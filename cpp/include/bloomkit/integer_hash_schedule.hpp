// How a batch of integer keys is split between the vector units and the
// scalar multiplier while it is hashed (IntegerKeys::for_each_hash, keys.hpp).
//
// Why a header of its own: keys.hpp says what a key is (its canonical bytes
// or 8-byte value, and which hash turns it into a digest); this is only an
// instruction schedule for one CPU feature. It changes no digest and no
// order — every key gets murmur3_x64_128_u64 (hash.hpp) and reaches the
// caller in index order — so it can be tuned, or dropped, without touching
// what a key is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hash.hpp"
#include "hash_avx2.hpp"
#include "platform.hpp"
#include "simd.hpp"

namespace bloomkit {

// What the caller of for_each_hash does with each digest. A source that
// shares the hashing between the vector units and the scalar multiplier
// (IntegerKeys with AVX2) leaves more keys to the multiplier when the
// caller does not use it too.
enum class DigestUse : uint8_t {
    Probed,  // the caller derives the key's block and probe seed (multiplies)
    Stored,  // the caller only stores the digest (hash_range)
};

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
namespace integer_hash_schedule {

// Steps of 4 + ScalarKeys keys: four hashed on the vector units, the
// rest on the scalar multiplier, which the caller's per-key work also
// uses. Balancing the two: a vector hash of four keys keeps the vector
// multiplier busy ~60 cycles (Zen 1), a scalar hash ~12 cycles per key
// and a split_block key's block and probe seed ~6 more. So a caller
// that probes the digest (the insert ring) gets one scalar key a step,
// one that stores it (hash_range) three. Measured, 64 Ki keys in L1
// (ns/key, scalar loop against this one): digest, block and probe seed
// 7.6 -> 4.8 (ScalarKeys 1; 3: 5.0), digest stored 5.0 -> 3.4
// (ScalarKeys 3; 1: 5.1).
template <DigestUse Use>
constexpr size_t kScalarKeys = Use == DigestUse::Probed ? 1 : 3;

// The keys at item and the next three strides, key i in lane i.
template <class Load>
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE __m256i load_four(const uint8_t* item, ptrdiff_t stride, Load& load) {
    return _mm256_set_epi64x(static_cast<long long>(load(item + 3 * stride)),
                             static_cast<long long>(load(item + 2 * stride)),
                             static_cast<long long>(load(item + stride)), static_cast<long long>(load(item)));
}

template <class Load>
BLOOMKIT_TARGET_AVX2 void hash_four_into(const uint8_t* item, ptrdiff_t stride, uint32_t seed, Load& load,
                                         uint64_t* low, uint64_t* high) {
    __m256i h1;
    __m256i h2;
    simd::murmur3_x64_128_u64_x4(load_four(item, stride, load), seed, h1, h2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(low), h1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(high), h2);
}

template <size_t ScalarKeys, class Load, class Each>
BLOOMKIT_TARGET_AVX2 BLOOMKIT_ALWAYS_INLINE void call_step(size_t j, const uint8_t* item, ptrdiff_t stride,
                                                           uint32_t seed, Load& load, const uint64_t* low,
                                                           const uint64_t* high, Each& each) {
    for (size_t lane = 0; lane < 4; ++lane) each(j + lane, Hash128{low[lane], high[lane]});
    for (size_t k = 4; k < 4 + ScalarKeys; ++k)
        each(j + k, murmur3_x64_128_u64(load(item + static_cast<ptrdiff_t>(k) * stride), seed));
}

// each(j, murmur3_x64_128_u64(load(item + j * stride), seed)) for j < count,
// in order. `load` reads one key's 64-bit value (IntegerKeys: the element
// widened to its value mod 2^64).
//
// Software-pipelined: the vector hash of the next step's four keys is
// issued before this step's calls, which use the digests the step
// before made, so its long dependency chain runs beside the scalar
// work instead of holding it up. Without that (the same calls in the
// same order after the hash of their own step) it gained nothing:
// 7.4 against 7.7 ns/key. The body has no branch, and the next step's
// digests go through memory across the back edge: handed over in
// registers, the compiler read them out with vector extracts, which
// compete with the hash for the vector pipes (7.2 ns/key).
template <DigestUse Use, class Load, class Each>
BLOOMKIT_TARGET_AVX2 void for_each_hash(const uint8_t* item, size_t count, ptrdiff_t stride, uint32_t seed, Load load,
                                        Each& each) {
    constexpr size_t kStep = 4 + kScalarKeys<Use>;
    const ptrdiff_t step_bytes = static_cast<ptrdiff_t>(kStep) * stride;
    size_t j = 0;
    if (count >= kStep) {
        alignas(32) uint64_t low[4];  // the digests of this step's four vector keys
        alignas(32) uint64_t high[4];
        hash_four_into(item, stride, seed, load, low, high);
        for (; j + 2 * kStep <= count; j += kStep, item += step_bytes) {
            __m256i next_low;
            __m256i next_high;
            simd::murmur3_x64_128_u64_x4(load_four(item + step_bytes, stride, load), seed, next_low, next_high);
            call_step<kScalarKeys<Use>>(j, item, stride, seed, load, low, high, each);
            _mm256_store_si256(reinterpret_cast<__m256i*>(low), next_low);
            _mm256_store_si256(reinterpret_cast<__m256i*>(high), next_high);
        }
        call_step<kScalarKeys<Use>>(j, item, stride, seed, load, low, high, each);
        j += kStep;
        item += step_bytes;
    }
    for (; j < count; ++j, item += stride) each(j, murmur3_x64_128_u64(load(item), seed));
}

}  // namespace integer_hash_schedule
#endif

}  // namespace bloomkit
