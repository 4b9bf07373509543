// The rotating Bloom filter: "seen in the last W" for a window of W seconds
// or W keys (window.hpp). A ring of g generations, each a Bloom filter of one
// geometry on the shared core (layouts.hpp, BloomFilter's batch loops);
// adds go to the current generation, lookups OR the live ones, and moving
// to a new generation clears the oldest slot of the ring in place.
//
// Sizing (sizing.hpp, window_generation_*): each generation holds the keys of
// one interval, ceil(capacity / (g - 1)) (for a key window at most the
// interval's n keys), at p_g = 1 - (1 - p)^(1/g), so all g live generations
// OR-ed stay at or below error_rate p.
//
// add() is exact test-and-set across the window: a key any live generation
// reports is "seen", and every add puts the key into the newest generation,
// so a key is remembered from its latest add (kept at least W, forgotten by
// W + I after it; window.hpp). A generation's count is the keys added to it
// that no live generation held (each add that returned false).
// Key windows count every key offered to add (repeats included): the key
// after `keys_seen` keys goes into generation keys_seen / n, also inside a
// batch. Time windows move on when the caller says the clock has
// (observe(now)); a clock that goes back moves nothing.
//
// All state lives in one word array -- a state block, then the g bit arrays
// on cache-line boundaries -- which is the frame's payload as is
// (docs/FORMAT.md, type tag 5).
//
// A file mapped "r+" (map_rotating, mapped_file.hpp) is shared by every
// process that maps it, and a rotation rewrites the state block and clears
// a slot, which atomic ORs cannot make safe. So every write (add, each
// chunk of a batch, the rotation before it, clear) runs under the file's
// writer lock (writer_lock.hpp); a writable mapping without one is refused.
// Readers take no lock. A rotation publishes in an order that keeps every
// instant a valid state, for readers and for a file whose writer is killed
// half-way (state words stored with release, loaded with acquire):
//   1. the slot's count is zeroed, then its generation marked empty (its
//      generation had expired: readers stop probing it);
//   2. its bits are cleared;
//   3. its new generation number is stored (not yet live: above current,
//      a "pending" slot that check_state accepts);
//   4. current is advanced to it.
// A time window that jumps several generations advances current one
// generation at a time, so a state block never names a generation above
// current. A key window's keys_seen is advanced only after the keys are in,
// so a writer killed between steps 4 and the keys leaves current one ahead
// of the keys seen: a valid state too (check_state).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bits.hpp"
#include "bloom.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "layouts.hpp"
#include "platform.hpp"
#include "sizing.hpp"
#include "storage.hpp"
#include "window.hpp"

namespace bloomkit {

// The constructor arguments of a rotating filter.
struct RotatingParams {
    uint64_t capacity = 0;    // keys per window
    double error_rate = 0.0;  // of the whole window
    WindowSpec window = WindowSpec::of_keys(1, kMinWindowGenerations);
    uint32_t seed = 0;
    Layout layout = Layout::Classic;

    void validate() const {
        require_count("capacity", capacity);
        require_open_unit("error_rate", error_rate);
        if (!valid_layout_code(static_cast<uint32_t>(layout)))
            throw std::invalid_argument("unknown layout code " + std::to_string(static_cast<uint32_t>(layout)));
    }

    // Keys one generation is sized for: one interval's share of capacity,
    // and for a key window never more than the n keys an interval has.
    uint64_t generation_capacity() const {
        const uint64_t share = window_generation_capacity(capacity, window.generations());
        return window.unit() == WindowUnit::Keys ? std::min(share, window.interval_keys()) : share;
    }
    double generation_error_rate() const { return window_generation_error_rate(error_rate, window.generations()); }

    // The geometry of every generation: the smallest of the layout whose
    // predicted rate at generation_capacity() is at most p_g (sizing.hpp).
    BloomGeometry generation_geometry() const {
        const uint64_t n = generation_capacity();
        const double p = generation_error_rate();
        const BloomSize size = layout_size_at_most(layout, n, p);
        check_layout_overhead(layout, n, p, size.num_bits);
        return BloomGeometry{size.num_bits, size.num_hashes, seed, n, p, layout};
    }
};

class RotatingBloomFilter {
  public:
    // Generation number of a slot that has never held one (and of `current`
    // before a time window's first add).
    static constexpr int64_t kNoGeneration = std::numeric_limits<int64_t>::min();
    // State block: current generation, keys offered so far, then per slot
    // its generation number and the keys inserted into it as new.
    static constexpr uint64_t kStateHeaderWords = 2;
    static constexpr uint64_t kLineWords = kCacheLine / sizeof(uint64_t);

    // Calls f(layout struct) for the generations' layout (layouts.hpp);
    // defined before its uses because the return type is deduced.
    template <class F>
    decltype(auto) visit_layout(F&& f) const {
        return with_layout(geometry_.layout, geometry_.num_bits, geometry_.num_hashes, std::forward<F>(f));
    }

    // Runs f() under the writer lock of a file mapped "r+" (every write to
    // a shared file; see the top of this file), directly otherwise. Defined
    // before its uses because the return type is deduced.
    template <class F>
    decltype(auto) with_writer_lock(F&& f) {
        WriterLock* const lock = storage_.writer_lock();
        if (lock == nullptr) return f();
        std::lock_guard<WriterLock> exclusive(*lock);
        return f();
    }

    explicit RotatingBloomFilter(const RotatingParams& params)
        : RotatingBloomFilter(params, checked(params).generation_geometry()) {}

    const RotatingParams& params() const { return params_; }
    const WindowSpec& window() const { return params_.window; }
    const BloomGeometry& generation_geometry() const { return geometry_; }
    uint32_t generations() const { return params_.window.generations(); }
    uint32_t seed() const { return params_.seed; }
    uint64_t nbytes() const { return storage_.size() * sizeof(uint64_t); }

    // The generation adds go to, as stored (kNoGeneration before a time
    // window's first add).
    int64_t stored_current() const { return static_cast<int64_t>(state_word(0)); }
    uint64_t keys_seen() const { return state_word(1); }
    int64_t slot_generation(uint32_t slot) const {
        return static_cast<int64_t>(state_word(kStateHeaderWords + 2 * uint64_t(slot)));
    }
    uint64_t slot_count(uint32_t slot) const { return state_word(count_word(slot)); }

    // The generation current for lookups: the stored one, or the clock's if
    // observe() has seen a later one (a time window between adds, or
    // mapped read-only).
    int64_t current() const { return std::max(stored_current(), observed_.load(std::memory_order_relaxed)); }

    // Tells a time window the clock reads `now` (seconds): lookups from now
    // on see the generations live at max(now, the latest time seen), and the
    // next add rotates to it. Thread-safe without a lock (a running maximum).
    void observe(double now) {
        if (window().unit() != WindowUnit::Seconds)
            throw std::invalid_argument("a key window has no clock: it moves on every " +
                                        std::to_string(window().interval_keys()) + " keys");
        const int64_t generation = window().generation_at(now);
        int64_t seen = observed_.load(std::memory_order_relaxed);
        while (generation > seen && !observed_.compare_exchange_weak(seen, generation, std::memory_order_relaxed)) {
        }
    }

    // Whether slot `slot` holds a generation live at `current`.
    bool slot_live(uint32_t slot, int64_t current) const {
        const int64_t generation = slot_generation(slot);
        return generation != kNoGeneration && window().is_live(generation, current);
    }

    // Bits set in slot `slot`'s generation.
    uint64_t slot_set_bits(uint32_t slot) const {
        uint64_t total = 0;
        const uint64_t* words = slot_words(slot);
        for (uint64_t w = 0; w < generation_words_; ++w) total += platform::popcount64(words[w]);
        return total;
    }

    // Adds that returned false into the live generations: the window's new
    // keys (a key added again after its generation expired counts again;
    // one seen again within the window does not).
    uint64_t count() const {
        const int64_t now = current();
        uint64_t total = 0;
        for (uint32_t s = 0; s < generations(); ++s)
            if (slot_live(s, now)) total += slot_count(s);
        return total;
    }

    bool contains(Hash128 h) const {
        const int64_t now = current();
        return visit_layout([&](const auto& layout) {
            for (uint32_t s = 0; s < generations(); ++s)
                if (slot_live(s, now) && layout.contains(slot_words(s), h)) return true;
            return false;
        });
    }

    void prefetch(Hash128 h) const {
        const int64_t now = current();
        visit_layout([&](const auto& layout) {
            for (uint32_t s = 0; s < generations(); ++s)
                if (slot_live(s, now)) layout.prefetch(slot_words(s), h);
        });
    }

    // Test-and-set across the window: true if some live generation already
    // reported the key. The key goes into the newest generation either way,
    // so it stays for a whole window after its latest add (were it skipped
    // when an older generation reports it, a false positive there would
    // leave the key in no generation once that one expired: a false
    // negative inside the window).
    bool add(Hash128 h) {
        writable();
        return with_writer_lock([&] {
            rotate_for_next_keys();
            const int64_t now = stored_current();
            const uint32_t newest = window().slot(now);
            bool present = false;
            visit_layout([&](const auto& layout) {
                for (uint32_t s = 0; s < generations() && !present; ++s)
                    if (s != newest && slot_live(s, now) && layout.contains(slot_words(s), h)) present = true;
                present = (layout.add(slot_words(newest), h) == 0) || present;
            });
            if (!present) set_state(count_word(newest), slot_count(newest) + 1);
            set_state(1, keys_seen() + 1);
            return present;
        });
    }

    // Batch insert with the sequential semantics of add(), rotating inside
    // the batch exactly where single adds would (key windows). Per run of
    // keys within one generation: every older live generation is looked up
    // with BloomFilter's batch loop, then the run goes through the
    // test-and-set batch loop of the newest, in order.
    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present) {
        writable();
        std::vector<uint8_t> older;
        std::vector<uint8_t> scratch;
        visit_layout([&](const auto& layout) {
            // The writer lock of a shared file is held for one chunk at a
            // time, never while keys are hashed (hashing may take the GIL).
            hash_chunks(keys, seed(), [&](size_t first, const Hash128* digests, size_t count) {
                with_writer_lock([&] {
                    size_t done = 0;
                    while (done < count) {
                        rotate_for_next_keys();
                        const size_t run =
                            static_cast<size_t>(std::min<uint64_t>(count - done, keys_left_in_generation()));
                        add_run(layout, digests + done, run, was_present ? was_present + first + done : nullptr, older,
                                scratch);
                        done += run;
                    }
                });
            });
        });
    }

    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        const int64_t now = current();
        std::vector<uint8_t> scratch;
        visit_layout([&](const auto& layout) {
            hash_chunks(keys, seed(), [&](size_t first, const Hash128* digests, size_t count) {
                uint8_t* out = present + first;
                std::fill(out, out + count, uint8_t(0));
                scratch.resize(count);
                for (uint32_t s = 0; s < generations(); ++s) {
                    if (!slot_live(s, now)) continue;
                    BloomFilter::contains_digests(layout, slot_words(s), digests, count, scratch.data());
                    for (size_t j = 0; j < count; ++j) out[j] |= scratch[j];
                }
            });
        });
    }

    // Empty, as new: no generation, no keys seen.
    void clear() {
        writable();
        with_writer_lock([&] {
            std::fill(storage_.begin(), storage_.end(), uint64_t(0));
            init_state();
        });
        observed_.store(kNoGeneration, std::memory_order_relaxed);
    }

    // Drops the storage (and with it the last reference to a mapping);
    // every later use raises ClosedError.
    void close() {
        storage_ = WordStorage();
        closed_ = true;
    }
    bool closed() const { return closed_; }

    bool operator==(const RotatingBloomFilter& other) const {
        require_open();
        other.require_open();
        const RotatingParams& a = params_;
        const RotatingParams& b = other.params_;
        return a.capacity == b.capacity && a.error_rate == b.error_rate && a.window == b.window && a.seed == b.seed &&
               a.layout == b.layout && geometry_.num_bits == other.geometry_.num_bits &&
               geometry_.num_hashes == other.geometry_.num_hashes && storage_ == other.storage_;
    }

    // --- serialization (docs/FORMAT.md, type tag 5) ---

    static constexpr size_t kParamsSize = 64;

    void write_params(ByteWriter& w) const { write_params(w, params_, geometry_); }

    static void write_params(ByteWriter& w, const RotatingParams& params, const BloomGeometry& geometry) {
        w.u64(params.capacity);
        w.f64(params.error_rate);
        w.u32(params.seed);
        w.u32(static_cast<uint32_t>(params.layout));
        w.u32(static_cast<uint32_t>(params.window.unit()));
        w.u32(params.window.generations());
        w.u64(params.window.keys());
        w.f64(params.window.seconds());
        w.u64(geometry.num_bits);
        w.u32(geometry.num_hashes);
        w.u32(0);  // reserved
    }

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        require_open();
        write_frame(
            sink, FilterType::RotatingBloom, nbytes(), [&](ByteWriter& w) { write_params(w); },
            [&](ByteWriter& w) { w.words(storage_.data(), storage_.size()); });
    }

    static constexpr FilterType kFrameType = FilterType::RotatingBloom;

    // The params (each checked; the generations' geometry re-derived from
    // them must match the stored one), the payload length against the
    // words they need, and only then the payload, read straight into the
    // storage; then the state block and each generation's padding.
    static RotatingBloomFilter read_from(FrameReader& frame) {
        const Stored stored = read_stored(frame.version(), frame.params(), frame.payload_length());
        RotatingBloomFilter filter(stored.params, stored.geometry);
        frame.payload().words(filter.storage_.data(), filter.storage_.size(), "payload");
        filter.check_state(filter.state());
        filter.check_padding();
        return filter;
    }

    // A filter over the payload of a validated frame in place (a mapped
    // file: map_rotating); `wrap(words, count)` makes the WordStorage.
    // The same checks as read_from; the state block is checked on a
    // consistent snapshot (stable_state), since writers in other processes
    // may be rotating while it is read.
    template <class Wrap>
    static RotatingBloomFilter in_place(const Frame& frame, Wrap&& wrap) {
        const Stored stored =
            read_stored(frame.version, ByteReader(frame.params, frame.params_length), frame.payload_length);
        auto* payload = reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(frame.payload));
        RotatingBloomFilter filter(stored.params, stored.geometry, wrap(payload, stored.words));
        filter.check_state(filter.stable_state().data());
        filter.check_padding();
        return filter;
    }

    // What a new file for an empty filter of `params` starts with: header,
    // params, padding and the initial state block (the generations' bits
    // are the zeros that follow), and the whole file's size.
    struct FilePrefix {
        std::vector<uint8_t> bytes;
        uint64_t file_size;
    };
    static FilePrefix file_prefix(const RotatingParams& params) {
        params.validate();
        const BloomGeometry geometry = params.generation_geometry();
        const uint32_t g = params.window.generations();
        const uint64_t payload = total_bytes(g, geometry.num_bits);
        std::vector<uint8_t> param_bytes;
        {
            ByteWriter w(param_bytes);
            write_params(w, params, geometry);
        }
        FilePrefix prefix;
        ByteWriter w(prefix.bytes);
        write_frame_prefix(w, FilterType::RotatingBloom, param_bytes, payload);
        const uint64_t header = prefix.bytes.size();
        const std::vector<uint64_t> state = initial_state(params.window);
        w.words(state.data(), state.size());
        prefix.file_size = header + payload + kChecksumSize;
        return prefix;
    }

    static RotatingBloomFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<RotatingBloomFilter>(source);
    }

    RotatingBloomFilter(const RotatingBloomFilter& other)
        : params_(other.params_),
          geometry_(other.geometry_),
          generation_words_(other.generation_words_),
          storage_((other.require_open(), other.storage_)),
          observed_(other.observed_.load(std::memory_order_relaxed)) {}
    RotatingBloomFilter(RotatingBloomFilter&& other) noexcept
        : params_(other.params_),
          geometry_(other.geometry_),
          generation_words_(other.generation_words_),
          storage_(std::move(other.storage_)),
          observed_(other.observed_.load(std::memory_order_relaxed)),
          closed_(other.closed_) {}
    RotatingBloomFilter& operator=(const RotatingBloomFilter&) = delete;
    RotatingBloomFilter& operator=(RotatingBloomFilter&&) = delete;

    // Bytes of the payload for g generations of num_bits bits (for messages
    // and the bindings' sizing figures).
    static uint64_t total_bytes(uint32_t generations, uint64_t num_bits) {
        return (state_words_for(generations) + padded_words(BitArray::words_for(num_bits)) * generations) *
               sizeof(uint64_t);
    }

  private:
    RotatingBloomFilter(const RotatingParams& params, const BloomGeometry& geometry)
        : params_(params),
          geometry_(geometry),
          generation_words_(padded_words(BitArray::words_for(geometry.num_bits))) {
        const uint64_t words = state_words_for(generations()) + generation_words_ * generations();
        storage_ = checked_words(words, "rotating filter");
        init_state();
    }

    // Over words someone else holds (a mapping), state as stored.
    RotatingBloomFilter(const RotatingParams& params, const BloomGeometry& geometry, WordStorage borrowed)
        : params_(params),
          geometry_(geometry),
          generation_words_(padded_words(BitArray::words_for(geometry.num_bits))),
          storage_(std::move(borrowed)) {
        if (storage_.size() != state_words_for(generations()) + generation_words_ * generations())
            throw std::logic_error("borrowed storage has the wrong size");
    }

    // The checked params of a frame and the payload words they need.
    struct Stored {
        RotatingParams params;
        BloomGeometry geometry;
        uint64_t words;
    };
    static Stored read_stored(uint16_t version, ByteReader r, uint64_t payload_length) {
        if (version < 2) throw FormatError("a RotatingBloomFilter frame has format version 2");
        RotatingParams params;
        params.capacity = r.u64("capacity");
        params.error_rate = r.f64("error_rate");
        params.seed = r.u32("seed");
        const uint32_t layout = r.u32("layout");
        const uint32_t unit = r.u32("window unit");
        const uint32_t generations = r.u32("generations");
        const uint64_t window_keys = r.u64("window keys");
        const double window_seconds = r.f64("window seconds");
        const uint64_t num_bits = r.u64("num_bits");
        const uint32_t num_hashes = r.u32("num_hashes");
        if (r.u32("reserved") != 0) throw FormatError("invalid stored parameters: reserved field is not zero");
        r.expect_end("params");
        if (!valid_layout_code(layout))
            throw FormatError("invalid stored parameters: unknown layout code " + std::to_string(layout));
        params.layout = static_cast<Layout>(layout);
        try {
            if (unit == static_cast<uint32_t>(WindowUnit::Keys)) {
                if (window_seconds != 0.0) throw std::invalid_argument("a key window has window seconds 0");
                params.window = WindowSpec::of_keys(window_keys, generations);
            } else if (unit == static_cast<uint32_t>(WindowUnit::Seconds)) {
                if (window_keys != 0) throw std::invalid_argument("a time window has window keys 0");
                params.window = WindowSpec::of_seconds(window_seconds, generations);
            } else {
                throw std::invalid_argument("unknown window unit " + std::to_string(unit));
            }
        } catch (const std::invalid_argument& e) {
            throw FormatError(std::string("invalid stored parameters: ") + e.what());
        }
        check_stored(params);
        BloomGeometry geometry{
            num_bits,     num_hashes, params.seed, params.generation_capacity(), params.generation_error_rate(),
            params.layout};
        check_stored(geometry);
        const uint64_t generation_words = padded_words(BitArray::words_for(num_bits));
        const uint64_t state_words = state_words_for(generations);
        const uint64_t payload_words = payload_length / sizeof(uint64_t);
        const bool fits = payload_length % sizeof(uint64_t) == 0 && payload_words >= state_words &&
                          generation_words <= (payload_words - state_words) / generations;
        if (!fits || state_words + generation_words * generations != payload_words)
            throw FormatError("payload is " + std::to_string(payload_length) + " bytes but " +
                              std::to_string(generations) + " generations of num_bits " + std::to_string(num_bits) +
                              (fits ? " need " + std::to_string(total_bytes(generations, num_bits)) : " need more"));
        return Stored{params, geometry, payload_words};
    }

    static const RotatingParams& checked(const RotatingParams& params) {
        params.validate();
        return params;
    }

    static uint64_t padded_words(uint64_t words) { return (words + kLineWords - 1) / kLineWords * kLineWords; }
    static uint64_t state_words_for(uint32_t generations) {
        return padded_words(kStateHeaderWords + 2 * uint64_t(generations));
    }
    static uint64_t count_word(uint32_t slot) { return kStateHeaderWords + 2 * uint64_t(slot) + 1; }

    const uint64_t* state() const {
        require_open();
        return storage_.data();
    }
    uint64_t* mutable_state() {
        require_open();
        return storage_.data();
    }
    // One word of the state block, as other processes may be writing it
    // (acquire), and its store (release): the order of a rotation above.
    uint64_t state_word(uint64_t i) const { return platform::load_acquire64(state() + i); }
    void set_state(uint64_t i, uint64_t value) { platform::store_release64(mutable_state() + i, value); }
    static uint64_t generation_word(uint32_t slot) { return kStateHeaderWords + 2 * uint64_t(slot); }

    void require_open() const {
        if (closed_) throw ClosedError("I/O operation on closed filter");
    }

    const uint64_t* slot_words(uint32_t slot) const {
        return storage_.data() + state_words_for(generations()) + generation_words_ * slot;
    }
    uint64_t* slot_words(uint32_t slot) {
        return storage_.data() + state_words_for(generations()) + generation_words_ * slot;
    }

    void writable() const {
        require_open();
        if (storage_.access() == StorageAccess::ReadOnly)
            throw ReadOnlyError("filter is read-only (opened with mode 'r'); open it with mode 'r+' to add keys");
    }

    // A key window starts in generation 0; a time window in none until its
    // first add (the clock decides which).
    void init_state() {
        const std::vector<uint64_t> initial = initial_state(window());
        std::copy(initial.begin(), initial.end(), mutable_state());
    }

    // The state block of an empty filter (padding included).
    static std::vector<uint64_t> initial_state(const WindowSpec& window) {
        std::vector<uint64_t> s(state_words_for(window.generations()), 0);
        s[0] = window.unit() == WindowUnit::Keys ? 0 : static_cast<uint64_t>(kNoGeneration);
        for (uint32_t slot = 0; slot < window.generations(); ++slot)
            s[generation_word(slot)] = static_cast<uint64_t>(kNoGeneration);
        if (window.unit() == WindowUnit::Keys) s[generation_word(0)] = 0;  // slot 0 holds generation 0
        return s;
    }

    // Makes the generation the next key belongs to current: for a key
    // window the one after keys_seen keys, for a time window the latest
    // observed. Each generation passed over takes its ring slot, cleared;
    // after g of them every slot has been taken, so a jump far ahead costs
    // at most g clears.
    void rotate_for_next_keys() {
        const int64_t target = window().unit() == WindowUnit::Keys ? window().generation_after(keys_seen()) : current();
        const int64_t stored = stored_current();
        if (target == kNoGeneration)
            throw std::invalid_argument("a time window needs the clock before its first add (observe(now))");
        if (stored != kNoGeneration && target <= stored) return;
        const int64_t g = static_cast<int64_t>(generations());
        const int64_t first = stored == kNoGeneration ? target : std::max(stored + 1, target - g + 1);
        // Before a time window's first generation every slot is empty, but
        // for one a writer killed in that first rotation numbered (step 3).
        if (stored == kNoGeneration)
            for (uint32_t slot = 0; slot < generations(); ++slot)
                set_state(generation_word(slot), static_cast<uint64_t>(kNoGeneration));
        // Steps 1-4 of a rotation (top of this file), one generation at a time.
        for (int64_t generation = first; generation <= target; ++generation) {
            const uint32_t slot = window().slot(generation);
            set_state(count_word(slot), 0);
            set_state(generation_word(slot), static_cast<uint64_t>(kNoGeneration));
            std::fill(slot_words(slot), slot_words(slot) + generation_words_, uint64_t(0));
            set_state(generation_word(slot), static_cast<uint64_t>(generation));
            set_state(0, static_cast<uint64_t>(generation));
        }
    }

    // Keys until the current generation of a key window ends (unbounded for
    // a time window: its generation changes only between calls).
    uint64_t keys_left_in_generation() const {
        if (window().unit() != WindowUnit::Keys) return std::numeric_limits<uint64_t>::max();
        const uint64_t n = window().interval_keys();
        return n - keys_seen() % n;
    }

    template <class LayoutT>
    void add_run(const LayoutT& layout, const Hash128* digests, size_t count, uint8_t* was_present,
                 std::vector<uint8_t>& older, std::vector<uint8_t>& scratch) {
        const int64_t now = stored_current();
        const uint32_t newest = window().slot(now);
        older.assign(count, 0);
        scratch.resize(count);
        for (uint32_t s = 0; s < generations(); ++s) {
            if (s == newest || !slot_live(s, now)) continue;
            BloomFilter::contains_digests(layout, slot_words(s), digests, count, scratch.data());
            for (size_t j = 0; j < count; ++j) older[j] |= scratch[j];
        }
        BloomFilter::add_digests<PlainOr>(layout, slot_words(newest), digests, count, scratch.data());
        uint64_t inserted = 0;
        for (size_t j = 0; j < count; ++j) {
            const uint8_t present = older[j] | scratch[j];
            inserted += present == 0;
            if (was_present) was_present[j] = present;
        }
        set_state(count_word(newest), slot_count(newest) + inserted);
        set_state(1, keys_seen() + count);
    }

    // The state block `s` of a loaded payload: the current generation in
    // range and consistent with the key count; every slot empty or holding
    // a live generation of its own ring position; padding clear.
    void check_state(const uint64_t* s) const {
        const int64_t current = static_cast<int64_t>(s[0]);
        const uint64_t seen = s[1];
        auto generation_of = [&](uint32_t slot) { return static_cast<int64_t>(s[generation_word(slot)]); };
        auto refuse = [](const std::string& why) { throw FormatError("invalid stored state: " + why); };
        if (window().unit() == WindowUnit::Keys) {
            // Rotation happens before a key goes in, so `current` is the
            // generation of the last key seen (0 before any), or the next
            // one when a writer died between a rotation and its keys.
            const int64_t last = seen == 0 ? 0 : window().generation_after(seen - 1);
            if (current != last && current != window().generation_after(seen))
                refuse("current generation " + std::to_string(current) + " does not follow from " +
                       std::to_string(seen) + " keys seen");
        } else if (current != kNoGeneration && !(std::fabs(static_cast<double>(current)) < kMaxGenerationNumber)) {
            refuse("current generation " + std::to_string(current) + " is out of range");
        }
        for (uint32_t slot = 0; slot < generations(); ++slot) {
            const int64_t generation = generation_of(slot);
            const uint64_t count = s[count_word(slot)];
            const std::string where = "slot " + std::to_string(slot) + ": ";
            if (generation == kNoGeneration) {
                if (count != 0) refuse(where + "an empty slot has a key count");
                continue;
            }
            // Step 3 of a rotation whose writer died before step 4: the next
            // generation, cleared and empty, not yet live.
            const bool pending = (current == kNoGeneration || generation == current + 1) && count == 0 &&
                                 window().slot(generation) == slot;
            if (pending) continue;
            if (current == kNoGeneration || !window().is_live(generation, current) || window().slot(generation) != slot)
                refuse(where + "generation " + std::to_string(generation) + " is not live in this slot");
            if (window().unit() == WindowUnit::Keys && count > window().interval_keys())
                refuse(where + "key count " + std::to_string(count) + " exceeds the " +
                       std::to_string(window().interval_keys()) + " keys of a generation");
        }
        if (current != kNoGeneration && generation_of(window().slot(current)) != current)
            refuse("the current generation has no slot");
        for (uint64_t w = kStateHeaderWords + 2 * uint64_t(generations()); w < state_words_for(generations()); ++w)
            if (s[w] != 0) refuse("padding after the state block is not zero");
    }

    // Each generation's bits beyond num_bits and its padding words clear
    // (no writer ever sets them, so a shared file needs no snapshot).
    void check_padding() const {
        const uint64_t used = BitArray::words_for(geometry_.num_bits);
        const uint64_t tail_bits = geometry_.num_bits % 64;
        for (uint32_t slot = 0; slot < generations(); ++slot) {
            const uint64_t* words = slot_words(slot);
            if (tail_bits != 0 && (words[used - 1] >> tail_bits) != 0)
                throw FormatError("bits set beyond num_bits in generation slot " + std::to_string(slot));
            for (uint64_t w = used; w < generation_words_; ++w)
                if (words[w] != 0)
                    throw FormatError("padding after generation slot " + std::to_string(slot) + " is not zero");
        }
    }

    // A copy of the state block that no writer changed while it was read:
    // read until two reads in a row are equal. Every state word only grows
    // between rotations and generation numbers only grow, so equal reads
    // are one instant's state, never a mix of a rotation's steps. A block
    // that keeps changing for kStableStateTimeout (writers rotating nonstop)
    // is refused with an error that says so, never called corrupt.
    static constexpr std::chrono::milliseconds kStableStateTimeout{2000};
    std::vector<uint64_t> stable_state() const {
        const uint64_t words = state_words_for(generations());
        std::vector<uint64_t> last(words), now(words);
        auto read = [&](std::vector<uint64_t>& out) {
            for (uint64_t i = 0; i < words; ++i) out[i] = state_word(i);
        };
        read(last);
        const auto deadline = std::chrono::steady_clock::now() + kStableStateTimeout;
        for (;;) {
            read(now);
            if (now == last) return now;
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error(
                    "the state block kept changing for 2 s while it was read (writers rotating); "
                    "open the file again");
            last.swap(now);
        }
    }

    RotatingParams params_;
    BloomGeometry geometry_;
    uint64_t generation_words_;
    WordStorage storage_;
    // The latest clock generation observe() has seen (time windows).
    std::atomic<int64_t> observed_{kNoGeneration};
    bool closed_ = false;
};

// A RotatingBloomFilter over the payload of a mapped file (mapped_file.hpp's
// MappedFile), in place: every length, parameter and the state block
// checked as for a load, the checksum on request. A writable mapping must
// hold the file's writer lock (MappedFile::lock_writers): every write to a
// shared rotating file runs under it (the top of this file).
template <class File>
RotatingBloomFilter map_rotating(const std::shared_ptr<File>& file, Checksum checksum) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    throw std::runtime_error("file-backed filters need a little-endian host (the payload is little-endian words)");
#endif
    if (file->writable() && file->writer_lock() == nullptr)
        throw std::logic_error("a rotating filter file is written under its writer lock: call lock_writers() first");
    const Frame frame =
        parse_mappable_frame(file->data(), static_cast<size_t>(file->size()), FilterType::RotatingBloom, checksum);
    RotatingBloomFilter filter = RotatingBloomFilter::in_place(frame, [&](uint64_t* words, uint64_t count) {
        return WordStorage::borrow(words, count, file, file->access(), file->writer_lock());
    });
    file->begin_writing();
    return filter;
}

// A new file for an empty RotatingBloomFilter of `params` (the caller's
// empty temporary file, open read-write at `fd`): its disk space reserved,
// header, params and the initial state block written, then mapped
// writable; lock_writers() and map_rotating() make the filter. Nothing of
// the size of the filter is allocated in memory.
template <class File>
std::shared_ptr<File> create_rotating_file(int fd, const std::string& path, const RotatingParams& params) {
    const RotatingBloomFilter::FilePrefix prefix = RotatingBloomFilter::file_prefix(params);
    return File::create(fd, path, prefix.bytes, prefix.file_size);
}

}  // namespace bloomkit
