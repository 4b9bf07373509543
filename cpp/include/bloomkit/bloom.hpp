// The standard Bloom filter (Bloom, 1970): m bits, k probe positions per key,
// in one of three layouts (layouts.hpp): classic (k positions anywhere),
// blocked512 (all k in one 64-byte line) or split_block (8 bits in one
// 256-bit block, the Parquet scheme).
//
// Positions come from one MurmurHash3_x64_128 digest, so a key costs one
// hash regardless of k. Sizing and predicted rates: sizing.hpp.
#pragma once

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "batch_probe.hpp"
#include "bits.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "layouts.hpp"
#include "parallel.hpp"
#include "prefetch.hpp"
#include "sizing.hpp"

namespace bloomkit {

// Everything that fixes where a key's bits are, plus the sizing request the
// filter was built for. Shared by the plain, counting and scalable filters.
struct BloomGeometry {
    uint64_t num_bits = 0;
    uint32_t num_hashes = 0;
    uint32_t seed = 0;
    uint64_t capacity = 0;
    double error_rate = 0.0;
    Layout layout = Layout::Classic;

    void validate() const {
        require_count("num_bits", num_bits);
        if (num_hashes < 1 || num_hashes > kMaxHashes)
            throw std::invalid_argument("num_hashes must be in [1, " + std::to_string(kMaxHashes) + "], got " +
                                        std::to_string(num_hashes));
        require_count("capacity", capacity);
        require_open_unit("error_rate", error_rate);
        if (!valid_layout_code(static_cast<uint32_t>(layout)))
            throw std::invalid_argument("unknown layout code " + std::to_string(static_cast<uint32_t>(layout)));
        const uint64_t block = layout_block_bits(layout);
        if (num_bits % block != 0)
            throw std::invalid_argument(std::string("num_bits of a ") + layout_name(layout) +
                                        " filter must be a multiple of " + std::to_string(block) + ", got " +
                                        std::to_string(num_bits));
        if (layout == Layout::SplitBlock && num_hashes != kSplitBlockHashes)
            throw std::invalid_argument("a split_block filter has num_hashes 8, got " + std::to_string(num_hashes));
    }

    // Two filters can be merged bit-for-bit only when every key maps to the
    // same positions in both.
    bool compatible(const BloomGeometry& other) const {
        return num_bits == other.num_bits && num_hashes == other.num_hashes && seed == other.seed &&
               layout == other.layout;
    }

    // The 32 bytes common to every format version (docs/FORMAT.md, type 1).
    void write(ByteWriter& w) const {
        w.u64(num_bits);
        w.u32(num_hashes);
        w.u32(seed);
        w.u64(capacity);
        w.f64(error_rate);
    }

    // Reads those 32 bytes, unchecked; the layout comes from elsewhere (the
    // version 2 params, or classic for version 1). `r` is a ByteReader
    // (params) or a StreamReader (a scalable filter's slice records).
    template <class Reader>
    static BloomGeometry read_fields(Reader& r) {
        BloomGeometry g;
        g.num_bits = r.u64("num_bits");
        g.num_hashes = r.u32("num_hashes");
        g.seed = r.u32("seed");
        g.capacity = r.u64("capacity");
        g.error_rate = r.f64("error_rate");
        return g;
    }

    static BloomGeometry read(ByteReader& r, Layout layout) {
        BloomGeometry g = read_fields(r);
        g.layout = layout;
        check_stored(g);
        return g;
    }

    // The layout field of version 2 params: u32 code, u32 reserved (zero).
    static Layout read_layout(ByteReader& r) {
        const uint32_t code = r.u32("layout");
        if (!valid_layout_code(code))
            throw FormatError("invalid stored parameters: unknown layout code " + std::to_string(code));
        if (r.u32("reserved") != 0) throw FormatError("invalid stored parameters: reserved field is not zero");
        return static_cast<Layout>(code);
    }
    static void write_layout(ByteWriter& w, Layout layout) {
        w.u32(static_cast<uint32_t>(layout));
        w.u32(0);
    }
};

// Row-major (count x k) bit indices of every key of the batch, from the
// geometry alone: no bit array needed (bloomkit.redis's clients keep none).
template <class Keys>
void geometry_positions(const BloomGeometry& geometry, const Keys& keys, uint64_t* out) {
    const uint32_t k = geometry.num_hashes;
    with_layout(geometry.layout, geometry.num_bits, k, [&](const auto& layout) {
        hash_chunks(keys, geometry.seed, [&](size_t first, const Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) {
                uint64_t* row = out + (first + j) * k;
                layout.for_each_position(digests[j], [&](uint64_t bit) { *row++ = bit; });
            }
        });
    });
}

class BloomFilter {
  public:
    // The prefetch step of every batch loop (prefetch.hpp); defined before
    // its uses because clang resolves a deduced return type at the call.
    auto prefetcher() const {
        return [this](Hash128 h) { prefetch(h); };
    }

    explicit BloomFilter(const BloomGeometry& geometry) : geometry_(geometry) {
        geometry_.validate();
        bits_ = BitArray(geometry_.num_bits);
    }

    // A filter over existing bits (e.g. derived from a counting filter's
    // non-zero counters, or borrowed memory); `bits` must hold exactly
    // num_bits bits. Borrowed bits are not counted here: for a mapped file
    // that would read all of it (mapped_file.hpp), and other processes may
    // set bits at any time, so set_bits() counts them when asked.
    BloomFilter(const BloomGeometry& geometry, BitArray bits) : geometry_(geometry), bits_(std::move(bits)) {
        geometry_.validate();
        if (bits_.num_bits() != geometry_.num_bits || !bits_.padding_is_clear())
            throw std::invalid_argument("bit array does not match num_bits");
        if (bits_.owned()) set_bits_ = bits_.popcount();
    }

    // A copy is always an ordinary in-memory filter (WordStorage copies are
    // owned), so it needs a count of its set bits even when the original,
    // a mapped filter, does not track one. Copying a closed filter raises.
    BloomFilter(const BloomFilter& other)
        : geometry_(other.geometry_), bits_(other.read_bits()), set_bits_(other.set_bits()) {}
    BloomFilter& operator=(const BloomFilter& other) {
        if (this != &other) *this = BloomFilter(other);
        return *this;
    }
    BloomFilter(BloomFilter&&) = default;
    BloomFilter& operator=(BloomFilter&&) = default;

    const BloomGeometry& geometry() const { return geometry_; }
    uint64_t num_bits() const { return geometry_.num_bits; }
    uint32_t num_hashes() const { return geometry_.num_hashes; }
    uint32_t seed() const { return geometry_.seed; }
    Layout layout() const { return geometry_.layout; }
    uint64_t nbytes() const { return bits_.nbytes(); }
    uint64_t set_bits() const {
        const BitArray& bits = read_bits();
        return bits.owned() ? set_bits_ : bits.popcount();
    }
    bool closed() const { return closed_; }
    bool read_only() const { return bits_.access() == StorageAccess::ReadOnly; }

    // Drops the bits (and with them the last reference to a mapping, which
    // unmaps it); every later use raises ClosedError.
    void close() {
        bits_ = BitArray();
        set_bits_ = 0;
        closed_ = true;
    }
    const BitArray& bits() const { return bits_; }

    // Calls f(layout struct) for this filter's layout (layouts.hpp).
    template <class F>
    decltype(auto) visit_layout(F&& f) const {
        return with_layout(geometry_.layout, geometry_.num_bits, geometry_.num_hashes, std::forward<F>(f));
    }

    // Test-and-set: returns true if every position was already set, i.e. the
    // key was (probably) present before this call.
    bool add(Hash128 h) {
        uint64_t* words = write_words();
        const uint32_t newly_set = visit_layout([&](const auto& layout) {
            if (!shared()) return layout.add(words, h);
            if (WriterLock* lock = bits_.writer_lock()) {
                std::lock_guard<WriterLock> exclusive(*lock);
                return layout.template add<AtomicOr>(words, h);
            }
            return layout.template add<AtomicOr>(words, h);
        });
        set_bits_ += newly_set;
        return newly_set == 0;
    }

    bool contains(Hash128 h) const {
        const uint64_t* words = read_words();
        return visit_layout([&](const auto& layout) { return layout.contains(words, h); });
    }

    void prefetch(Hash128 h) const {
        visit_layout([&](const auto& layout) { layout.prefetch(bits_.words(), h); });
    }

    // The line a lookup of the key reads first (the scalable filter
    // prefetches only that one per slice).
    void prefetch_first(Hash128 h) const {
        visit_layout([&](const auto& layout) { layout.prefetch_first(bits_.words(), h); });
    }

    // The k bit indices the key sets, in probe order (docs/FORMAT.md).
    void positions(Hash128 h, uint64_t* out) const {
        visit_layout([&](const auto& layout) { layout.for_each_position(h, [&](uint64_t bit) { *out++ = bit; }); });
    }

    // Batch insert in key order (so a repeated key reports true the second
    // time). `was_present` may be null when the caller wants no results.
    // With threads >= 2, a batch of at least kMinParallelKeys keys from a
    // source two threads may read, into a blocked layout, is split over two
    // threads by block (parallel.hpp); the result is exactly one thread's.
    // Shared storage with a writer lock (exact test-and-set across
    // processes) takes the lock around each chunk of hash_chunks, on the
    // calling thread only: the lock is never held while keys are hashed
    // (hashing may take the GIL) and is held for one chunk at most.
    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present, unsigned threads = 1) {
        if (shared())
            add_many_with<AtomicOr>(keys, was_present, threads);
        else
            add_many_with<PlainOr>(keys, was_present, threads);
    }

    template <class Or, class Keys>
    void add_many_with(const Keys& keys, uint8_t* was_present, unsigned threads) {
        uint64_t* words = write_words();
        WriterLock* const lock = bits_.writer_lock();
        visit_layout([&](const auto& layout) {
            using LayoutT = std::decay_t<decltype(layout)>;
            if constexpr (LayoutT::id != Layout::Classic) {
                if (lock == nullptr && threads >= 2 && keys.size() >= kMinParallelKeys &&
                    add_by_halves<Or>(layout, words, keys, was_present))
                    return;
            }
            uint64_t newly_set = 0;
            hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
                uint8_t* found = was_present ? was_present + first : nullptr;
                if (lock == nullptr) {
                    newly_set += add_digests<Or>(layout, words, digests, count, found);
                } else {
                    std::lock_guard<WriterLock> exclusive(*lock);
                    newly_set += add_digests<Or>(layout, words, digests, count, found);
                }
            });
            set_bits_ += newly_set;
        });
    }

    // (Two-thread lookups need nothing of the filter's: every filter type
    // is split by halves of the batch, parallel.hpp's
    // lookup_halves_on_two_threads.)
    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        const uint64_t* words = read_words();
        visit_layout([&](const auto& layout) {
            hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
                contains_digests(layout, words, digests, count, present + first);
            });
        });
    }

    // The probe loops of every batch: one chunk of digests, in order, each
    // key's block prefetched kPrefetchDistance keys ahead (prefetch.hpp).
    // add_digests sets the keys' bits, writes was_present[j] (when not null)
    // and returns how many bits were newly set.
    template <class Or, class LayoutT>
    static uint64_t add_digests(const LayoutT& layout, uint64_t* words, const Hash128* digests, size_t count,
                                uint8_t* was_present) {
        if constexpr (LayoutT::id != Layout::Classic) {
            return batch_probe::add<Or>(layout, words, digests, count, was_present);
        } else {
            uint64_t newly_set = 0;
            for_each_prefetched(
                digests, count, [&](Hash128 h) { layout.prefetch(words, h); },
                [&](size_t j) {
                    const uint32_t added = layout.template add<Or>(words, digests[j]);
                    newly_set += added;
                    if (was_present) was_present[j] = added == 0;
                });
            return newly_set;
        }
    }

    template <class LayoutT>
    static void contains_digests(const LayoutT& layout, const uint64_t* words, const Hash128* digests, size_t count,
                                 uint8_t* present) {
        if constexpr (LayoutT::id != Layout::Classic) {
            batch_probe::contains(layout, words, digests, count, present);
        } else {
            for_each_prefetched(
                digests, count, [&](Hash128 h) { layout.prefetch(words, h); },
                [&](size_t j) { present[j] = layout.contains(words, digests[j]); });
        }
    }

    // The two-thread insert (parallel.hpp): thread 1 inserts the keys whose
    // block is in the upper half of the filter, thread 0 the others, each in
    // key order, so no word is written by both. The ring hands split_block
    // keys over as 8-byte CompactProbes (batch_probe.hpp), other layouts as
    // digests. False when no helper thread could start (nothing was done).
    template <class Or, class LayoutT, class Keys>
    bool add_by_halves(const LayoutT& layout, uint64_t* words, const Keys& keys, uint8_t* was_present) {
        if constexpr (LayoutT::id == Layout::SplitBlock) {
            if (layout.num_blocks <= batch_probe::CompactProbe::kMaxCompactBlocks) {
                const uint64_t upper_first_block = layout.num_blocks / 2;
                return add_by_halves_of<Or, batch_probe::CompactProbe>(
                    keys, was_present,
                    [&layout](const Hash128& h)
                        BLOOMKIT_INLINE_LAMBDA { return batch_probe::CompactProbe::of(layout, h); },
                    [upper_first_block](const batch_probe::CompactProbe& p)
                        BLOOMKIT_INLINE_LAMBDA { return p.block >= upper_first_block; },
                    [&layout, words](const batch_probe::CompactProbe* probes, size_t n, uint8_t* found) {
                        return batch_probe::add_compact<Or>(layout, words, probes, n, found);
                    });
            }
        }
        // Exactly the keys whose block fast_range64 puts in the upper half.
        const uint64_t upper = upper_half_start(layout.num_blocks);
        return add_by_halves_of<Or, Hash128>(
            keys, was_present, [](const Hash128& h) BLOOMKIT_INLINE_LAMBDA { return h; },
            [upper](const Hash128& h) BLOOMKIT_INLINE_LAMBDA { return h.h1 >= upper; },
            [&layout, words](const Hash128* digests, size_t n, uint8_t* found) {
                return add_digests<Or>(layout, words, digests, n, found);
            });
    }

    // add_by_halves with the ring holding to_entry(digest) per key;
    // in_upper(entry) says whose the key is, add(entries, n, found) inserts
    // a part and returns the bits it newly set.
    template <class Or, class Entry, class Keys, class ToEntry, class InUpper, class Add>
    bool add_by_halves_of(const Keys& keys, uint8_t* was_present, const ToEntry& to_entry, const InUpper& in_upper,
                          const Add& add) {
        uint64_t newly_set[2] = {0, 0};
        std::vector<uint8_t> found[2];  // per thread, at most kParallelChunk
        const bool done = pipeline_on_two_threads<Entry>(
            keys, geometry_.seed, was_present != nullptr, to_entry, in_upper,
            [&](int thread, size_t first, const Entry* entries, const uint32_t* places, size_t n) {
                if (was_present == nullptr) {
                    newly_set[thread] += add(entries, n, nullptr);
                    return;
                }
                found[thread].resize(n);
                newly_set[thread] += add(entries, n, found[thread].data());
                for (size_t i = 0; i < n; ++i) was_present[first + places[i]] = found[thread][i];
            });
        if (done) set_bits_ += newly_set[0] + newly_set[1];
        return done;
    }

    // Row-major (count x k) bit indices of every key of the batch.
    template <class Keys>
    void positions_many(const Keys& keys, uint64_t* out) const {
        geometry_positions(geometry_, keys, out);
    }

    // On a shared mapping, clear() and intersection are plain stores: bits
    // another process sets meanwhile may be lost (docs/decisions.md).
    void clear() {
        write_words();
        bits_.clear();
        set_bits_ = 0;
    }

    void check_compatible(const BloomFilter& other, const char* operation) const {
        if (geometry_.layout != other.geometry_.layout)
            throw std::invalid_argument(std::string(operation) + " needs filters with equal layouts; got '" +
                                        layout_name(layout()) + "' and '" + layout_name(other.layout()) + "'");
        if (!geometry_.compatible(other.geometry_))
            throw std::invalid_argument(std::string(operation) +
                                        " needs filters with equal num_bits, num_hashes and seed; got (" +
                                        std::to_string(num_bits()) + ", " + std::to_string(num_hashes()) + ", " +
                                        std::to_string(seed()) + ") and (" + std::to_string(other.num_bits()) + ", " +
                                        std::to_string(other.num_hashes()) + ", " + std::to_string(other.seed()) + ")");
    }

    void union_with(const BloomFilter& other) {
        check_compatible(other, "union");
        uint64_t* words = write_words();
        const uint64_t* theirs = other.read_words();
        if (shared()) {
            for (uint64_t i = 0; i < bits_.num_words(); ++i) AtomicOr::fetch_or(words[i], theirs[i]);
        } else {
            bits_.union_with(other.bits_);
        }
        set_bits_ = bits_.popcount();
    }

    void intersect_with(const BloomFilter& other) {
        check_compatible(other, "intersection");
        write_words();
        other.read_words();
        bits_.intersect_with(other.bits_);
        set_bits_ = bits_.popcount();
    }

    uint64_t union_set_bits(const BloomFilter& other) const {
        check_compatible(other, "union estimate");
        read_words();
        other.read_words();
        return bits_.union_popcount(other.bits_);
    }

    // Equality is about membership: same geometry, same bits. The sizing
    // request (capacity, error_rate) is compared too so that a round-trip is
    // checked completely.
    bool operator==(const BloomFilter& other) const {
        read_words();
        other.read_words();
        return geometry_.compatible(other.geometry_) && geometry_.capacity == other.geometry_.capacity &&
               geometry_.error_rate == other.geometry_.error_rate && bits_ == other.bits_;
    }

    // --- serialization (docs/FORMAT.md, type tag 1) ---

    // Version 2 params: the 32 common bytes, then layout and reserved.
    static void write_params(ByteWriter& w, const BloomGeometry& geometry) {
        geometry.write(w);
        BloomGeometry::write_layout(w, geometry.layout);
    }
    void write_params(ByteWriter& w) const { write_params(w, geometry_); }
    static uint64_t payload_length(const BloomGeometry& geometry) {
        return BitArray::words_for(geometry.num_bits) * sizeof(uint64_t);
    }
    uint64_t payload_length() const { return payload_length(geometry_); }
    void write_payload(ByteWriter& w) const { w.words(read_words(), bits_.num_words()); }

    // Replaces the bits by a validated payload (bloomkit.redis). Only for
    // private memory: a mapped filter's bits are the file's.
    void assign_payload(StreamReader& r) {
        write_words();
        if (!bits_.owned()) throw ReadOnlyError("the bits of a file-backed filter cannot be replaced");
        BloomFilter replacement = read_payload(geometry_, r);
        r.expect_end("payload");
        *this = std::move(replacement);
    }

    // Reads the payload for an already validated geometry straight into the
    // new filter's bits; the declared payload must hold them before this
    // allocates.
    static BloomFilter read_payload(const BloomGeometry& geometry, StreamReader& r) {
        const uint64_t words = BitArray::words_for(geometry.num_bits);
        if (words > r.remaining() / sizeof(uint64_t))
            throw FormatError("payload is " + std::to_string(r.remaining()) + " bytes but num_bits " +
                              std::to_string(geometry.num_bits) + " needs " + std::to_string(words * 8));
        BloomFilter filter(geometry);
        r.words(filter.bits_.words(), words, "bit array");
        if (!filter.bits_.padding_is_clear()) throw FormatError("bits set beyond num_bits in the last word");
        filter.set_bits_ = filter.bits_.popcount();
        return filter;
    }

    // A filter whose bits are the frame's payload itself, not a copy (a
    // mapped file, mapped_file.hpp). The caller has
    // checked that the payload is 64-byte aligned; `wrap(words, count)`
    // makes the WordStorage that keeps the payload's memory alive.
    template <class Wrap>
    static BloomFilter in_place(const Frame& frame, Wrap&& wrap) {
        const BloomGeometry geometry = read_params(frame);
        const uint64_t words = BitArray::words_for(geometry.num_bits);
        if (frame.payload_length != words * sizeof(uint64_t))
            throw FormatError("payload is " + std::to_string(frame.payload_length) + " bytes but num_bits " +
                              std::to_string(geometry.num_bits) + " needs " + std::to_string(words * 8));
        // const_cast: the storage decides whether the words may be written.
        auto* payload = reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(frame.payload));
        BitArray bits(geometry.num_bits, wrap(payload, words));
        if (!bits.padding_is_clear()) throw FormatError("bits set beyond num_bits in the last word");
        return BloomFilter(geometry, std::move(bits));
    }

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        write_frame(
            sink, FilterType::Bloom, payload_length(), [&](ByteWriter& w) { write_params(w); },
            [&](ByteWriter& w) { write_payload(w); });
    }

    // The geometry in a frame's params: version 1 frames are classic.
    static BloomGeometry read_params(uint16_t version, ByteReader params) {
        BloomGeometry g = BloomGeometry::read_fields(params);
        check_stored(g);  // the common fields first, so their errors are named
        if (version >= 2) {
            g.layout = BloomGeometry::read_layout(params);
            check_stored(g);
        }
        params.expect_end("params");
        return g;
    }
    static BloomGeometry read_params(const Frame& frame) {
        return read_params(frame.version, ByteReader(frame.params, frame.params_length));
    }

    // --- loading (frame_reader.hpp: read_frame<BloomFilter>(source)) ---

    static constexpr FilterType kFrameType = FilterType::Bloom;

    static BloomFilter read_from(FrameReader& frame) {
        const BloomGeometry geometry = read_params(frame.version(), frame.params());
        return read_payload(geometry, frame.payload());
    }

    static BloomFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<BloomFilter>(source);
    }

  private:
    bool shared() const { return bits_.access() == StorageAccess::Shared; }

    // The bits for reading or writing, after the checks every operation
    // needs on a file-backed filter: not closed, and (to write) not mapped
    // read-only — a write there would be a SIGSEGV, so it is refused first.
    // The throws are out of line so that the checks inline into every
    // per-key add and lookup as two loads and a branch.
    const BitArray& read_bits() const {
        if (closed_) throw_closed();
        return bits_;
    }
    const uint64_t* read_words() const { return read_bits().words(); }
    uint64_t* write_words() {
        if (closed_ || read_only()) throw_not_writable();
        return bits_.words();
    }
    [[noreturn]] BLOOMKIT_COLD static void throw_closed() { throw ClosedError("I/O operation on closed filter"); }
    [[noreturn]] BLOOMKIT_COLD void throw_not_writable() const {
        read_bits();
        throw ReadOnlyError("filter is read-only (opened with mode 'r'); open it with mode 'r+' to add keys");
    }

    BloomGeometry geometry_;
    BitArray bits_;
    uint64_t set_bits_ = 0;
    bool closed_ = false;
};

}  // namespace bloomkit
