// The prefetching loop every filter's batch operations share.
//
// A filter larger than the cache pays one cache miss per probe. Batches hide
// that latency by issuing the prefetches for key j + kPrefetchDistance before
// working on key j, so several misses are in flight at once.
#pragma once

#include <cstddef>

#include "hash.hpp"
#include "keys.hpp"

namespace bloomkit {

// How many keys ahead the batch loops prefetch: enough to keep several cache
// misses in flight on a filter larger than the cache. Swept from 4 to 32 with
// benchmarks/prefetch_tuning.cpp (results/2026-11-24-prefetch-tuning-c79ed12-epyc2.md):
// 4 is 10-35 % slower at 1e7-1e8 keys, 8-32 are within 4 %, and 16 was at or
// near the best for split_block add and lookup at both sizes.
constexpr size_t kPrefetchDistance = 16;

// Calls visit(j) for j in [0, count) in order, calling prefetch(items[j +
// kPrefetchDistance]) first. The items are usually digests; a filter may
// pass what it derived from them instead (the cuckoo filter's bucket
// probes). prefetch must only hint (it may run for keys whose visit() later
// sees a changed filter).
// Distance is a parameter only so benchmarks/prefetch_tuning.cpp can sweep it.
template <size_t Distance = kPrefetchDistance, class Item, class Prefetch, class Visit>
void for_each_prefetched(const Item* items, size_t count, Prefetch&& prefetch, Visit&& visit) {
    const size_t lead = count < Distance ? count : Distance;
    for (size_t j = 0; j < lead; ++j) prefetch(items[j]);
    for (size_t j = 0; j < count; ++j) {
        if (j + Distance < count) prefetch(items[j + Distance]);
        visit(j);
    }
}

// The batch loop of the filters whose probes need nothing but the digest:
// hashes `keys` chunk by chunk (hash_chunks) and calls visit(i, digest) for
// every key i of the batch in order, prefetching kPrefetchDistance keys ahead.
template <class Keys, class Prefetch, class Visit>
void for_each_key_prefetched(const Keys& keys, uint32_t seed, Prefetch&& prefetch, Visit&& visit) {
    hash_chunks(keys, seed, [&](size_t first, const Hash128* digests, size_t count) {
        for_each_prefetched(digests, count, prefetch, [&](size_t j) { visit(first + j, digests[j]); });
    });
}

}  // namespace bloomkit
