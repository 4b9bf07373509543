// ErasedKeys: any key source behind one type, so that a filter's batch
// loops are compiled once for all the sources that reach them through it.
//
// Every batch operation of every filter is a template over its key source
// (keys.hpp), and each filter has several of them (insert, lookup, removal,
// positions), each instantiated per layout, per atomic or plain store and
// per one- or two-thread path. With a NumPy array of each integer and float
// width, byte strings, UTF-32, datetimes, Arrow offsets and views and rows
// of columns, that product is what the extension's compile time and memory
// went to (docs/decisions.md, "One source build"). ErasedKeys hashes
// through one indirect call per chunk of kHashChunk keys (hash_range): the
// loop over the source's keys stays the source's own, compiled once per
// source type, and a filter's probe loops read the digests from a buffer
// as they always did (hash_chunks). A call per 256 keys costs nothing next
// to 256 hashes; what it gives up is the two-thread insert's hashing
// straight into the ring (parallel.hpp, split_into_slot), so the sources
// the bindings instantiate directly are the ones that measured fastest
// there: 64-bit integer arrays (bindings/keys.hpp, KeyBatch::visit).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hash.hpp"
#include "keys.hpp"
#include "parallel.hpp"

namespace bloomkit {

class ErasedKeys {
  public:
    // `keys` must outlive this object (it is a view of it, as KeyRange is).
    template <class Keys>
    explicit ErasedKeys(const Keys& keys)
        : keys_(&keys),
          size_(keys.size()),
          concurrent_(bloomkit::reads_concurrently<Keys>::value),
          hash_one_(&hash_one_of<Keys>),
          hash_range_(&hash_range_of<Keys>) {}

    size_t size() const { return size_; }
    // Whether two threads may read the source at once (parallel.hpp's
    // reads_concurrently of the erased type).
    bool reads_concurrently() const { return concurrent_; }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_one_(keys_, i, seed); }
    // out[j] = hash(first + j, seed) for j < count, through the source's own loop.
    void hash_range(size_t first, size_t count, uint32_t seed, Hash128* out) const {
        hash_range_(keys_, first, count, seed, out);
    }
    template <DigestUse = DigestUse::Probed, class Each>
    void for_each_hash(size_t first, size_t count, uint32_t seed, Each& each) const {
        Hash128 digests[kHashChunk];
        for (size_t done = 0; done < count; done += kHashChunk) {
            const size_t n = std::min(kHashChunk, count - done);
            hash_range_(keys_, first + done, n, seed, digests);
            for (size_t j = 0; j < n; ++j) each(done + j, static_cast<const Hash128&>(digests[j]));
        }
    }

  private:
    template <class Keys>
    static Hash128 hash_one_of(const void* keys, size_t i, uint32_t seed) {
        return static_cast<const Keys*>(keys)->hash(i, seed);
    }
    template <class Keys>
    static void hash_range_of(const void* keys, size_t first, size_t count, uint32_t seed, Hash128* out) {
        bloomkit::hash_range(*static_cast<const Keys*>(keys), first, count, seed, out);
    }

    const void* keys_;
    size_t size_;
    bool concurrent_;
    Hash128 (*hash_one_)(const void*, size_t, uint32_t);
    void (*hash_range_)(const void*, size_t, size_t, uint32_t, Hash128*);
};

// Two threads may read an ErasedKeys when its source says so at run time
// (parallel.hpp asks reads_concurrently_now).
template <>
struct reads_concurrently<ErasedKeys> : std::true_type {};

}  // namespace bloomkit
