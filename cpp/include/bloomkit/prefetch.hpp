// The prefetching loop every filter's batch operations share.
//
// A filter larger than the cache pays one cache miss per probe. Batches hide
// that latency by issuing the prefetches for key j + kPrefetchDistance before
// working on key j, so several misses are in flight at once.
#pragma once

#include <cstddef>

#include "hash.hpp"

namespace bloomkit {

// How many keys ahead the batch loops prefetch: enough to keep several cache
// misses in flight on a filter larger than the cache.
constexpr size_t kPrefetchDistance = 8;

// Calls visit(j) for j in [0, count) in order, calling prefetch(digests[j +
// kPrefetchDistance]) first. prefetch must only hint (it may run for keys
// whose visit() later sees a changed filter).
template <class Prefetch, class Visit>
void for_each_prefetched(const Hash128* digests, size_t count, Prefetch&& prefetch, Visit&& visit) {
    const size_t lead = count < kPrefetchDistance ? count : kPrefetchDistance;
    for (size_t j = 0; j < lead; ++j) prefetch(digests[j]);
    for (size_t j = 0; j < count; ++j) {
        if (j + kPrefetchDistance < count) prefetch(digests[j + kPrefetchDistance]);
        visit(j);
    }
}

}  // namespace bloomkit
