// One table of a cuckoo filter: packed fingerprints, the victim slot, the
// key -> (bucket, fingerprint) derivation, partial-key cuckoo hashing and the
// bounded random-walk eviction (Fan et al., "Cuckoo Filter: Practically
// Better Than Bloom", CoNEXT 2014, Algorithm 1). CuckooFilter (cuckoo.hpp)
// chains one or more of these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fingerprint_table.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"

namespace bloomkit {

// Eviction walk length before giving up. The paper uses 500; with b = 4 the
// table reaches ~96 % load before a walk of that length first fails.
constexpr unsigned kCuckooMaxKicks = 500;

namespace detail {

// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a tiny generator for the eviction walk's
// choices. It is seeded from the key's digest, so a walk is a pure function
// of the key, the table contents and the filter seed: identical operations
// give identical filters, also after a copy or a save/load.
inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace detail

// One cuckoo hash table plus its victim slot.
class CuckooTable {
  public:
    // Where a key's fingerprint may live in this table.
    struct Probe {
        uint64_t i1;
        uint64_t i2;
        uint32_t fp;
    };

    // The fingerprint that could not be placed by the last failed walk.
    struct Victim {
        bool used = false;
        uint32_t fp = 0;
        uint64_t bucket = 0;
        bool operator==(const Victim& o) const { return used == o.used && fp == o.fp && bucket == o.bucket; }
    };

    // One removed fingerprint, enough to put it back exactly (16 bytes, so
    // a batch removal's undo log stays small).
    struct Removal {
        uint64_t slot;  // or, from_victim, the victim's bucket
        uint32_t fp;
        uint8_t stage;  // which table of a CuckooFilter; set by the filter
        bool from_victim;
    };

    // How place() ended. Only InTable changes the table: every refusal
    // leaves it exactly as it was.
    //   DuplicateLimit: both buckets hold nothing but this fingerprint.
    //   Trapped: both buckets are full of fingerprints whose two buckets are
    //     these same two (e.g. another key's 2b copies), so no walk can leave
    //     them; the rest of the table may be nearly empty.
    //   WalkFailed: the eviction walk found no free slot in kCuckooMaxKicks
    //     moves, and was undone.
    enum class Placed { InTable, DuplicateLimit, Trapped, WalkFailed };

    // Stage `stage` of a filter whose first table has base_buckets buckets
    // and base_bits-bit fingerprints: base_buckets << stage buckets of
    // base_bits + stage bits (a plain filter is stage 0).
    CuckooTable(uint64_t base_buckets, unsigned bucket_size, unsigned base_bits, unsigned stage)
        : table_(base_buckets << stage, bucket_size, base_bits + stage),
          base_buckets_(base_buckets),
          base_bits_(base_bits),
          stage_(stage),
          refine_mask_((uint64_t(1) << stage) - 1) {}

    // The bucket and the fingerprint both come from the key's one
    // MurmurHash3 digest, so no key is hashed twice: the first bucket from
    // h1 mapped onto [0, m), the fingerprint from the other half, h2.
    //
    // h2 goes through fmix64 first because the halves are not always
    // independent: for a key of at most 8 bytes hashed with seed == its
    // length (e.g. seed=8 and integer keys) MurmurHash3's second lane is 0
    // at finalisation and h2 = 1.5 * h1 (mod 2^64) exactly. Without the mix,
    // keys sharing a bucket (similar top bits of h1) would share their
    // fingerprint's top bits too, and pile up as "duplicates". fmix64's
    // avalanche makes every fingerprint bit depend on all of h2.
    //
    // Stage s refines stage 0 instead of hashing afresh, so that a key's
    // stage-s probe determines its probe in every earlier stage:
    //   fp_s = fp_0 * 2^s + r_s  with fp_0 = 1 + fast_range64(G, 2^f0 - 1)
    //                           uniform on [1, 2^f0 - 1] (never 0 = empty),
    //                           G = fmix64(h2), and r_s the top s bits of
    //                           G's low 32 bits (fast_range64 uses the high
    //                           ones), so r_s >> 1 == r_(s-1);
    //   i1_s = fast_range64(h1, m0 * 2^s), whose top part i1_s >> s is i1_0
    //                           (floor(x * 2^s) >> s == floor(x)).
    // See alternate() for the second bucket and CuckooFilter::remove for
    // why this nesting makes removal from a grown filter safe.
    Probe probe(Hash128 h) const {
        const uint64_t g = detail::fmix64(h.h2);
        const uint64_t fp0 = 1 + fast_range64(g, (uint64_t(1) << base_bits_) - 1);
        const uint64_t refinement = ((g & 0xffffffffULL) << stage_) >> 32;
        const uint32_t fp = static_cast<uint32_t>((fp0 << stage_) | refinement);
        const uint64_t i1 = fast_range64(h.h1, num_buckets());
        return Probe{i1, alternate(i1, fp), fp};
    }

    // Partial-key cuckoo hashing: the other bucket of a fingerprint found in
    // `bucket`, computed from the bucket and the fingerprint alone.
    //
    // In stage 0 (m buckets) it is i' = (hash(fp) - i) mod m. Like the
    // paper's i XOR hash(fp) this is an involution (i'' = hash(fp) -
    // (hash(fp) - i) = i), so either bucket leads to the other without the
    // key, but it needs no power-of-two m. hash(fp) only has to spread the
    // 2^f fingerprints over the buckets: MurmurHash3's fmix64 finaliser is a
    // cheap bijective avalanche for that, and fast_range64 maps it onto
    // [0, m). The reflection has fixed points where 2i = hash(fp) (mod m):
    // a key there would have one bucket instead of two, which in small
    // tables visibly lowers the load reached before the first failure. For
    // even m they come in pairs {i, i + m/2}, which are swapped instead,
    // keeping an involution with no fixed point at all; sizing therefore
    // always picks an even m (odd m keeps one fixed point per fingerprint).
    //
    // In stage s a bucket is (u, v) = (i >> s, i mod 2^s) and a fingerprint
    // (fp_0, r) = (fp >> s, fp mod 2^s); the alternate is
    // (stage-0 alternate of u for fp_0, v XOR r): still an involution, and
    // its top part is the stage-0 alternate, so a key's pair of buckets in
    // stage s projects onto its pair in every earlier stage.
    uint64_t alternate(uint64_t bucket, uint32_t fp) const {
        const uint64_t m = base_buckets_;
        const uint64_t u = bucket >> stage_;
        const uint64_t h = fast_range64(detail::fmix64(fp >> stage_), m);
        uint64_t other = h >= u ? h - u : h + (m - u);
        if (other == u && (m & 1) == 0) other = u >= m / 2 ? u - m / 2 : u + m / 2;
        return (other << stage_) | ((bucket ^ fp) & refine_mask_);
    }

    // Stored fingerprints of this stage are at least 2^s (their fp_0 part
    // is never 0); anything smaller in serialized data is corrupt.
    uint32_t min_fingerprint() const { return uint32_t(1) << stage_; }

    bool contains(const Probe& p) const {
        return table_.bucket_has(p.i1, p.fp) || table_.bucket_has(p.i2, p.fp) || victim_matches(p);
    }

    // Fingerprints matching the key in its buckets and the victim slot.
    uint64_t count(const Probe& p) const {
        uint64_t n = table_.count_in_bucket(p.i1, p.fp);
        if (p.i2 != p.i1) n += table_.count_in_bucket(p.i2, p.fp);
        return n + (victim_matches(p) ? 1 : 0);
    }

    void prefetch(const Probe& p) const {
        table_.prefetch(p.i1);
        table_.prefetch(p.i2);
    }

    // Stores fp whose first bucket is i1, or refuses and changes nothing.
    // Call only when !full(). The eviction walk's choices come from
    // `walk_seed`.
    Placed place(uint64_t i1, uint32_t fp, uint64_t walk_seed) {
        const uint64_t i2 = alternate(i1, fp);
        if (put(i1, fp) || put(i2, fp)) return Placed::InTable;
        // Both buckets are full. If every slot of both already holds this
        // fingerprint, a walk could only swap equal fingerprints between the
        // two buckets: refuse, naming the real cause (too many copies).
        const unsigned b = table_.bucket_size();
        if (table_.count_in_bucket(i1, fp) == b && (i2 == i1 || table_.count_in_bucket(i2, fp) == b))
            return Placed::DuplicateLimit;
        // The same holds, with other fingerprints, when each fingerprint in
        // the two buckets has exactly these two buckets: the walk would only
        // shuffle them between the pair. Refusing without walking keeps the
        // error cheap and precise ("the filter is not full").
        if (closed_pair(i1, i2)) return Placed::Trapped;

        // Random-walk eviction (the paper's Algorithm 1): put fp in a random
        // slot of one of its buckets, pick up the fingerprint that was there
        // and carry it to its other bucket, until a free slot turns up. Each
        // move's slot is logged so that a walk that fails can be reversed:
        // the paper (and its reference code) keeps the last fingerprint in a
        // victim slot instead and declares the table full, which made one
        // unplaceable key refuse every later key. 500 slots = 4 KB of stack.
        uint64_t moved[kCuckooMaxKicks];
        uint64_t state = walk_seed;
        uint64_t bucket = (detail::splitmix64(state) & 1) ? i2 : i1;
        for (unsigned kick = 0; kick < kCuckooMaxKicks; ++kick) {
            const uint64_t slot = table_.first_slot(bucket) + fast_range64(detail::splitmix64(state), b);
            moved[kick] = slot;
            const uint32_t evicted = table_.get(slot);
            table_.set(slot, fp);
            fp = evicted;
            bucket = alternate(bucket, fp);
            if (put(bucket, fp)) return Placed::InTable;
        }
        // Undo, newest move first: each slot gets back the fingerprint it
        // held, and the one in hand at the end is the one we started with.
        for (unsigned kick = kCuckooMaxKicks; kick-- > 0;) {
            const uint32_t there = table_.get(moved[kick]);
            table_.set(moved[kick], fp);
            fp = there;
        }
        return Placed::WalkFailed;
    }

    // Removes one fingerprint matching the key (the victim's first, so a
    // full table frees without a walk). Does not re-place the victim; call
    // settle_victim() once removals are final.
    bool take(const Probe& p, Removal& removal) {
        if (victim_matches(p)) {
            removal = Removal{victim_.bucket, victim_.fp, 0, true};
            victim_ = Victim{};
            --count_;
            return true;
        }
        for (uint64_t bucket : {p.i1, p.i2}) {
            const unsigned i = table_.find_in_bucket(bucket, p.fp);
            if (i < table_.bucket_size()) {
                const uint64_t slot = table_.first_slot(bucket) + i;
                removal = Removal{slot, p.fp, 0, false};
                table_.set(slot, 0);
                --count_;
                return true;
            }
        }
        return false;
    }

    // Puts back a fingerprint removed by take(); removals must be undone in
    // reverse order, with nothing else changed in between.
    void undo(const Removal& removal) {
        if (removal.from_victim)
            victim_ = Victim{true, removal.fp, removal.slot};
        else
            table_.set(removal.slot, removal.fp);
        ++count_;
    }

    // A victim slot is only ever filled by files written before failed
    // walks were undone (their walks kept the fingerprint in hand there and
    // declared the table full); it is still read, checked by lookups and
    // removals, and counted. After a removal frees a slot, the victim is
    // moved back into the table (the reference implementation does the
    // same), so the filter stops being full. With one free slot in a ~96 %
    // full table a single 500-kick walk misses it about one time in ten, so
    // up to kSettleWalks walks are tried, each with its own seed (a failed
    // walk changes nothing). If every walk fails, or the victim's buckets
    // are closed to it, it stays where it is.
    static constexpr unsigned kSettleWalks = 8;

    void settle_victim() {
        for (unsigned walk = 0; walk < kSettleWalks && victim_.used; ++walk) {
            const Victim v = victim_;
            const uint64_t walk_seed = detail::fmix64(v.bucket ^ (uint64_t(v.fp) << 32) ^ (uint64_t(walk) << 56));
            const Placed placed = place(v.bucket, v.fp, walk_seed);
            if (placed == Placed::InTable) {
                victim_ = Victim{};
                --count_;  // place() counted it again in the table
                return;
            }
            if (placed != Placed::WalkFailed) return;
        }
    }

    // True when no key can be placed: every slot holds a fingerprint, or a
    // victim from an older file is waiting. A table refuses individual keys
    // (WalkFailed) before that, from about its planned load (docs/cuckoo.md).
    bool full() const { return victim_.used || count_ >= table_.num_slots(); }
    uint64_t size() const { return count_; }
    const Victim& victim() const { return victim_; }
    const FingerprintTable& table() const { return table_; }
    void swap_array(std::vector<uint8_t>& other) noexcept { table_.swap_bytes(other); }
    uint64_t num_buckets() const { return table_.num_buckets(); }

    void clear() {
        table_.clear();
        victim_ = Victim{};
        count_ = 0;
    }

    bool operator==(const CuckooTable& o) const {
        return count_ == o.count_ && victim_ == o.victim_ && table_ == o.table_;
    }

    // --- serialization (docs/FORMAT.md, type tag 4, one stage) ---

    static constexpr size_t kStageHeader = 24;

    static uint64_t serialized_length(uint64_t num_buckets, unsigned bucket_size, unsigned fingerprint_bits) {
        return kStageHeader + FingerprintTable::packed_bytes(num_buckets, bucket_size, fingerprint_bits);
    }

    void write(ByteWriter& w) const {
        w.u64(count_);
        w.u64(victim_.bucket);
        w.u32(victim_.fp);
        w.u8(victim_.used ? 1 : 0);
        w.bytes("\0\0\0", 3);
        w.bytes(table_.data(), table_.nbytes());
    }

    // Reads one stage whose shape the caller has validated and whose bytes
    // it has checked are present; rejects any content the filter could not
    // have produced.
    void read(StreamReader& r) {
        const uint64_t stored_count = r.u64("stage count");
        const uint64_t victim_bucket = r.u64("victim bucket");
        const uint32_t victim_fp = r.u32("victim fingerprint");
        const uint8_t victim_used = r.u8("victim flag");
        uint8_t reserved[3];
        r.bytes(reserved, 3, "stage reserved bytes");
        if (reserved[0] != 0 || reserved[1] != 0 || reserved[2] != 0)
            throw FormatError("stage reserved bytes must be zero");
        if (victim_used > 1) throw FormatError("victim flag must be 0 or 1, got " + std::to_string(victim_used));
        const uint64_t fp_limit = uint64_t(1) << table_.fingerprint_bits();
        if (victim_used) {
            if (victim_fp < min_fingerprint() || victim_fp >= fp_limit)
                throw FormatError("victim fingerprint " + std::to_string(victim_fp) + " is outside [" +
                                  std::to_string(min_fingerprint()) + ", 2**" +
                                  std::to_string(table_.fingerprint_bits()) + ")");
            if (victim_bucket >= num_buckets())
                throw FormatError("victim bucket " + std::to_string(victim_bucket) + " is outside the " +
                                  std::to_string(num_buckets()) + "-bucket table");
        } else if (victim_fp != 0 || victim_bucket != 0) {
            throw FormatError("an unused victim slot must hold fingerprint 0 and bucket 0");
        }
        r.bytes(table_.data(), table_.nbytes(), "fingerprint table");
        if (!table_.padding_is_clear()) throw FormatError("bits set past the last slot of the fingerprint table");
        uint64_t actual = victim_used;
        for (uint64_t slot = 0; slot < table_.num_slots(); ++slot) {
            const uint32_t fp = table_.get(slot);
            if (fp == 0) continue;
            if (fp < min_fingerprint())
                throw FormatError("fingerprint " + std::to_string(fp) + " in slot " + std::to_string(slot) +
                                  " is below " + std::to_string(min_fingerprint()) + ", impossible in stage " +
                                  std::to_string(stage_));
            ++actual;
        }
        if (stored_count != actual)
            throw FormatError("stage count " + std::to_string(stored_count) + " does not match the " +
                              std::to_string(actual) + " fingerprints stored");
        victim_ = Victim{victim_used == 1, victim_fp, victim_bucket};
        count_ = stored_count;
    }

  private:
    bool put(uint64_t bucket, uint32_t fp) {
        const unsigned i = table_.find_in_bucket(bucket, 0);
        if (i == table_.bucket_size()) return false;
        table_.set(table_.first_slot(bucket) + i, fp);
        ++count_;
        return true;
    }

    // Whether every fingerprint in (full) buckets i1 and i2 has {i1, i2} as
    // its pair of buckets, so that no eviction can move one out of them.
    bool closed_pair(uint64_t i1, uint64_t i2) const {
        for (uint64_t bucket : {i1, i2}) {
            const uint64_t first = table_.first_slot(bucket);
            for (unsigned i = 0; i < table_.bucket_size(); ++i) {
                const uint64_t other = alternate(bucket, table_.get(first + i));
                if (other != i1 && other != i2) return false;
            }
        }
        return true;
    }

    bool victim_matches(const Probe& p) const {
        return victim_.used && victim_.fp == p.fp && (victim_.bucket == p.i1 || victim_.bucket == p.i2);
    }

    FingerprintTable table_;
    uint64_t base_buckets_;
    unsigned base_bits_;
    unsigned stage_;
    uint64_t refine_mask_;
    Victim victim_;
    uint64_t count_ = 0;
};

}  // namespace bloomkit
