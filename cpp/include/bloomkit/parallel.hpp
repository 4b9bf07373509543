// Batches on two cores (docs/decisions.md, "Batches on two cores").
//
// A batch of n keys costs n hashes and n probes; on a filter larger than
// the cache most of a probe is a wait for memory, and a second core waits on
// its own cache misses in parallel. So a large batch runs on the calling
// thread and one helper thread, started for that one call and joined before
// it returns (no pool: nothing outlives the call, so nothing can run at
// interpreter exit or in a forked child, and a thread start of ~30-50 us is
// paid once per call of at least kMinParallelKeys keys).
//
// Lookups only read, so each thread takes half of the keys. Inserts write,
// and two threads must never write one word: each thread owns half of the
// filter's blocks (the blocked layouts put all of a key's bits in one block)
// and inserts exactly the keys whose block is in its half, in key order. A
// key always lands in the same half, so a repeated key still reports
// "present" the second time, as on one thread.
//
// The keys of an insert are hashed once, a chunk at a time, into a ring of
// buffers that both threads then read (ChunkRing): whichever thread is free
// hashes the next chunk, up to kRingChunks ahead of the slower thread's
// probes. What a buffer holds per key is the caller's choice: the digest,
// or (split_block) just the key's block and probe seed in 8 bytes, half of
// a digest's bytes to hand from one core to the other. Neither thread
// waits for the other step by step, so a helper that the OS deschedules for
// a while (a busy machine, a Spark executor with every core taken) delays
// only what is its own to do.
//
// Only key sources that are pure views of caller memory (no mutable cache)
// go on two threads (reads_concurrently): NumPy and Arrow arrays. Sources
// that hash through a callback a block at a time (lists of Python objects,
// keyed hashing: BlockDigestKeys) stay on the calling thread; a list's
// hashing already uses two cores (the bindings' gil_split.hpp, docs/
// decisions.md, "Two threads under one GIL").
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#if defined(__GLIBCXX__)
#include <cxxabi.h>  // abi::__forced_unwind
#endif
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "hash.hpp"
#include "keys.hpp"

namespace bloomkit {

// Batches smaller than this stay on one thread. A thread start costs
// ~30-50 us; 65,536 keys take ~1 ms on one core at 1e7-key filter sizes, so
// the start costs under 5 % of what the second core saves.
constexpr size_t kMinParallelKeys = size_t(1) << 16;

// Keys per chunk of the ring, and chunks in the ring: 8,192 digests are
// 128 KiB per part (8,192 compact probes 64 KiB), so the whole ring (4
// slots of two parts, 1 MiB or 512 KiB, plus 256 KiB of key places when an
// insert reports them) is about one core's L2 cache, and the ring's
// bookkeeping (a few uncontended mutex operations per chunk, well under
// 1 us) is under 1 % of a chunk's ~50-100 us. Four
// chunks let the faster thread run ~0.3 ms ahead; 4,096- or 16,384-key
// chunks and an 8-chunk ring measured the same within the noise (10 %).
constexpr size_t kParallelChunk = 8192;
constexpr size_t kRingChunks = 4;

// Key sources that two threads may read at once: views of caller memory
// with no mutable state. Utf32Keys (a scratch buffer), BlockDigestKeys and
// RowKeys (digest caches) are not.
template <class Keys>
struct reads_concurrently : std::false_type {};
template <class Int>
struct reads_concurrently<IntegerKeys<Int>> : std::true_type {};
template <class Float>
struct reads_concurrently<FloatKeys<Float>> : std::true_type {};
template <class Offset>
struct reads_concurrently<OffsetKeys<Offset>> : std::true_type {};
template <>
struct reads_concurrently<NanosecondKeys> : std::true_type {};
template <>
struct reads_concurrently<FixedWidthKeys> : std::true_type {};
template <>
struct reads_concurrently<ViewKeys> : std::true_type {};
template <>
struct reads_concurrently<DigestKeys> : std::true_type {};

namespace detail {
// A source whose type may or may not be read concurrently (ErasedKeys,
// erased_keys.hpp) answers at run time; any other, its type's trait.
template <class Keys>
auto reads_concurrently_now(const Keys& keys, int) -> decltype(keys.reads_concurrently()) {
    return keys.reads_concurrently();
}
template <class Keys>
bool reads_concurrently_now(const Keys&, long) {
    return reads_concurrently<Keys>::value;
}
}  // namespace detail

// Keys [begin, begin + count) of a source, numbered from 0.
template <class Keys>
class KeyRange {
  public:
    KeyRange(const Keys& keys, size_t begin, size_t count) : keys_(keys), begin_(begin), count_(count) {}
    size_t size() const { return count_; }
    Hash128 hash(size_t i, uint32_t seed) const { return keys_.hash(begin_ + i, seed); }
    // The source's own loop when it has one (keys.hpp, for_each_hash).
    template <DigestUse Use = DigestUse::Probed, class Each>
    void for_each_hash(size_t first, size_t count, uint32_t seed, Each& each) const {
        bloomkit::for_each_hash<Use>(keys_, begin_ + first, count, seed, each);
    }
    // The source's own range hashing when it has one (ErasedKeys).
    template <class K = Keys>
    auto hash_range(size_t first, size_t count, uint32_t seed, Hash128* out) const
        -> decltype(std::declval<const K&>().hash_range(first, count, seed, out)) {
        return keys_.hash_range(begin_ + first, count, seed, out);
    }

  private:
    const Keys& keys_;
    size_t begin_;
    size_t count_;
};
template <class Keys>
struct reads_concurrently<KeyRange<Keys>> : reads_concurrently<Keys> {};

// Shared state of two threads that an exception on either must stop.
class Abandonable {
  public:
    virtual void abandon() = 0;

  protected:
    ~Abandonable() = default;
};

// At most this many helper threads run at once in the process: one per
// further CPU. Batches that overlap (two Python threads each inserting a
// large batch) would otherwise put four threads on two cores, each pair
// waiting on a partner that the OS has descheduled.
class HelperSlot {
  public:
    HelperSlot() {
        static const int limit = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
        acquired_ = in_use().fetch_add(1, std::memory_order_acq_rel) < limit;
        if (!acquired_) in_use().fetch_sub(1, std::memory_order_acq_rel);
    }
    ~HelperSlot() {
        if (acquired_) in_use().fetch_sub(1, std::memory_order_acq_rel);
    }
    HelperSlot(const HelperSlot&) = delete;
    HelperSlot& operator=(const HelperSlot&) = delete;
    bool acquired() const { return acquired_; }

    // For a process forked while another thread's batch held a slot: the
    // child has no helper threads, so none of the parent's slots is taken
    // (the bindings call this from a pthread_atfork child handler).
    static void reset_after_fork() { in_use().store(0, std::memory_order_relaxed); }
    static int in_use_now() { return in_use().load(std::memory_order_relaxed); }

  private:
    static std::atomic<int>& in_use() {
        static std::atomic<int> count{0};
        return count;
    }
    bool acquired_ = false;
};

// Runs work(0) on this thread and work(1) on a helper thread and waits for
// both. Returns false, having run nothing, when no helper may or can be
// started (then the caller does the work on one thread). An exception from
// either side abandons `shared` (if any), so the other side stops at its
// next wait, and is rethrown here once both have finished.
template <class Work>
bool run_on_two_threads(Work&& work, Abandonable* shared = nullptr) {
    HelperSlot slot;
    if (!slot.acquired()) return false;
    std::exception_ptr failure[2];
    auto side = [&](int thread) {
        try {
            work(thread);
        }
#if defined(__GLIBCXX__)
        catch (abi::__forced_unwind&) {
            throw;  // see below; swallowing it aborts the process
        }
#endif
        catch (...) {
            failure[thread] = std::current_exception();
            if (shared) shared->abandon();
        }
    };
    std::thread helper;
    try {
        helper = std::thread(side, 1);
    } catch (const std::system_error&) {
        return false;
    }
#if defined(__GLIBCXX__)
    // The calling thread may be ended by pthread_exit inside work(0): a
    // Python daemon thread that takes the GIL back at interpreter exit (to
    // read a block of keys) is unwound that way. Let the helper stop at its
    // next wait and join it before that unwinding goes on (a joinable
    // std::thread destroyed would terminate the process).
    try {
        side(0);
    } catch (abi::__forced_unwind&) {
        if (shared) shared->abandon();
        helper.join();
        throw;
    }
#else
    side(0);
#endif
    helper.join();
    for (const std::exception_ptr& error : failure)
        if (error) std::rethrow_exception(error);
    return true;
}

// lookup(range, out) over the two halves of `keys` on two threads, where
// lookup is a filter's contains_many. Only for sources two threads may read
// at once; returns false (nothing done) otherwise or when no helper starts.
template <class Keys, class Lookup>
bool lookup_halves_on_two_threads(const Keys& keys, uint8_t* present, Lookup&& lookup) {
    if constexpr (!reads_concurrently<Keys>::value) {
        return false;
    } else {
        if (!detail::reads_concurrently_now(keys, 0)) return false;
        const size_t mid = keys.size() / 2;
        return run_on_two_threads([&](int thread) {
            const size_t begin = thread == 0 ? 0 : mid;
            const size_t end = thread == 0 ? mid : keys.size();
            lookup(KeyRange<Keys>(keys, begin, end - begin), present + begin);
        });
    }
}

// What a batch's keys hash to, kParallelChunk keys per chunk, in a ring of
// kRingChunks slots shared by two threads. Hashing a chunk also converts
// and splits it: to_entry(digest) is what the ring keeps of a key (an
// Entry: the digest itself, or less), part(entry) names the thread (0 or 1)
// that will probe the key, and each slot keeps every part's entries and
// their places in the chunk, in key order. Each
// thread walks the chunks in order and calls probe(thread, first, entries,
// places, n) on its part of each; before that, whichever thread finds the
// chunk not yet hashed hashes the next unclaimed chunk itself. A slot is
// reused only once both threads have probed the chunk it held. All
// bookkeeping is under one mutex: a handful of uncontended lock operations
// per chunk.
template <class Entry>
class ChunkRing : public Abandonable {
  public:
    // keep_places: whether probe() reads the places (an insert that
    // reports which keys were present); otherwise they are not written.
    ChunkRing(size_t total_keys, bool keep_places)
        : total_(total_keys),
          chunks_((total_keys + kParallelChunk - 1) / kParallelChunk),
          keep_places_(keep_places),
          slot_size_(std::min(total_keys, kParallelChunk)),
          entries_(kRingChunks * 2 * slot_size_),
          places_(keep_places ? kRingChunks * 2 * slot_size_ : 0),
          held_(kRingChunks, kNone) {}

    void abandon() override {
        std::lock_guard<std::mutex> lock(mutex_);
        abandoned_ = true;
        publish_change();
    }

    template <class Keys, class ToEntry, class Part, class Probe>
    void run(int thread, const Keys& keys, uint32_t seed, const ToEntry& to_entry, const Part& part, Probe& probe) {
        for (size_t chunk = 0; chunk < chunks_; ++chunk) {
            if (!wait_hashed(chunk, keys, seed, to_entry, part)) return;
            const size_t slot = chunk % kRingChunks;
            probe(thread, first_key(chunk), static_cast<const Entry*>(entries(slot, thread)),
                  static_cast<const uint32_t*>(places(slot, thread)), part_size_[slot][thread]);
            std::lock_guard<std::mutex> lock(mutex_);
            probed_[thread] = chunk + 1;
            publish_change();
        }
    }

  private:
    static constexpr size_t kNone = ~size_t(0);

    size_t first_key(size_t chunk) const { return chunk * kParallelChunk; }
    size_t key_count(size_t chunk) const { return std::min(kParallelChunk, total_ - first_key(chunk)); }
    Entry* entries(size_t slot, int thread) { return entries_.data() + (2 * slot + thread) * slot_size_; }
    uint32_t* places(size_t slot, int thread) {
        return keep_places_ ? places_.data() + (2 * slot + thread) * slot_size_ : nullptr;
    }

    // Returns once `chunk` is hashed (false if the other thread failed),
    // hashing chunks itself while it may.
    template <class Keys, class ToEntry, class Part>
    bool wait_hashed(size_t chunk, const Keys& keys, uint32_t seed, const ToEntry& to_entry, const Part& part) {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            if (abandoned_) return false;
            if (held_[chunk % kRingChunks] == chunk) return true;
            const size_t next = next_unclaimed_;
            // The slot of `next` is free once both threads probed the chunk
            // it held, next - kRingChunks.
            if (next < chunks_ && next < std::min(probed_[0], probed_[1]) + kRingChunks) {
                ++next_unclaimed_;
                lock.unlock();
                hash_into_slot(next, keys, seed, to_entry, part);
                lock.lock();
                held_[next % kRingChunks] = next;
                publish_change();
                continue;
            }
            wait_for_change(lock);
        }
    }

    // Branch-free: a key's part is unpredictable, so each key is written to
    // both parts' next places and only its own part's count advances. Each
    // key is hashed straight into its entry (for_each_hash), not through a
    // block of digests (hash_range): the 16-byte store and reload per key
    // cost ~6 % of a split_block insert of 1e7 keys (7.3 -> 6.9 ns/key).
    // Whether places are kept is a template argument, not a branch per key.
    // split_into_slot's per-key lambda, and the caller's to_entry and part,
    // are forced inline: under the extension's -flto GCC left that lambda
    // out of line, a call per key (update of 1e7 keys 3.05 against 2.92
    // ns/key; docs/decisions.md, "Link-time optimisation stays on").
    template <class Keys, class ToEntry, class Part>
    void hash_into_slot(size_t chunk, const Keys& keys, uint32_t seed, const ToEntry& to_entry, const Part& part) {
        if (keep_places_)
            split_into_slot<true>(chunk, keys, seed, to_entry, part);
        else
            split_into_slot<false>(chunk, keys, seed, to_entry, part);
    }

    template <bool KeepPlaces, class Keys, class ToEntry, class Part>
    void split_into_slot(size_t chunk, const Keys& keys, uint32_t seed, const ToEntry& to_entry, const Part& part) {
        const size_t slot = chunk % kRingChunks;
        Entry* to[2] = {entries(slot, 0), entries(slot, 1)};
        uint32_t* at[2] = {places(slot, 0), places(slot, 1)};
        size_t n0 = 0, n1 = 0;
        for_each_hash(keys, first_key(chunk), key_count(chunk), seed,
                      [&](size_t j, const Hash128& h) BLOOMKIT_INLINE_LAMBDA {
                          const Entry entry = to_entry(h);
                          const size_t in_upper = part(entry) ? 1 : 0;
                          to[0][n0] = entry;
                          to[1][n1] = entry;
                          if (KeepPlaces) {
                              at[0][n0] = static_cast<uint32_t>(j);
                              at[1][n1] = static_cast<uint32_t>(j);
                          }
                          n0 += 1 - in_upper;
                          n1 += in_upper;
                      });
        part_size_[slot][0] = n0;
        part_size_[slot][1] = n1;
    }

    // Every change to the ring bumps version_ (under the mutex, then
    // notify). A waiter polls it for a few microseconds before sleeping:
    // the other thread usually finishes a chunk soon, and waking a thread
    // that sleeps in the kernel costs tens of microseconds, about a chunk.
    void wait_for_change(std::unique_lock<std::mutex>& lock) {
        const uint64_t seen = version_.load(std::memory_order_relaxed);
        lock.unlock();
        for (int spin = 0; spin < kSpins && version_.load(std::memory_order_acquire) == seen; ++spin) relax();
        lock.lock();
        // A timed wait, re-armed until the change: the untimed
        // condition_variable::wait is a libstdc++ 12 symbol (GLIBCXX_3.4.30)
        // that would raise the wheel's manylinux tag to glibc 2.35; the timed
        // one is inline (pthread_cond_clockwait, glibc 2.30).
        while (!changed_.wait_for(lock, std::chrono::milliseconds(50),
                                  [&] { return version_.load(std::memory_order_relaxed) != seen; })) {
        }
    }

    void publish_change() {
        version_.fetch_add(1, std::memory_order_release);
        changed_.notify_all();
    }

    // ~20-50 us of polling.
    static constexpr int kSpins = 16384;

    static void relax() {
#if defined(BLOOMKIT_GNU) && (defined(__x86_64__) || defined(__i386__))
        __builtin_ia32_pause();
#endif
    }

    const size_t total_;
    const size_t chunks_;
    const bool keep_places_;
    const size_t slot_size_;
    std::vector<Entry> entries_;    // per slot and part
    std::vector<uint32_t> places_;  // per slot and part: each key's place in its chunk
    size_t part_size_[kRingChunks][2] = {};
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<size_t> held_;   // the chunk each slot holds, once hashed
    size_t next_unclaimed_ = 0;  // the next chunk nobody hashes yet
    size_t probed_[2] = {0, 0};  // chunks each thread has probed
    bool abandoned_ = false;
    std::atomic<uint64_t> version_{0};
};

// Runs a ChunkRing of Entry over `keys` on two threads (probe's `places`
// argument is null unless keep_places). Returns false (nothing done) for a
// source two threads may not read, or when no helper thread starts.
template <class Entry, class Keys, class ToEntry, class Part, class Probe>
bool pipeline_on_two_threads(const Keys& keys, uint32_t seed, bool keep_places, const ToEntry& to_entry,
                             const Part& part, Probe&& probe) {
    if constexpr (!reads_concurrently<Keys>::value) {
        return false;
    } else {
        if (!detail::reads_concurrently_now(keys, 0)) return false;
        ChunkRing<Entry> ring(keys.size(), keep_places);
        return run_on_two_threads([&](int thread) { ring.run(thread, keys, seed, to_entry, part, probe); }, &ring);
    }
}

// The smallest 64-bit x with fast_range64(x, num_blocks) >= num_blocks / 2:
// the keys whose h1 is below it have their block in the lower half of the
// filter, the others in the upper half. fast_range64 is monotone in x, so a
// binary search finds it exactly (the top bit of h1 would not: for an odd
// number of blocks the middle block would belong to both halves).
inline uint64_t upper_half_start(uint64_t num_blocks) {
    const uint64_t mid = num_blocks / 2;
    uint64_t low = 0, high = ~uint64_t(0);  // fast_range64(high) = num_blocks - 1 >= mid
    while (low < high) {
        const uint64_t x = low + (high - low) / 2;
        if (fast_range64(x, num_blocks) >= mid)
            high = x;
        else
            low = x + 1;
    }
    return low;
}

}  // namespace bloomkit
