// One member of bloomkit.redis_family's RedisFilterFamily: a classic Bloom
// filter in two generations (current and previous), each a byte string that
// Redis keeps and the client reads whole (docs/integrations.md, "Filter
// families").
//
// A request on a member is a lookup in both generations or a test-and-set
// with rotation. Both run here in one call on the generations' bytes as
// Redis returned them: hashing, probing and the new generation's bytes, with
// no filter object per generation and no Python per key. The bytes are the
// classic payload of docs/FORMAT.md: bit i is bit (i & 7) of byte (i >> 3),
// so probing bytes is the same as probing the payload's little-endian words,
// on any host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "bloom.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "layouts.hpp"
#include "platform.hpp"

namespace bloomkit {

namespace member_detail {

inline bool contains(const ClassicLayout& layout, const uint8_t* bytes, Hash128 h) {
    IndexSequence seq(h, layout.num_bits);
    for (uint32_t i = 0; i < layout.num_hashes; ++i) {
        const uint64_t bit = seq.next();
        if (!((bytes[bit >> 3] >> (bit & 7)) & 1u)) return false;
    }
    return true;
}

// Sets the key's bits; returns how many were not set before.
inline uint32_t add(const ClassicLayout& layout, uint8_t* bytes, Hash128 h) {
    uint32_t newly_set = 0;
    layout.for_each_position(h, [&](uint64_t bit) {
        const uint8_t mask = static_cast<uint8_t>(1u << (bit & 7));
        newly_set += (bytes[bit >> 3] & mask) == 0;
        bytes[bit >> 3] |= mask;
    });
    return newly_set;
}

inline uint64_t popcount_bytes(const uint8_t* bytes, size_t n) {
    uint64_t total = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        std::memcpy(&word, bytes + i, 8);
        total += platform::popcount64(word);
    }
    for (; i < n; ++i) total += platform::popcount64(bytes[i]);
    return total;
}

inline ClassicLayout classic_layout(const BloomGeometry& geometry) {
    if (geometry.layout != Layout::Classic)
        throw std::invalid_argument("a family member's generations are classic Bloom filters");
    // Whole bytes: every bit index the layout yields must fall inside a generation's num_bits / 8 bytes.
    if (geometry.num_bits % 8 != 0)
        throw std::invalid_argument("a family member's generation is whole bytes: num_bits must be a multiple of 8");
    return ClassicLayout{geometry.num_bits, geometry.num_hashes};
}

}  // namespace member_detail

// present[j] = 1 if key j has all its bits in `current` or in `previous`
// (either may be null: no such generation). Each is geometry.num_bits / 8
// bytes; the geometry's layout must be classic.
template <class Keys>
void member_contains_many(const BloomGeometry& geometry, const Keys& keys, const uint8_t* current,
                          const uint8_t* previous, uint8_t* present) {
    const ClassicLayout layout = member_detail::classic_layout(geometry);
    hash_chunks(keys, geometry.seed, [&](size_t first, const Hash128* digests, size_t count) {
        for (size_t j = 0; j < count; ++j)
            present[first + j] = (current && member_detail::contains(layout, current, digests[j])) ||
                                 (previous && member_detail::contains(layout, previous, digests[j]));
    });
}

// What member_add_many did: how many keys were new (not found) in all, and
// before the rotation; `rotated_at` is the index of the key before which
// the current generation rotated, or the key count if it did not.
struct MemberAddResult {
    uint64_t fresh = 0;
    uint64_t fresh_before_rotation = 0;
    size_t rotated_at = 0;
    bool rotated = false;
};

// Test-and-set of `keys`, in order, on a member whose current generation is
// `current` (updated in place) and previous one `previous` (null: none).
// As one process adding the keys to the member key by key:
//  * a key with all its bits in the previous generation is present, and is
//    not copied into the current one;
//  * before a key not in the previous generation whose k bits could carry
//    the current generation past `limit` set bits (set bits + k > limit),
//    the current generation becomes the previous one: its bytes are copied
//    to `rotated` (geometry.num_bits / 8 bytes, written only then), the
//    current one starts empty, and that key and the rest are tested against
//    the new previous generation and set in the fresh current one. At most
//    one rotation per call: the caller passes at most limit / k keys, which
//    a fresh generation takes without reaching the limit;
//  * otherwise the key is set in the current generation; it was present if
//    all its bits were set already (by the generation or an earlier key).
// found[j] = 1 for a present key. Same answers and bytes as the local
// filter's add_many on each generation (bloomkit.redis_family's
// _test_and_set before this function: tests/test_redis_family.py checks
// the two agree key for key, rotations included).
template <class Keys>
MemberAddResult member_add_many(const BloomGeometry& geometry, const Keys& keys, uint8_t* current,
                                const uint8_t* previous, uint8_t* rotated, uint64_t limit, uint8_t* found) {
    const ClassicLayout layout = member_detail::classic_layout(geometry);
    const size_t nbytes = static_cast<size_t>(geometry.num_bits / 8);
    const uint32_t k = geometry.num_hashes;
    uint64_t set_bits = member_detail::popcount_bytes(current, nbytes);
    MemberAddResult result;
    result.rotated_at = keys.size();
    hash_chunks(keys, geometry.seed, [&](size_t first, const Hash128* digests, size_t count) {
        for (size_t j = 0; j < count; ++j) {
            const Hash128 h = digests[j];
            uint8_t& answer = found[first + j];
            if (previous && member_detail::contains(layout, previous, h)) {
                answer = 1;
                continue;
            }
            if (!result.rotated && set_bits + k > limit) {
                std::memcpy(rotated, current, nbytes);
                std::memset(current, 0, nbytes);
                previous = rotated;
                set_bits = 0;
                result.rotated = true;
                result.rotated_at = first + j;
                result.fresh_before_rotation = result.fresh;
                if (member_detail::contains(layout, previous, h)) {
                    answer = 1;
                    continue;
                }
            }
            const uint32_t newly_set = member_detail::add(layout, current, h);
            set_bits += newly_set;
            answer = newly_set == 0;
            result.fresh += newly_set != 0;
        }
    });
    if (!result.rotated) result.fresh_before_rotation = result.fresh;
    return result;
}

}  // namespace bloomkit
