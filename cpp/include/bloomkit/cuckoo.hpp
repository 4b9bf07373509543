// The cuckoo filter (Fan, Andersen, Kaminsky & Mitzenmacher, "Cuckoo Filter:
// Practically Better Than Bloom", CoNEXT 2014).
//
// A key is stored as an f-bit fingerprint in one of two buckets of
// bucket_size slots. Partial-key cuckoo hashing makes the second bucket a
// function of the first and of the fingerprint only,
//     i2 = i1 XOR hash(fp),
// so a fingerprint can be moved to its other bucket without knowing its key
// (which is what makes eviction, and deletion, possible). bloomkit uses the
// variant i2 = (hash(fp) - i1) mod m, which works for any number of buckets
// m, not only powers of two, so a filter is sized to its capacity instead of
// up to twice that (see CuckooTable::alternate). A lookup reads at
// most two buckets; for an absent key each of the <= 2b stored fingerprints
// it is compared with matches with probability 1/(2^f - 1), so the
// false-positive rate is at most 1 - (1 - 1/(2^f - 1))^(2b) ~ 2b / 2^f.
//
// Nothing is ever silently dropped, and a refused insert changes nothing:
// when the eviction walk gives up it is undone move by move, and the insert
// fails with FilterFullError (or, with auto_grow, the key goes to a new,
// larger table: see CuckooFilter). A refusal concerns that key only; the
// filter is full (every insert refused) only when no slot is free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuckoo_table.hpp"
#include "fingerprint_table.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "prefetch.hpp"

namespace bloomkit {

// Raised when a key cannot be stored for lack of room (no free slot, or none
// reachable by the eviction walk or from its buckets, and no stage left to
// open). The filter is unchanged by the failing insert.
// `index` is the key's position in a batch, or kNoIndex for a single key.
class FilterFullError : public std::runtime_error {
  public:
    static constexpr uint64_t kNoIndex = ~uint64_t(0);
    FilterFullError(const std::string& what, uint64_t index) : std::runtime_error(what), index_(index) {}
    uint64_t index() const { return index_; }

  private:
    uint64_t index_;
};

// Raised when one key already fills both of its buckets (2 * bucket_size
// copies, bucket_size if the buckets coincide): the table may be nearly
// empty, so this is not FilterFullError. The filter is unchanged.
class TooManyCopiesError : public std::runtime_error {
  public:
    TooManyCopiesError(const std::string& what, uint64_t index) : std::runtime_error(what), index_(index) {}
    uint64_t index() const { return index_; }

  private:
    uint64_t index_;
};

// Limits (bucket sizes, buckets, fingerprint widths): sizing.hpp.

// Everything that fixes where keys go, plus the sizing request. Stage s of a
// growing filter has (num_buckets << s) buckets of (fingerprint_bits + s)
// bits: twice the room and half the false-positive bound of the stage before.
struct CuckooGeometry {
    uint64_t num_buckets = 0;  // of the first stage
    uint32_t bucket_size = 0;
    uint32_t fingerprint_bits = 0;  // of the first stage
    uint32_t seed = 0;
    uint64_t capacity = 0;
    double error_rate = 0.0;
    bool auto_grow = false;

    void validate() const {
        if (num_buckets < 1 || num_buckets > kCuckooMaxBuckets)
            throw std::invalid_argument("num_buckets must be in [1, 2**48], got " + std::to_string(num_buckets));
        if (bucket_size < kCuckooMinBucketSize || bucket_size > kCuckooMaxBucketSize)
            throw std::invalid_argument("bucket_size must be in [" + std::to_string(kCuckooMinBucketSize) + ", " +
                                        std::to_string(kCuckooMaxBucketSize) + "], got " + std::to_string(bucket_size));
        if (fingerprint_bits < FingerprintTable::kMinBits || fingerprint_bits > FingerprintTable::kMaxBits)
            throw std::invalid_argument("fingerprint_bits must be in [" + std::to_string(FingerprintTable::kMinBits) +
                                        ", " + std::to_string(FingerprintTable::kMaxBits) + "], got " +
                                        std::to_string(fingerprint_bits));
        require_count("capacity", capacity);
        require_open_unit("error_rate", error_rate);
    }

    uint64_t stage_buckets(size_t stage) const { return num_buckets << stage; }
    unsigned stage_bits(size_t stage) const { return fingerprint_bits + static_cast<unsigned>(stage); }

    // How many stages the filter may have: 1 without auto_grow; with it,
    // until fingerprints would exceed 32 bits or buckets 2**48.
    size_t max_stages() const {
        if (!auto_grow) return 1;
        size_t stages = 1;
        // Each stage only doubles the one before, so the loop stops at the
        // first stage past 2**48 buckets, long before the shift overflows.
        while (stage_bits(stages) <= FingerprintTable::kMaxBits && stage_buckets(stages) <= kCuckooMaxBuckets) ++stages;
        return stages;
    }

    // The params fields before num_stages (docs/FORMAT.md, type 4), in
    // stored order.
    void write(ByteWriter& w) const {
        w.u64(capacity);
        w.f64(error_rate);
        w.u64(num_buckets);
        w.u32(seed);
        w.u8(static_cast<uint8_t>(bucket_size));
        w.u8(static_cast<uint8_t>(fingerprint_bits));
        w.u8(auto_grow ? 1 : 0);
    }

    // Reads those fields; only the auto_grow byte is checked here, the rest
    // by check_stored() once the caller has read the whole params block.
    static CuckooGeometry read(ByteReader& r) {
        CuckooGeometry g;
        g.capacity = r.u64("capacity");
        g.error_rate = r.f64("error_rate");
        g.num_buckets = r.u64("num_buckets");
        g.seed = r.u32("seed");
        g.bucket_size = r.u8("bucket_size");
        g.fingerprint_bits = r.u8("fingerprint_bits");
        const uint8_t auto_grow = r.u8("auto_grow");
        if (auto_grow > 1) throw FormatError("auto_grow must be 0 or 1, got " + std::to_string(auto_grow));
        g.auto_grow = auto_grow == 1;
        return g;
    }

    bool operator==(const CuckooGeometry& o) const {
        return num_buckets == o.num_buckets && bucket_size == o.bucket_size && fingerprint_bits == o.fingerprint_bits &&
               seed == o.seed && capacity == o.capacity && error_rate == o.error_rate && auto_grow == o.auto_grow;
    }
};

// A cuckoo filter: one table, or with auto_grow a chain of tables ("stages")
// like the scalable Bloom filter (Almeida et al., 2007). Doubling one table
// in place would need hash bits a stored fingerprint does not keep (or
// would steal fingerprint bits and double the false-positive rate each
// time). So a key the newest table refuses goes to a new stage with twice
// the buckets and one more fingerprint bit; inserts go to the newest stage,
// lookups check every stage. Stage s has a false-positive bound of about 2b / 2^(f+s), so the
// whole chain stays below 2 * 2b / 2^f (python/bloomkit/calc.py sizes f for
// that). Stages refine one another (CuckooTable::probe), which makes
// removal safe across stages (remove()).
class CuckooFilter {
  public:
    // The prefetch step of every batch loop (prefetch.hpp); defined before
    // its uses because clang resolves a deduced return type at the call.
    auto prefetcher() const {
        return [this](Hash128 h) { prefetch(h); };
    }

    explicit CuckooFilter(const CuckooGeometry& geometry) : geometry_(geometry) {
        geometry_.validate();
        add_stage();
    }

    const CuckooGeometry& geometry() const { return geometry_; }
    uint32_t seed() const { return geometry_.seed; }
    const std::vector<CuckooTable>& stages() const { return stages_; }

    uint64_t size() const {
        uint64_t n = 0;
        for (const CuckooTable& t : stages_) n += t.size();
        return n;
    }
    uint64_t num_slots() const {
        uint64_t n = 0;
        for (const CuckooTable& t : stages_) n += t.table().num_slots();
        return n;
    }
    uint64_t num_buckets() const {
        uint64_t n = 0;
        for (const CuckooTable& t : stages_) n += t.num_buckets();
        return n;
    }
    uint64_t nbytes() const {
        uint64_t n = 0;
        for (const CuckooTable& t : stages_) n += t.table().nbytes();
        return n;
    }
    // True when every add would raise FilterFullError: no slot free in the
    // newest stage and no stage left to open. Single keys can be refused
    // before that (their walk finds no free slot); that is not "full".
    bool full() const { return stages_.back().full() && !can_grow(); }

    // Inserts one more copy of the key; returns whether a matching
    // fingerprint was already present. Throws FilterFullError (changing
    // nothing) when the key cannot be stored.
    bool add(Hash128 h) {
        bool present = false;
        const Outcome outcome = insert(h, present);
        if (outcome != Outcome::Stored) fail(outcome, FilterFullError::kNoIndex);
        return present;
    }

    bool contains(Hash128 h) const {
        for (const CuckooTable& t : stages_)
            if (t.contains(t.probe(h))) return true;
        return false;
    }

    uint64_t count(Hash128 h) const {
        uint64_t n = 0;
        for (const CuckooTable& t : stages_) n += t.count(t.probe(h));
        return n;
    }

    // Removes one copy of the key; false (and no change) when no stage holds
    // a matching fingerprint.
    //
    // Always from the newest stage that matches, which is what keeps a grown
    // filter free of false negatives. Suppose key X was stored in stage a
    // but its probe also matches key Y's copy in a newer stage c (a false
    // positive there) and that copy is the one removed. Stages nest (see
    // CuckooTable::probe): X and Y having the same fingerprint and buckets
    // in stage c implies they have the same fingerprint and buckets in stage
    // a, so Y still matches X's copy, which stays. The wrong way round
    // (removing from an older stage a copy the key only false-matches)
    // would have no such cover, hence newest first.
    bool remove(Hash128 h) {
        for (size_t s = stages_.size(); s-- > 0;) {
            CuckooTable& t = stages_[s];
            CuckooTable::Removal removal;
            if (t.take(t.probe(h), removal)) {
                if (!removal.from_victim) t.settle_victim();
                return true;
            }
        }
        return false;
    }

    void prefetch(Hash128 h) const {
        for (const CuckooTable& t : stages_) t.prefetch(t.probe(h));
    }

    // Batch insert in key order. When key j cannot be stored, keys [0, j)
    // stay inserted, key j and the rest are not, and FilterFullError names j.
    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present) {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            if (!geometry_.auto_grow) {
                // One table that never changes shape: probe each key once.
                CuckooTable& t = stages_.front();
                for_each_probe(t, digests, count, [&](size_t j, const CuckooTable::Probe& p) {
                    if (t.full()) fail(Outcome::Full, first + j);
                    const bool present = was_present != nullptr && t.contains(p);
                    const Outcome outcome = place_in(t, p, digests[j]);
                    if (outcome != Outcome::Stored) fail(outcome, first + j);
                    if (was_present) was_present[first + j] = present;
                });
                return;
            }
            for_each_prefetched(digests, count, prefetcher(), [&](size_t j) {
                bool present = false;
                const Outcome outcome = insert(digests[j], present);
                if (outcome != Outcome::Stored) fail(outcome, first + j);
                if (was_present) was_present[first + j] = present;
            });
        });
    }

    // Batch test-and-add with set semantics: key j is stored only when no
    // matching fingerprint is present (earlier keys of the batch included),
    // and was_present[j] says whether one was. A key repeated any number of
    // times is stored once, so dedup never meets the 2*bucket_size copy
    // limit. Failure rule as add_many: keys [0, j) stay, FilterFullError names j.
    template <class Keys>
    void add_new_many(const Keys& keys, uint8_t* was_present) {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            if (!geometry_.auto_grow) {
                CuckooTable& t = stages_.front();
                for_each_probe(t, digests, count, [&](size_t j, const CuckooTable::Probe& p) {
                    const bool present = t.contains(p);
                    if (!present) {
                        if (t.full()) fail(Outcome::Full, first + j);
                        const Outcome outcome = place_in(t, p, digests[j]);
                        if (outcome != Outcome::Stored) fail(outcome, first + j);
                    }
                    if (was_present) was_present[first + j] = present;
                });
                return;
            }
            for_each_prefetched(digests, count, prefetcher(), [&](size_t j) {
                bool present = contains(digests[j]);
                if (!present) {
                    const Outcome outcome = insert(digests[j], present);
                    if (outcome != Outcome::Stored) fail(outcome, first + j);
                }
                if (was_present) was_present[first + j] = present;
            });
        });
    }

    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            if (stages_.size() == 1) {
                const CuckooTable& t = stages_.front();
                for_each_probe(t, digests, count,
                               [&](size_t j, const CuckooTable::Probe& p) { present[first + j] = t.contains(p); });
                return;
            }
            for_each_prefetched(digests, count, prefetcher(),
                                [&](size_t j) { present[first + j] = contains(digests[j]); });
        });
    }

    // Removes one copy of every key, all or nothing: returns keys.size() when
    // every key had a matching fingerprint (counting earlier removals of the
    // same batch), else the index of the first key that had none, with the
    // filter restored exactly. Keeps a 16-byte undo record per key.
    template <class Keys>
    size_t remove_many(const Keys& keys) {
        std::vector<CuckooTable::Removal> log;
        log.reserve(keys.size());
        std::vector<bool> freed(stages_.size(), false);
        size_t missing = keys.size();
        // Takes one fingerprint matching probe p from stage s, logging it.
        auto take = [&](size_t s, const CuckooTable::Probe& p) {
            CuckooTable::Removal removal;
            if (!stages_[s].take(p, removal)) return false;
            removal.stage = static_cast<uint8_t>(s);
            log.push_back(removal);
            if (!removal.from_victim) freed[s] = true;
            return true;
        };
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            if (missing != keys.size()) return;
            if (stages_.size() == 1) {
                for_each_probe(stages_.front(), digests, count, [&](size_t j, const CuckooTable::Probe& p) {
                    if (missing == keys.size() && !take(0, p)) missing = first + j;
                });
                return;
            }
            for_each_prefetched(digests, count, prefetcher(), [&](size_t j) {
                if (missing != keys.size()) return;
                for (size_t s = stages_.size(); s-- > 0;)  // newest first, see remove()
                    if (take(s, stages_[s].probe(digests[j]))) return;
                missing = first + j;
            });
        });
        if (missing != keys.size()) {
            for (size_t i = log.size(); i-- > 0;) stages_[log[i].stage].undo(log[i]);
            return missing;
        }
        // Victims move back only now, so an undo never has to reverse a walk.
        for (size_t s = 0; s < stages_.size(); ++s)
            if (freed[s]) stages_[s].settle_victim();
        return keys.size();
    }

    // Calls visit(j, probe) for j in [0, count) in order with key j's probe
    // in table t, computing each probe once and prefetching the buckets of
    // key j + kPrefetchDistance first (prefetch.hpp).
    template <class Table, class Visit>
    static void for_each_probe(Table& t, const Hash128* digests, size_t count, Visit&& visit) {
        CuckooTable::Probe probes[kHashChunk];
        for (size_t j = 0; j < count; ++j) probes[j] = t.probe(digests[j]);
        bloomkit::for_each_prefetched(
            probes, count, [&t](const CuckooTable::Probe& p) { t.prefetch(p); },
            [&](size_t j) { visit(j, probes[j]); });
    }

    // Empties the filter and drops every grown stage: the only call that
    // frees a table's memory (a new stage moves the others, keeping each
    // array where it is; hand_off_arrays gives the old ones away first).
    static_assert(std::is_nothrow_move_constructible<CuckooTable>::value, "growth must move stages, not copy them");
    static constexpr bool kClearFreesStorage = true;
    void clear() {
        stages_.erase(stages_.begin() + 1, stages_.end());
        stages_.front().clear();
    }

    // Copy-on-write for readers outside the filter's lock (protocol 5
    // pickle buffers, cpp/bindings/guard.hpp): an insert moves fingerprints
    // between buckets (one is in no bucket mid-walk), so a view of the live
    // arrays read during a write could lose a key. Before the first write
    // while such views exist, each stage gets a copy of its fingerprint
    // array and the arrays it had -- unchanged, at the same addresses -- go
    // to `retired`, so the views keep reading the snapshot they were taken
    // of. Every copy is made before anything is swapped: a bad_alloc leaves
    // the filter as it was.
    void hand_off_arrays(std::vector<std::vector<uint8_t>>& retired) {
        std::vector<std::vector<uint8_t>> copies;
        copies.reserve(stages_.size());
        for (const CuckooTable& t : stages_) copies.push_back(t.table().copy_bytes());
        retired.reserve(retired.size() + copies.size());
        for (size_t s = 0; s < stages_.size(); ++s) {
            stages_[s].swap_array(copies[s]);
            retired.push_back(std::move(copies[s]));
        }
    }

    bool operator==(const CuckooFilter& other) const {
        return geometry_ == other.geometry_ && stages_ == other.stages_;
    }

    // --- serialization (docs/FORMAT.md, type tag 4) ---

    void write_params(ByteWriter& w) const {
        geometry_.write(w);
        w.u8(static_cast<uint8_t>(stages_.size()));
    }

    static uint64_t payload_length(const CuckooGeometry& g, size_t num_stages) {
        uint64_t total = 0;
        for (size_t s = 0; s < num_stages; ++s)
            total += CuckooTable::serialized_length(g.stage_buckets(s), g.bucket_size, g.stage_bits(s));
        return total;
    }

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        write_frame(
            sink, FilterType::Cuckoo, payload_length(geometry_, stages_.size()),
            [&](ByteWriter& w) { write_params(w); },
            [&](ByteWriter& w) {
                for (const CuckooTable& t : stages_) t.write(w);
            });
    }

    static constexpr FilterType kFrameType = FilterType::Cuckoo;

    // The params, then each stage read straight into its table
    // (frame_reader.hpp).
    static CuckooFilter read_from(FrameReader& frame) {
        ByteReader params = frame.params();
        const CuckooGeometry g = CuckooGeometry::read(params);
        const uint8_t num_stages = params.u8("num_stages");
        params.expect_end("params");
        check_stored(g);
        if (num_stages < 1 || num_stages > g.max_stages())
            throw FormatError("num_stages " + std::to_string(num_stages) + " is outside [1, " +
                              std::to_string(g.max_stages()) + "] for these parameters");
        // The declared payload length bounds what the source holds (its real
        // size, or the caller's bound), so once the params imply exactly that
        // length every allocation below is bounded by it.
        const uint64_t expected = payload_length(g, num_stages);
        if (frame.payload_length() != expected)
            throw FormatError("payload is " + std::to_string(frame.payload_length()) +
                              " bytes but the parameters need " + std::to_string(expected));
        CuckooFilter filter(g);
        for (size_t s = 0; s < num_stages; ++s) {
            if (s > 0) filter.add_stage();
            filter.stages_[s].read(frame.payload());
        }
        return filter;
    }

    static CuckooFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<CuckooFilter>(source);
    }

  private:
    enum class Outcome { Stored, Full, WalkFailed, Trapped, DuplicateLimit, CannotGrow };

    bool can_grow() const { return geometry_.auto_grow && stages_.size() < geometry_.max_stages(); }

    void add_stage() {
        const size_t s = stages_.size();
        stages_.emplace_back(geometry_.num_buckets, geometry_.bucket_size, geometry_.fingerprint_bits,
                             static_cast<unsigned>(s));
    }

    // Stores the key in the newest stage. With auto_grow, a key that stage
    // refuses for lack of room (full, walk failed, trapped) goes to a new
    // stage, which is empty and so always takes it; later keys go there too.
    // A refusal without growth changes nothing.
    Outcome insert(Hash128 h, bool& present) {
        if (!stages_.back().full()) {
            present = contains(h);
            CuckooTable& t = stages_.back();
            const Outcome outcome = place_in(t, t.probe(h), h);
            if (outcome == Outcome::Stored || outcome == Outcome::DuplicateLimit || !geometry_.auto_grow)
                return outcome;
        } else if (!geometry_.auto_grow) {
            return Outcome::Full;
        }
        if (!can_grow()) return Outcome::CannotGrow;
        present = contains(h);
        add_stage();
        CuckooTable& t = stages_.back();
        return place_in(t, t.probe(h), h);
    }

    // Stores the key with probe p in table t (which is not full), or refuses
    // and leaves t unchanged.
    static Outcome place_in(CuckooTable& t, const CuckooTable::Probe& p, Hash128 h) {
        // The walk's random choices come from SplitMix64 seeded with the
        // whole digest; its output bits are unrelated to the digest bits that
        // chose the bucket and the fingerprint.
        const uint64_t walk_seed = h.h1 ^ detail::rotl64(h.h2, 32);
        switch (t.place(p.i1, p.fp, walk_seed)) {
            case CuckooTable::Placed::InTable: return Outcome::Stored;
            case CuckooTable::Placed::DuplicateLimit: return Outcome::DuplicateLimit;
            case CuckooTable::Placed::Trapped: return Outcome::Trapped;
            case CuckooTable::Placed::WalkFailed: break;
        }
        return Outcome::WalkFailed;
    }

    [[noreturn]] void fail(Outcome outcome, uint64_t index) const {
        const bool in_batch = index != FilterFullError::kNoIndex;
        std::string what = in_batch ? "key at index " + std::to_string(index) + ": " : std::string();
        switch (outcome) {
            case Outcome::Full:
                what += "CuckooFilter is full (" + std::to_string(size()) + " fingerprints in " +
                        std::to_string(num_slots()) +
                        " slots); remove keys, or create it with a larger capacity or auto_grow=True";
                break;
            case Outcome::WalkFailed:
                what += "no room for the key in the CuckooFilter: its eviction walk found no free slot in " +
                        std::to_string(kCuckooMaxKicks) + " moves (" + std::to_string(size()) + " fingerprints in " +
                        std::to_string(num_slots()) +
                        " slots); the filter is unchanged; remove keys, or create it with a larger capacity or "
                        "auto_grow=True";
                break;
            case Outcome::Trapped:
                what +=
                    "no room for the key in the CuckooFilter: its two buckets are full of fingerprints whose "
                    "only buckets are those two (another key's copies), so no eviction can free a slot; the "
                    "filter is not full (" +
                    std::to_string(size()) + " fingerprints in " + std::to_string(num_slots()) +
                    " slots) and other keys still fit";
                break;
            case Outcome::DuplicateLimit:
                what +=
                    "the key's two buckets are already full of its fingerprint: a key can be stored at most "
                    "2*bucket_size = " +
                    std::to_string(2 * geometry_.bucket_size) +
                    " times (bucket_size times if its buckets coincide); the filter is not full";
                break;
            case Outcome::CannotGrow:
                what += "CuckooFilter cannot grow past " + std::to_string(stages_.size()) +
                        " stages (fingerprints are at most 32 bits, tables at most 2**48 buckets)";
                break;
            case Outcome::Stored: break;
        }
        if (in_batch)
            what += "; keys before index " + std::to_string(index) + " were inserted, this key and later ones were not";
        if (outcome == Outcome::DuplicateLimit) throw TooManyCopiesError(what, index);
        throw FilterFullError(what, index);
    }

    CuckooGeometry geometry_;
    std::vector<CuckooTable> stages_;
};

}  // namespace bloomkit
