// The counting Bloom filter (Fan, Cao, Almeida & Broder, "Summary Cache: A
// Scalable Wide-Area Web Cache Sharing Protocol", IEEE/ACM ToN 2000): a Bloom
// filter whose m bits are m small counters, so keys can be removed.
//
// Positions are exactly a BloomFilter's of the same BloomGeometry (same
// digest, same IndexSequence), so "counter > 0" reproduces the plain filter
// bit for bit (to_bloom()). Counters saturate at 2^w - 1 and a saturated
// counter is never decremented (bits.hpp, CounterArray): removing only keys
// that were inserted can therefore never produce a false negative.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bits.hpp"
#include "bloom.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "prefetch.hpp"

namespace bloomkit {

class CountingBloomFilter {
  public:
    // The prefetch step of every batch loop (prefetch.hpp); defined before
    // its uses because clang resolves a deduced return type at the call.
    auto prefetcher() const {
        return [this](Hash128 h) { prefetch(h); };
    }

    CountingBloomFilter(const BloomGeometry& geometry, uint32_t counter_bits) : geometry_(geometry) {
        geometry_.validate();
        // Counters stay classic: a 64-byte line holds only 128 4-bit
        // counters, and removal needs each position exactly (docs/decisions.md).
        if (geometry_.layout != Layout::Classic)
            throw std::invalid_argument("a counting filter has the classic layout only");
        counters_ = CounterArray(geometry_.num_bits, counter_bits);
    }

    const BloomGeometry& geometry() const { return geometry_; }
    uint64_t num_counters() const { return geometry_.num_bits; }
    uint32_t num_hashes() const { return geometry_.num_hashes; }
    uint32_t seed() const { return geometry_.seed; }
    uint32_t counter_bits() const { return counters_.width(); }
    uint64_t nbytes() const { return counters_.nbytes(); }
    uint64_t nonzero_counters() const { return nonzero_; }
    const CounterArray& counters() const { return counters_; }

    // Test-and-increment: returns true if every counter was already non-zero,
    // i.e. the key was (probably) present before this call. Adding a key
    // twice counts it twice (a multiset); it then takes two removals.
    bool add(Hash128 h) {
        IndexSequence seq(h, geometry_.num_bits);
        // Branch-free, like BloomFilter::add: whether a counter was zero is a
        // coin flip while the filter fills.
        uint32_t were_zero = 0;
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) were_zero += counters_.increment(seq.next()) == 0;
        nonzero_ += were_zero;
        return were_zero == 0;
    }

    bool contains(Hash128 h) const {
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i)
            if (counters_.get(seq.next()) == 0) return false;
        return true;
    }

    // The smallest of the key's counters: an upper bound on how many times it
    // was added (exact unless other keys share all its counters), 0 when it
    // is definitely absent.
    uint32_t count(Hash128 h) const {
        IndexSequence seq(h, geometry_.num_bits);
        uint32_t smallest = counters_.max_value();
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) {
            const uint32_t c = counters_.get(seq.next());
            if (c < smallest) smallest = c;
        }
        return smallest;
    }

    // Decrements the key's counters, skipping saturated ones. Returns false
    // and changes nothing when the key cannot have been inserted: one of its
    // counters is zero (or, when two of its k positions coincide, holds less
    // than the two increments an insertion would have left).
    bool remove(Hash128 h) {
        uint64_t positions[kMaxHashes];
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) {
            const uint64_t p = seq.next();
            const uint32_t c = counters_.get(p);
            if (c == 0) {
                undo_removal(positions, i);
                return false;
            }
            positions[i] = p;
            // A saturated counter is left alone (its true count is unknown).
            counters_.decrement(p);
            nonzero_ -= c == 1;
        }
        return true;
    }

    void prefetch(Hash128 h) const {
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) counters_.prefetch(seq.next());
    }

    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present) {
        for_each_key_prefetched(keys, geometry_.seed, prefetcher(), [&](size_t i, Hash128 h) {
            const bool present = add(h);
            if (was_present) was_present[i] = present;
        });
    }

    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        for_each_key_prefetched(keys, geometry_.seed, prefetcher(),
                                [&](size_t i, Hash128 h) { present[i] = contains(h); });
    }

    // Removes every key in order, all or nothing: when key j cannot be
    // removed (remove() would return false at that point of the sequence, so
    // a key listed twice but added once fails the second time), the removals
    // of keys 0..j-1 are undone and j is returned. Returns keys.size() when
    // every key was removed.
    template <class Keys>
    size_t remove_many(const Keys& keys) {
        const size_t total = keys.size();
        size_t failed = total;
        for_each_key_prefetched(keys, geometry_.seed, prefetcher(), [&](size_t i, Hash128 h) {
            if (failed == total && !remove(h)) failed = i;
        });
        if (failed != total) {
            // Undo in reverse order, so each key finds the counters exactly as
            // its own removal left them.
            for (size_t i = failed; i-- > 0;) undo_removal(keys.hash(i, geometry_.seed));
        }
        return failed;
    }

    void clear() {
        counters_.clear();
        nonzero_ = 0;
    }

    bool compatible(const CountingBloomFilter& other) const {
        return geometry_.compatible(other.geometry_) && counter_bits() == other.counter_bits();
    }

    // Counter-wise saturating sum: afterwards the filter holds the keys (with
    // multiplicities) of both.
    void union_with(const CountingBloomFilter& other) {
        if (!compatible(other))
            throw std::invalid_argument(
                "union needs counting filters with equal num_bits, num_hashes, seed and counter_bits; got (" +
                describe() + ") and (" + other.describe() + ")");
        counters_.saturating_add(other.counters_);
        nonzero_ = counters_.nonzero_count();
    }

    // The plain Bloom filter of the same geometry: bit i set iff counter i is
    // non-zero, i.e. exactly the BloomFilter the same keys would have built.
    BloomFilter to_bloom() const {
        BitArray bits(geometry_.num_bits);
        counters_.nonzero_to_bits(bits);
        return BloomFilter(geometry_, std::move(bits));
    }

    bool operator==(const CountingBloomFilter& other) const {
        return compatible(other) && geometry_.capacity == other.geometry_.capacity &&
               geometry_.error_rate == other.geometry_.error_rate && counters_ == other.counters_;
    }

    // --- serialization (docs/FORMAT.md, type tag 2) ---

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        write_frame(
            sink, FilterType::CountingBloom, counters_.nbytes(),
            [&](ByteWriter& w) {
                geometry_.write(w);
                w.u32(counter_bits());
                w.u32(0);  // reserved
            },
            [&](ByteWriter& w) { w.words(counters_.words(), counters_.num_words()); });
    }

    static constexpr FilterType kFrameType = FilterType::CountingBloom;

    // The params and the counters, read straight into the new filter's
    // counter array (frame_reader.hpp).
    static CountingBloomFilter read_from(FrameReader& frame) {
        ByteReader params = frame.params();
        const BloomGeometry geometry = BloomGeometry::read(params, Layout::Classic);
        const uint32_t counter_bits = params.u32("counter_bits");
        if (!CounterArray::valid_width(counter_bits))
            throw FormatError("invalid stored parameters: counter_bits must be " + counter_widths_text() + ", got " +
                              std::to_string(counter_bits));
        if (params.u32("reserved") != 0) throw FormatError("invalid stored parameters: reserved field is not zero");
        params.expect_end("params");

        const uint64_t words = CounterArray::words_for(geometry.num_bits, counter_bits);
        if (words != frame.payload_length() / sizeof(uint64_t) || frame.payload_length() % sizeof(uint64_t) != 0)
            throw FormatError("payload is " + std::to_string(frame.payload_length()) + " bytes but " +
                              std::to_string(geometry.num_bits) + " counters of " + std::to_string(counter_bits) +
                              " bits need " + std::to_string(words * 8));
        CountingBloomFilter filter(geometry, counter_bits);
        frame.payload().words(filter.counters_.words(), words, "counters");
        if (!filter.counters_.padding_is_clear()) throw FormatError("counters set beyond num_bits in the last word");
        filter.nonzero_ = filter.counters_.nonzero_count();
        return filter;
    }

    static CountingBloomFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<CountingBloomFilter>(source);
    }

  private:
    std::string describe() const {
        return std::to_string(geometry_.num_bits) + ", " + std::to_string(geometry_.num_hashes) + ", " +
               std::to_string(geometry_.seed) + ", " + std::to_string(counter_bits());
    }

    // Reverses the first `done` steps of a removal whose positions are
    // given. A step that skipped a saturated counter left it saturated; a
    // step that decremented left the counter below its maximum. So, walking
    // back, "saturated now" identifies exactly the skipped steps — which is
    // what increment() skips.
    void undo_removal(const uint64_t* positions, uint32_t done) {
        for (uint32_t i = done; i-- > 0;) nonzero_ += counters_.increment(positions[i]) == 0;
    }

    // Reverses a complete successful removal of the key with digest h.
    void undo_removal(Hash128 h) {
        uint64_t positions[kMaxHashes];
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) positions[i] = seq.next();
        undo_removal(positions, geometry_.num_hashes);
    }

    BloomGeometry geometry_;
    CounterArray counters_;
    uint64_t nonzero_ = 0;
};

}  // namespace bloomkit
