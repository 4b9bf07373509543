// The standard Bloom filter (Bloom, 1970): m bits, k probe positions per key.
//
// Positions come from one MurmurHash3_x64_128 digest through enhanced double
// hashing (hash.hpp), so a key costs one hash regardless of k. The false
// positive rate after n distinct insertions is p = (1 - e^(-kn/m))^k
// (see python/bloomkit/calc.py for the sizing formulas).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bits.hpp"
#include "format.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "prefetch.hpp"

namespace bloomkit {

constexpr uint32_t kMaxHashes = 64;

// Everything that fixes where a key's bits are, plus the sizing request the
// filter was built for. Shared by the plain, counting and scalable filters.
struct BloomGeometry {
    uint64_t num_bits = 0;
    uint32_t num_hashes = 0;
    uint32_t seed = 0;
    uint64_t capacity = 0;
    double error_rate = 0.0;

    void validate() const {
        if (num_bits == 0 || num_bits >= (uint64_t(1) << 63))
            throw std::invalid_argument("num_bits must be in [1, 2**63), got " + std::to_string(num_bits));
        if (num_hashes < 1 || num_hashes > kMaxHashes)
            throw std::invalid_argument("num_hashes must be in [1, " + std::to_string(kMaxHashes) + "], got " +
                                        std::to_string(num_hashes));
        if (capacity == 0 || capacity >= (uint64_t(1) << 63))
            throw std::invalid_argument("capacity must be in [1, 2**63), got " + std::to_string(capacity));
        if (!(error_rate > 0.0 && error_rate < 1.0))
            throw std::invalid_argument("error_rate must be in (0, 1), got " + std::to_string(error_rate));
    }

    // Two filters can be merged bit-for-bit only when every key maps to the
    // same positions in both.
    bool compatible(const BloomGeometry& other) const {
        return num_bits == other.num_bits && num_hashes == other.num_hashes && seed == other.seed;
    }

    void write(ByteWriter& w) const {
        w.u64(num_bits);
        w.u32(num_hashes);
        w.u32(seed);
        w.u64(capacity);
        w.f64(error_rate);
    }

    static BloomGeometry read(ByteReader& r) {
        BloomGeometry g;
        g.num_bits = r.u64("num_bits");
        g.num_hashes = r.u32("num_hashes");
        g.seed = r.u32("seed");
        g.capacity = r.u64("capacity");
        g.error_rate = r.f64("error_rate");
        try {
            g.validate();
        } catch (const std::invalid_argument& e) {
            throw FormatError(std::string("invalid stored parameters: ") + e.what());
        }
        return g;
    }
};

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
    // non-zero counters); `bits` must hold exactly num_bits bits.
    BloomFilter(const BloomGeometry& geometry, BitArray bits) : geometry_(geometry), bits_(std::move(bits)) {
        geometry_.validate();
        if (bits_.num_bits() != geometry_.num_bits || !bits_.padding_is_clear())
            throw std::invalid_argument("bit array does not match num_bits");
        set_bits_ = bits_.popcount();
    }

    const BloomGeometry& geometry() const { return geometry_; }
    uint64_t num_bits() const { return geometry_.num_bits; }
    uint32_t num_hashes() const { return geometry_.num_hashes; }
    uint32_t seed() const { return geometry_.seed; }
    uint64_t nbytes() const { return bits_.nbytes(); }
    uint64_t set_bits() const { return set_bits_; }
    const BitArray& bits() const { return bits_; }

    // Test-and-set: returns true if every position was already set, i.e. the
    // key was (probably) present before this call.
    bool add(Hash128 h) {
        IndexSequence seq(h, geometry_.num_bits);
        // Branch-free: whether a bit was already set is a coin flip while the
        // filter fills, so a branch here would mispredict about once per key.
        uint32_t already_set = 0;
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) already_set += bits_.test_and_set(seq.next());
        set_bits_ += geometry_.num_hashes - already_set;
        return already_set == geometry_.num_hashes;
    }

    bool contains(Hash128 h) const {
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i)
            if (!bits_.test(seq.next())) return false;
        return true;
    }

    // The k bit indices a key sets, in probe order (out holds num_hashes
    // values). External stores of the same bits (bloomkit.redis) use them.
    void positions(Hash128 h, uint64_t* out) const {
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) out[i] = seq.next();
    }

    // positions() for every key of a batch: row j of `out` (num_hashes wide)
    // belongs to key j.
    template <class Keys>
    void positions_many(const Keys& keys, uint64_t* out) const {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) positions(digests[j], out + (first + j) * geometry_.num_hashes);
        });
    }

    void prefetch(Hash128 h) const {
        IndexSequence seq(h, geometry_.num_bits);
        for (uint32_t i = 0; i < geometry_.num_hashes; ++i) bits_.prefetch(seq.next());
    }

    // Batch insert in key order (so a repeated key reports true the second
    // time). `was_present` may be null when the caller wants no results.
    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present) {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            for_each_prefetched(digests, count, prefetcher(), [&](size_t j) {
                const bool present = add(digests[j]);
                if (was_present) was_present[first + j] = present;
            });
        });
    }

    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        hash_chunks(keys, geometry_.seed, [&](size_t first, const Hash128* digests, size_t count) {
            for_each_prefetched(digests, count, prefetcher(),
                                [&](size_t j) { present[first + j] = contains(digests[j]); });
        });
    }

    void clear() {
        bits_.clear();
        set_bits_ = 0;
    }

    void check_compatible(const BloomFilter& other, const char* operation) const {
        if (!geometry_.compatible(other.geometry_))
            throw std::invalid_argument(
                std::string(operation) + " needs filters with equal num_bits, num_hashes and seed; got (" +
                std::to_string(num_bits()) + ", " + std::to_string(num_hashes()) + ", " + std::to_string(seed()) +
                ") and (" + std::to_string(other.num_bits()) + ", " + std::to_string(other.num_hashes()) + ", " +
                std::to_string(other.seed()) + ")");
    }

    void union_with(const BloomFilter& other) {
        check_compatible(other, "union");
        bits_.union_with(other.bits_);
        set_bits_ = bits_.popcount();
    }

    void intersect_with(const BloomFilter& other) {
        check_compatible(other, "intersection");
        bits_.intersect_with(other.bits_);
        set_bits_ = bits_.popcount();
    }

    uint64_t union_set_bits(const BloomFilter& other) const {
        check_compatible(other, "union estimate");
        return bits_.union_popcount(other.bits_);
    }

    // Equality is about membership: same geometry, same bits. The sizing
    // request (capacity, error_rate) is compared too so that a round-trip is
    // checked completely.
    bool operator==(const BloomFilter& other) const {
        return geometry_.compatible(other.geometry_) && geometry_.capacity == other.geometry_.capacity &&
               geometry_.error_rate == other.geometry_.error_rate && bits_ == other.bits_;
    }

    // --- serialization (docs/FORMAT.md, type tag 1) ---

    void write_params(ByteWriter& w) const { geometry_.write(w); }
    uint64_t payload_length() const { return bits_.nbytes(); }
    void write_payload(ByteWriter& w) const { w.words(bits_.words(), bits_.num_words()); }

    // Reads the payload for an already validated geometry; the caller has
    // checked that enough bytes remain before this allocates.
    static BloomFilter read_payload(const BloomGeometry& geometry, ByteReader& r) {
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

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        write_frame(
            sink, FilterType::Bloom, payload_length(), [&](ByteWriter& w) { write_params(w); },
            [&](ByteWriter& w) { write_payload(w); });
    }

    static BloomFilter deserialize(const uint8_t* data, size_t len) {
        const Frame frame = parse_frame(data, len, FilterType::Bloom);
        ByteReader params(frame.params, frame.params_length);
        const BloomGeometry geometry = BloomGeometry::read(params);
        params.expect_end("params");
        ByteReader payload(frame.payload, frame.payload_length);
        BloomFilter filter = read_payload(geometry, payload);
        payload.expect_end("payload");
        return filter;
    }

  private:

    BloomGeometry geometry_;
    BitArray bits_;
    uint64_t set_bits_ = 0;
};

}  // namespace bloomkit
