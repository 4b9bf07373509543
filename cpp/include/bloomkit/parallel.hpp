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
// and inserts exactly the keys whose block is in its half. The keys of a
// chunk are hashed once, by both threads into one digest buffer; a barrier
// then hands the whole buffer to both, and each inserts its own keys in key
// order. A key always lands in the same half, so a repeated key still
// reports "present" the second time, as on one thread.
//
// Only key sources that are pure views (no mutable cache) are read by two
// threads at once (reads_concurrently). Sources that hash through a callback
// a block at a time (Python objects, keyed hashing: BlockDigestKeys) are
// hashed by the calling thread alone, and only their probes are split.
#pragma once

#include <algorithm>
#include <atomic>
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
#include <vector>

#include "hash.hpp"
#include "keys.hpp"

namespace bloomkit {

// Batches smaller than this stay on one thread. A thread start costs
// ~30-50 us; 65,536 keys take ~1 ms on one core at 1e7-key filter sizes, so
// the start costs under 5 % of what the second core saves.
constexpr size_t kMinParallelKeys = size_t(1) << 16;

// Keys hashed per step of the two-thread insert pipeline: 16,384 digests
// (256 KiB, two buffers) stay in the L2 cache between hashing and probing,
// and a barrier per step (~1 us) is under 1 % of the step.
constexpr size_t kParallelChunk = 16384;

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

// Keys [begin, begin + count) of a source, numbered from 0.
template <class Keys>
class KeyRange {
  public:
    KeyRange(const Keys& keys, size_t begin, size_t count) : keys_(keys), begin_(begin), count_(count) {}
    size_t size() const { return count_; }
    Hash128 hash(size_t i, uint32_t seed) const { return keys_.hash(begin_ + i, seed); }

  private:
    const Keys& keys_;
    size_t begin_;
    size_t count_;
};
template <class Keys>
struct reads_concurrently<KeyRange<Keys>> : reads_concurrently<Keys> {};

// A barrier for exactly two threads, reusable step after step. A waiter
// spins briefly (the other thread is usually microseconds behind), then
// sleeps on a condition variable, so a descheduled partner costs no CPU.
// Either thread may abandon it (on an exception); every wait then returns
// false and the other thread stops.
class PairBarrier {
  public:
    bool arrive_and_wait() {
        uint64_t generation;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (abandoned_) return false;
            generation = generation_;
            if (++arrived_ == 2) {
                arrived_ = 0;
                ++generation_;
                published_.store(generation_, std::memory_order_release);
                wake_.notify_one();
                return true;
            }
        }
        for (int spin = 0; spin < kSpins; ++spin) {
            if (published_.load(std::memory_order_acquire) != generation) break;
            relax();
        }
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != generation || abandoned_; });
        return generation_ != generation;
    }

    void abandon() {
        std::lock_guard<std::mutex> lock(mutex_);
        abandoned_ = true;
        wake_.notify_all();
    }

  private:
    // ~20-40 us of polling before sleeping.
    static constexpr int kSpins = 8192;

    static void relax() {
#if defined(BLOOMKIT_GNU) && (defined(__x86_64__) || defined(__i386__))
        __builtin_ia32_pause();
#endif
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    unsigned arrived_ = 0;
    uint64_t generation_ = 0;
    bool abandoned_ = false;
    std::atomic<uint64_t> published_{0};
};

// At most this many helper threads run at once in the process: one per
// further CPU. Batches that overlap (two Python threads each inserting a
// large batch) would otherwise put four threads on two cores, and a thread
// waiting at a barrier for a descheduled partner loses its time slice.
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
// either side abandons `barrier` (if any), so the other side stops at its
// next wait, and is rethrown here once both have finished.
template <class Work>
bool run_on_two_threads(Work&& work, PairBarrier* barrier = nullptr) {
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
            if (barrier) barrier->abandon();
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
    // next barrier and join it before that unwinding goes on (a joinable
    // std::thread destroyed would terminate the process).
    try {
        side(0);
    } catch (abi::__forced_unwind&) {
        if (barrier) barrier->abandon();
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
        const size_t mid = keys.size() / 2;
        return run_on_two_threads([&](int thread) {
            const size_t begin = thread == 0 ? 0 : mid;
            const size_t end = thread == 0 ? mid : keys.size();
            lookup(KeyRange<Keys>(keys, begin, end - begin), present + begin);
        });
    }
}

// The two-thread pipeline: hashes `keys` kParallelChunk at a time into one
// of two digest buffers (both threads, half a chunk each, when the source
// reads concurrently; otherwise the calling thread alone), then, after a
// barrier, calls probe(thread, first, digests, count) on both threads for
// that chunk. With two buffers, hashing chunk c + 1 overlaps nothing that
// still reads chunk c - 1 (that finished before chunk c's barrier), so one
// barrier per chunk suffices. Returns false (nothing done) when no helper
// thread starts.
template <class Keys, class Probe>
bool pipeline_on_two_threads(const Keys& keys, uint32_t seed, Probe&& probe) {
    const size_t total = keys.size();
    std::vector<Hash128> buffers(2 * std::min(total, kParallelChunk));
    PairBarrier barrier;
    return run_on_two_threads(
        [&](int thread) {
            size_t step = 0;
            for (size_t first = 0; first < total; first += kParallelChunk, ++step) {
                const size_t count = std::min(kParallelChunk, total - first);
                Hash128* digests = buffers.data() + (step % 2) * kParallelChunk;
                size_t begin = 0, end = count;
                if (reads_concurrently<Keys>::value) {
                    begin = thread == 0 ? 0 : count / 2;
                    end = thread == 0 ? count / 2 : count;
                } else if (thread == 1) {
                    end = 0;
                }
                for (size_t j = begin; j < end; ++j) digests[j] = keys.hash(first + j, seed);
                if (!barrier.arrive_and_wait()) return;
                probe(thread, first, static_cast<const Hash128*>(digests), count);
            }
        },
        &barrier);
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
