// The binary fuse filter (Graf & Lemire, "Binary Fuse Filters: Fast and
// Smaller Than Xor Filters", ACM JEA 27, 2022), 3-wise, with 8- or 16-bit
// fingerprints: a frozen set, built once from all of its keys.
//
// Each key maps to three cells h0, h1, h2 of an array of f-bit values, one
// in each of three consecutive segments, and the array is filled so that
//     fingerprint(key) = F[h0] XOR F[h1] XOR F[h2]
// for every key. A lookup recomputes the XOR; an absent key matches with
// probability 2^-f. The array has ~1.125 cells per key (sizing.hpp,
// binary_fuse_shape), so 8-bit fingerprints take ~9 bits per key at a 0.39 %
// false-positive rate, less than any Bloom layout at that rate.
//
// Construction is the hypergraph peeling of xor filters: a cell that only
// one key uses can take whatever value that key needs, so it is removed
// from the other two cells; repeating this until every key is removed gives
// an order in which the values can be assigned (in reverse, each key's
// "own" cell is set last). Peeling fails when a core of cells shared by two
// or more keys remains; then the construction starts again with another
// seed (kBinaryFuseMaxAttempts at most; with distinct keys a retry is rare).
// Two equal keys always form such a core, so a failed peel first removes
// duplicates (sort + unique of the 64-bit key hashes) and retries: distinct
// keys never pay for the sort, and duplicate keys are allowed.
//
// Keys are hashed through the project's one hashing path (hash_chunks,
// keys.hpp); the filter keeps the 64-bit h1 of each digest, and a
// construction seed is mixed in as fmix64(h1 + seed), a bijection, so
// distinct key hashes stay distinct under every seed and a new seed needs
// no rehashing of the keys.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "binary_fuse_avx2.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "memory.hpp"
#include "platform.hpp"
#include "prefetch.hpp"
#include "simd.hpp"
#include "sizing.hpp"
#include "storage.hpp"

namespace bloomkit {

// Seeds tried before construction gives up. Each attempt on distinct keys
// succeeds with probability well above 1/2 at every size (paper, fig. 4),
// so 100 failures mean something other than bad luck.
constexpr unsigned kBinaryFuseMaxAttempts = 100;

// How many keys ahead a batch lookup prefetches (BinaryFuseFilter::
// contains_many_as): twice the other batch loops' distance (prefetch.hpp),
// as for the blocked Bloom layouts (batch_probe.hpp). At 1e7 keys on epyc2,
// 8-bit cells ran within 5 % of one another from 6 to 32 keys (9.5 ns/key
// at 2); 16-bit cells, twice the array, 12.5 at 16 and 11.4 at 32
// (results/2026-11-26-fuse-lookup-tuning-ad2fbf4-epyc2.md).
constexpr size_t kFuseLookupDistance = 2 * kPrefetchDistance;

// Raised when no seed peels the key set (BinaryFuseFilter::build).
class BuildError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Everything that fixes where keys go and what the array holds.
struct BinaryFuseParams {
    uint64_t num_keys = 0;    // distinct key hashes stored
    uint64_t build_seed = 0;  // mixed into every key hash (the seed that peeled)
    uint32_t seed = 0;        // the key-hashing seed (MurmurHash3, or the SipHash key's seed)
    uint32_t fingerprint_bits = 8;
    BinaryFuseShape shape{kBinaryFuseMinSegmentLength, 1};

    uint64_t array_length() const { return shape.array_length(); }
    uint64_t fingerprint_bytes() const { return array_length() * (fingerprint_bits / 8); }
    // The array is stored in whole 64-bit words (zero-padded): the payload
    // and, for a mapped file, the storage.
    uint64_t num_words() const { return (fingerprint_bytes() + 7) / 8; }

    // The shape must be the one the sizing gives for num_keys, so a stored
    // frame can describe no array larger than its key count implies.
    void validate() const {
        if (!valid_binary_fuse_bits(fingerprint_bits))
            throw std::invalid_argument("fingerprint_bits must be 8 or 16, got " + std::to_string(fingerprint_bits));
        require_binary_fuse_keys(num_keys);
        const BinaryFuseShape expected = binary_fuse_shape(num_keys);
        if (!(shape == expected))
            throw std::invalid_argument(
                "segment geometry " + std::to_string(shape.segment_count) + " x " +
                std::to_string(shape.segment_length) + " does not match the " + std::to_string(expected.segment_count) +
                " x " + std::to_string(expected.segment_length) + " of " + std::to_string(num_keys) + " keys");
    }

    // docs/FORMAT.md, type 6, in stored order.
    void write(ByteWriter& w) const {
        w.u64(num_keys);
        w.u64(build_seed);
        w.u32(seed);
        w.u32(shape.segment_length);
        w.u32(shape.segment_count);
        w.u8(static_cast<uint8_t>(fingerprint_bits));
    }
    static BinaryFuseParams read(ByteReader& r) {
        BinaryFuseParams p;
        p.num_keys = r.u64("num_keys");
        p.build_seed = r.u64("build_seed");
        p.seed = r.u32("seed");
        p.shape.segment_length = r.u32("segment_length");
        p.shape.segment_count = r.u32("segment_count");
        p.fingerprint_bits = r.u8("fingerprint_bits");
        return p;
    }
    bool operator==(const BinaryFuseParams& o) const {
        return num_keys == o.num_keys && build_seed == o.build_seed && seed == o.seed &&
               fingerprint_bits == o.fingerprint_bits && shape == o.shape;
    }
};

class BinaryFuseFilter {
  public:
    // One key's three cells and its fingerprint (the XOR it must match).
    struct Probe {
        uint64_t cell[3];
        uint32_t fingerprint;
    };

    // The 64-bit key hashes of `keys` appended to `out` (8 bytes per key):
    // the one input of build(), so a set can be hashed batch by batch.
    template <class Keys>
    static void append_hashes(const Keys& keys, uint32_t seed, std::vector<uint64_t>& out) {
        const size_t start = out.size();
        out.resize(start + keys.size());
        hash_chunks(keys, seed, [&](size_t first, const Hash128* digests, size_t count) {
            for (size_t j = 0; j < count; ++j) out[start + first + j] = digests[j].h1;
        });
    }

    // The filter of the keys whose hashes (append_hashes, under `seed`) are
    // `hashes`; reorders `hashes` (and drops duplicates from it).
    static BinaryFuseFilter build(std::vector<uint64_t>& hashes, uint32_t fingerprint_bits, uint32_t seed) {
        BinaryFuseParams p;
        p.seed = seed;
        p.fingerprint_bits = fingerprint_bits;
        if (!valid_binary_fuse_bits(fingerprint_bits))
            throw std::invalid_argument("fingerprint_bits must be 8 or 16, got " + std::to_string(fingerprint_bits));
        require_binary_fuse_keys(hashes.size());
        Builder builder(hashes, p);
        return builder.run();
    }

    // An empty filter (no key tests positive except at the 2^-f rate).
    explicit BinaryFuseFilter(const BinaryFuseParams& params) : params_(params), words_(allocate(params)) {}

    const BinaryFuseParams& params() const { return params_; }
    uint32_t seed() const { return params_.seed; }
    uint64_t size() const { return params_.num_keys; }
    uint64_t nbytes() const { return words_.size() * sizeof(uint64_t); }
    const WordStorage& words() const { return words_; }

    // Where key h's cells are (paper, section 3): h0 = floor(x * S L / 2^64)
    // in the first S segments, h1 and h2 in the next two segments at offsets
    // XORed with independent bits of x. x = fmix64(h1 + build_seed).
    Probe probe(Hash128 h) const { return probe_of(params_, mix(h.h1, params_.build_seed)); }

    // An empty set holds no key (its all-zero cells would match the keys
    // whose fingerprint is 0).
    bool contains(Hash128 h) const { return params_.num_keys != 0 && matches(probe(h)); }

    // present[i] = contains(key i), for a batch, in key order.
    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        if (params_.num_keys == 0) {
            std::memset(present, 0, keys.size());
            return;
        }
        if (params_.fingerprint_bits == 8)
            contains_many_as<uint8_t>(keys, present);
        else
            contains_many_as<uint16_t>(keys, present);
    }

    // The batch lookup for cells of type Cell (uint8_t or uint16_t, the
    // filter's fingerprint_bits; a template argument, not a branch per
    // cell). A chunk of keys is hashed through the one key path
    // (for_each_hash, as hash_chunks does: for integer keys the AVX2
    // schedule of keys.hpp), keeping the 64-bit h1 the filter uses, then
    // one loop over the chunk computes key i's cells and fingerprint,
    // prefetches its three cells, and checks key i - Distance, whose cells
    // went into a small ring when they were computed (LookupRing). The ring
    // runs on across chunks, so no chunk starts with its first keys' lines
    // all missing.
    //
    // A key's cells are in three segments, so three cache lines per key
    // where split_block reads one. On epyc2 (1e7 keys, 11.3 MB, thread CPU
    // time) the three prefetches alone take 5.3 ns/key and the hashing and
    // placing alone 4.9, and the core overlaps them only within one loop:
    // planning every key of a chunk first and reading the cells in a second
    // pass took 9.8 ns/key, one pass computing, prefetching and checking
    // 8.85 (split_block: 6.6). With AVX2 active, keys are placed four at a
    // time on the vector units (lookup_chunk_avx2): 83 -> 61 instructions
    // per key (callgrind, 1e6 keys; split_block 66), 8.25 against 9.20
    // ns/key one at a time (benchmarks/results/
    // 2026-11-26-fuse-lookup-tuning-30622cb-epyc2.md); against split_block
    // it depends on the host (docs/decisions.md, "What the kept fuse loop
    // reaches against split_block depends on the host").
    // Only 8-bit cells are placed four at a time: with 16-bit ones (22.5 MB
    // at 1e7 keys) it was slower, 13.0-13.4 against 11.5-11.7 ns/key one at a
    // time on a quiet machine (benchmarks/results/
    // 2026-11-26-fuse-lookup-tuning-30622cb-epyc2.md).
    // The distance is kFuseLookupDistance; Distance, Chunk and PlaceFour
    // (false: the scalar placement even with AVX2) are parameters only so
    // benchmarks/fuse_lookup_tuning.cpp can sweep and compare them.
    template <class Cell, size_t Distance = kFuseLookupDistance, size_t Chunk = kHashChunk,
              bool PlaceFour = sizeof(Cell) == 1, class Keys>
    void contains_many_as(const Keys& keys, uint8_t* present) const {
        static_assert(std::is_same<Cell, uint8_t>::value || std::is_same<Cell, uint16_t>::value, "8 or 16 bits");
        static_assert(Distance > 0 && Distance <= kMaxLookupDistance, "the ring holds the keys in flight");
        static_assert(Chunk % 4 == 0, "chunks start at a group of four keys (lookup_chunk_avx2)");
        const uint8_t* base = bytes();
        const Placement at(params_);
        LookupRing<Cell> ring;
        alignas(32) uint64_t key_hashes[Chunk];
        const size_t total = keys.size();
        for (size_t first = 0; first < total; first += Chunk) {
            const size_t count = std::min(Chunk, total - first);
            for_each_hash<DigestUse::Stored>(keys, first, count, params_.seed,
                                             [&key_hashes](size_t j, const Hash128& h) { key_hashes[j] = h.h1; });
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
            if (PlaceFour && simd::active_level() == simd::Level::Avx2) {
                lookup_chunk_avx2<Cell, Distance>(at, base, key_hashes, first, count, ring, present);
                continue;
            }
#endif
            lookup_chunk<Cell, Distance>(at, base, key_hashes, first, count, ring, present);
        }
        for (size_t i = total > Distance ? total - Distance : 0; i < total; ++i) present[i] = ring.matches(base, i);
    }

    // The keys a batch lookup holds between prefetch and check: the
    // Distance keys in flight and the group of four placed together.
    static constexpr size_t kLookupSlots = 64;
    static constexpr size_t kMaxLookupDistance = kLookupSlots - 4;

    bool operator==(const BinaryFuseFilter& o) const { return params_ == o.params_ && words_ == o.words_; }

    // --- serialization (docs/FORMAT.md, type tag 6) ---

    static constexpr FilterType kFrameType = FilterType::BinaryFuse;

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    void serialize_to(FrameSink& sink) const {
        write_frame(
            sink, kFrameType, params_.num_words() * sizeof(uint64_t), [&](ByteWriter& w) { params_.write(w); },
            [&](ByteWriter& w) { w.bytes(bytes(), static_cast<size_t>(nbytes())); });
    }

    // The params, checked and matched against the payload length before
    // the array is allocated, then the array read straight into it.
    static BinaryFuseFilter read_from(FrameReader& frame) {
        const BinaryFuseParams p = read_params(frame.params(), frame.payload_length());
        BinaryFuseFilter filter(p);
        uint8_t* out = reinterpret_cast<uint8_t*>(filter.words_.data());
        frame.payload().bytes(out, filter.nbytes(), "fingerprints");
        filter.check_padding();
        return filter;
    }

    static BinaryFuseFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<BinaryFuseFilter>(source);
    }

    // Stored params, validated against a payload of `payload_length` bytes.
    static BinaryFuseParams read_params(ByteReader params, uint64_t payload_length) {
        const BinaryFuseParams p = BinaryFuseParams::read(params);
        params.expect_end("params");
        check_stored(p);
        const uint64_t expected = p.num_words() * sizeof(uint64_t);
        if (payload_length != expected)
            throw FormatError("payload is " + std::to_string(payload_length) + " bytes but the parameters need " +
                              std::to_string(expected));
        return p;
    }

    // A filter over words it does not own (a mapped file's payload).
    BinaryFuseFilter(const BinaryFuseParams& params, WordStorage borrowed)
        : params_(params), words_(std::move(borrowed)) {
        if (words_.size() != params_.num_words()) throw std::logic_error("borrowed storage has the wrong size");
        check_padding();
    }

  private:
    static WordStorage allocate(const BinaryFuseParams& p) {
        check_allocation(p.num_words(), sizeof(uint64_t), "binary fuse fingerprint array");
        try {
            return WordStorage(p.num_words());
        } catch (const std::bad_alloc&) {
            throw refused_allocation(p.num_words() * sizeof(uint64_t), "binary fuse fingerprint array");
        }
    }

    // The bytes past the last fingerprint (up to the word boundary) are
    // zero in every frame this code writes; anything else is corrupt.
    void check_padding() const {
        for (uint64_t i = params_.fingerprint_bytes(); i < nbytes(); ++i)
            if (bytes()[i] != 0) throw FormatError("padding after the fingerprints is not zero");
    }

    static uint64_t mix(uint64_t key_hash, uint64_t build_seed) { return detail::fmix64(key_hash + build_seed); }

    static uint32_t fingerprint_of(uint64_t x) { return static_cast<uint32_t>(x ^ (x >> 32)); }

    // What places a key (probe_of), copied out of the params so that a
    // batch loop holds it in registers: the loop's one-byte answer stores
    // may alias any memory, so fields read through a reference are loaded
    // again after each of them.
    struct Placement {
        uint64_t length, mask, range, build_seed;
        uint32_t fingerprint_mask;
        explicit Placement(const BinaryFuseParams& p)
            : length(p.shape.segment_length),
              mask(p.shape.segment_length - 1),
              range(uint64_t(p.shape.segment_count) * p.shape.segment_length),
              build_seed(p.build_seed),
              fingerprint_mask(p.fingerprint_bits == 8 ? 0xffu : 0xffffu) {}
    };

    static Probe probe_of(const BinaryFuseParams& params, uint64_t x) { return place(Placement(params), x); }

    BLOOMKIT_ALWAYS_INLINE static Probe place(const Placement& at, uint64_t x) {
        const uint64_t h0 = platform::mul_high64(x, at.range);
        Probe p;
        p.cell[0] = h0;
        p.cell[1] = (h0 + at.length) ^ ((x >> 18) & at.mask);
        p.cell[2] = (h0 + 2 * at.length) ^ (x & at.mask);
        p.fingerprint = fingerprint_of(x) & at.fingerprint_mask;
        return p;
    }

    const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(words_.data()); }

    // Cell values are little-endian in memory as in the frame, so a mapped
    // payload is read in place on any machine.
    template <class Cell>
    static uint32_t load_cell(const uint8_t* b, uint64_t i) {
        if (sizeof(Cell) == 1) return b[i];
        return uint32_t(b[2 * i]) | (uint32_t(b[2 * i + 1]) << 8);
    }
    uint32_t cell(uint64_t i) const {
        return params_.fingerprint_bits == 8 ? load_cell<uint8_t>(bytes(), i) : load_cell<uint16_t>(bytes(), i);
    }

    // The keys of a batch between their prefetch and their check: key i in
    // slot i mod kSlots (its three cells and fingerprint, probe_of's
    // values). The methods are always inlined: a function whose only
    // effect is a prefetch is "const" to GCC's ipa-pure-const pass, and its
    // calls are deleted when it is not inlined first (so at -O2 the batch
    // ran with no prefetch at all: 19.2 against 11.3 ns/key at 1e7 keys,
    // fuse_lookup_tuning.cpp).
    // The arrays are 64-bit and 32-byte aligned so that lookup_chunk_avx2
    // stores four keys' values into each with one vector store.
    template <class Cell>
    struct LookupRing {
        static constexpr size_t kSlots = kLookupSlots;
        alignas(32) uint64_t cell0[kSlots];
        alignas(32) uint64_t cell1[kSlots];
        alignas(32) uint64_t cell2[kSlots];
        alignas(32) uint64_t fingerprint[kSlots];

        BLOOMKIT_ALWAYS_INLINE void put(const uint8_t* base, size_t i, const Probe& p) {
            const size_t s = i % kSlots;
            cell0[s] = p.cell[0];
            cell1[s] = p.cell[1];
            cell2[s] = p.cell[2];
            fingerprint[s] = p.fingerprint;
            platform::prefetch_read(base + p.cell[0] * sizeof(Cell));
            platform::prefetch_read(base + p.cell[1] * sizeof(Cell));
            platform::prefetch_read(base + p.cell[2] * sizeof(Cell));
        }
        BLOOMKIT_ALWAYS_INLINE void prefetch_slot(const uint8_t* base, size_t s) const {
            platform::prefetch_read(base + cell0[s] * sizeof(Cell));
            platform::prefetch_read(base + cell1[s] * sizeof(Cell));
            platform::prefetch_read(base + cell2[s] * sizeof(Cell));
        }
        BLOOMKIT_ALWAYS_INLINE bool matches(const uint8_t* base, size_t i) const {
            return matches_slot(base, i % kSlots);
        }
        BLOOMKIT_ALWAYS_INLINE bool matches_slot(const uint8_t* base, size_t s) const {
            return (fingerprint[s] ^ load_cell<Cell>(base, cell0[s]) ^ load_cell<Cell>(base, cell1[s]) ^
                    load_cell<Cell>(base, cell2[s])) == 0;
        }
    };

    // One hashed chunk (keys first .. first + count) through the ring: each
    // key placed and prefetched, the key Distance before it checked. The
    // placement and pointers are taken by value so they stay in registers
    // (Placement).
    template <class Cell, size_t Distance>
    BLOOMKIT_ALWAYS_INLINE static void lookup_chunk(const Placement at, const uint8_t* base, const uint64_t* key_hashes,
                                                    size_t first, size_t count, LookupRing<Cell>& ring,
                                                    uint8_t* present) {
        for (size_t j = 0; j < count; ++j) {
            const size_t i = first + j;
            ring.put(base, i, place(at, mix(key_hashes[j], at.build_seed)));
            if (i >= Distance) present[i - Distance] = ring.matches(base, i - Distance);
        }
    }

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    // lookup_chunk with keys placed four at a time (binary_fuse_avx2.hpp):
    // the mix and placement of four keys take ~37 vector instructions where
    // the scalar code takes ~28 per key. The four keys' values go to
    // the ring with one store per array and are read back one by one for
    // the prefetches (a load is cheaper than extracting a lane); the checks
    // stay scalar. `first` is a multiple of four (Chunk is), so a group's
    // slots are contiguous and aligned; a last group of fewer than four
    // keys is placed by the scalar code. Placing the group before checking
    // keys i - Distance .. i + 3 - Distance needs Distance + 4 slots.
    template <class Cell, size_t Distance>
    BLOOMKIT_TARGET_AVX2 static void lookup_chunk_avx2(const Placement at, const uint8_t* base,
                                                       const uint64_t* key_hashes, size_t first, size_t count,
                                                       LookupRing<Cell>& ring, uint8_t* present) {
        static_assert(Distance + 4 <= LookupRing<Cell>::kSlots, "a group of four and the keys in flight");
        const simd::FusePlacementX4 lanes =
            simd::fuse_placement_x4(at.length, at.mask, at.range, at.build_seed, at.fingerprint_mask);
        size_t j = 0;
        if (at.range <= UINT32_MAX) {  // always, for a stored shape (binary_fuse_avx2.hpp)
            for (; j + 4 <= count; j += 4) {
                const size_t i = first + j;
                const size_t s = i % LookupRing<Cell>::kSlots;
                __m256i cell0, cell1, cell2, fingerprint;
                simd::fuse_place_x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(key_hashes + j)), lanes, cell0,
                                    cell1, cell2, fingerprint);
                _mm256_store_si256(reinterpret_cast<__m256i*>(ring.cell0 + s), cell0);
                _mm256_store_si256(reinterpret_cast<__m256i*>(ring.cell1 + s), cell1);
                _mm256_store_si256(reinterpret_cast<__m256i*>(ring.cell2 + s), cell2);
                _mm256_store_si256(reinterpret_cast<__m256i*>(ring.fingerprint + s), fingerprint);
                // Written out: GCC keeps a four-step loop here, with a
                // counter and a compare per key.
                ring.prefetch_slot(base, s);
                ring.prefetch_slot(base, s + 1);
                ring.prefetch_slot(base, s + 2);
                ring.prefetch_slot(base, s + 3);
                if (i >= Distance && Distance % 4 == 0) {
                    const size_t t = (i - Distance) % LookupRing<Cell>::kSlots;
                    uint8_t* answer = present + (i - Distance);
                    answer[0] = ring.matches_slot(base, t);
                    answer[1] = ring.matches_slot(base, t + 1);
                    answer[2] = ring.matches_slot(base, t + 2);
                    answer[3] = ring.matches_slot(base, t + 3);
                } else {
                    for (size_t k = 0; k < 4; ++k)
                        if (i + k >= Distance) present[i + k - Distance] = ring.matches(base, i + k - Distance);
                }
            }
        }
        lookup_chunk<Cell, Distance>(at, base, key_hashes + j, first + j, count - j, ring, present);
    }
#endif

    bool matches(const Probe& p) const {
        return (p.fingerprint ^ cell(p.cell[0]) ^ cell(p.cell[1]) ^ cell(p.cell[2])) == 0;
    }

    // The peeling construction. Scratch per key: 8 bytes of hashes (the
    // caller's), 8 for the peel order, 1 for each key's own slot; per cell:
    // 8 for the XOR of its keys' hashes, 1 for its count, 4 in the queue.
    class Builder {
      public:
        Builder(std::vector<uint64_t>& hashes, BinaryFuseParams p) : hashes_(hashes), p_(p) {}

        BinaryFuseFilter run() {
            uint64_t state = p_.seed;  // the seeds tried: a fixed sequence per key-hashing seed
            bool deduplicated = false, same_seed = false;
            for (unsigned attempt = 0; attempt < kBinaryFuseMaxAttempts;) {
                p_.num_keys = hashes_.size();
                p_.shape = binary_fuse_shape(p_.num_keys);
                if (!same_seed) p_.build_seed = next_seed(state);
                same_seed = false;
                if (peel()) return assign();
                // A duplicate key hash always leaves a core (its copies share
                // all three cells): the first failure removes duplicates and,
                // if there were any, retries the same seed. So the filter
                // depends only on the set of keys, not on order or repeats.
                if (!deduplicated) {
                    deduplicated = true;
                    const size_t before = hashes_.size();
                    std::sort(hashes_.begin(), hashes_.end());
                    hashes_.erase(std::unique(hashes_.begin(), hashes_.end()), hashes_.end());
                    same_seed = hashes_.size() != before;
                    if (same_seed) continue;
                }
                ++attempt;
            }
            throw BuildError("could not build the binary fuse filter of " + std::to_string(hashes_.size()) +
                             " distinct keys: no construction seed out of " + std::to_string(kBinaryFuseMaxAttempts) +
                             " succeeded");
        }

      private:
        // SplitMix64 (Steele, Lea & Flood, OOPSLA 2014) over a fixed start:
        // the same keys always give the same filter.
        static uint64_t next_seed(uint64_t& state) {
            uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            return z ^ (z >> 31);
        }

        // order_, own_slot_ and queue_ are written before they are read, so
        // they are left uninitialised (no page is touched twice).
        void allocate_scratch() {
            const uint64_t n = p_.num_keys;
            const uint64_t cells = p_.array_length();
            // One check for the whole scratch: 9 bytes per key, 13 per cell.
            check_allocation(n * 9 + cells * 13, 1, "binary fuse construction scratch");
            try {
                order_.reset(new uint64_t[n]);
                own_slot_.reset(new uint8_t[n]);
                queue_.reset(new uint32_t[cells]);
                xors_.assign(cells, 0);
                counts_.assign(cells, 0);
            } catch (const std::bad_alloc&) {
                throw refused_allocation(n * 9 + cells * 13, "binary fuse construction scratch");
            }
        }

        // One attempt with p_.build_seed; true when every key was peeled
        // (order_[0..n) then holds the mixed hashes in peel order).
        bool peel() {
            allocate_scratch();
            const uint64_t n = p_.num_keys;
            if (n == 0) return true;
            // Counting sort of the mixed hashes by their top bits: h0 grows
            // with x, so keys are then added to the cells in array order and
            // the count/XOR updates stay within a few cache lines of one
            // another (the paper's construction does the same).
            unsigned block_bits = 1;
            while ((uint64_t(1) << block_bits) < p_.shape.segment_count && block_bits < 24) ++block_bits;
            std::vector<uint64_t> start((size_t(1) << block_bits) + 1, 0);
            const unsigned shift = 64 - block_bits;
            for (uint64_t h : hashes_) ++start[(mix(h, p_.build_seed) >> shift) + 1];
            for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
            for (uint64_t h : hashes_) {
                const uint64_t x = mix(h, p_.build_seed);
                order_[start[x >> shift]++] = x;
            }
            // Each cell: count << 2 | XOR of the slot numbers (0, 1, 2) its
            // keys use it as, and the XOR of their mixed hashes. With one key
            // left, these are that key's slot and hash. A count past 63
            // overflows the byte: that attempt fails.
            bool overflow = false;
            for (uint64_t i = 0; i < n; ++i) {
                const uint64_t x = order_[i];
                const Probe pr = probe_of(p_, x);
                for (unsigned s = 0; s < 3; ++s) {
                    const uint64_t c = pr.cell[s];
                    counts_[c] = static_cast<uint8_t>((counts_[c] + 4) ^ s);
                    overflow |= counts_[c] < 4;
                    xors_[c] ^= x;
                }
            }
            if (overflow) return false;
            const uint64_t cells = p_.array_length();
            uint64_t queued = 0;
            for (uint64_t c = 0; c < cells; ++c)
                if ((counts_[c] >> 2) == 1) queue_[queued++] = static_cast<uint32_t>(c);
            uint64_t peeled = 0;
            while (queued > 0) {
                const uint64_t c = queue_[--queued];
                if ((counts_[c] >> 2) != 1) continue;  // emptied since it was queued
                const uint64_t x = xors_[c];
                const unsigned slot = counts_[c] & 3;
                order_[peeled] = x;
                own_slot_[peeled] = static_cast<uint8_t>(slot);
                ++peeled;
                const Probe pr = probe_of(p_, x);
                for (unsigned s = 0; s < 3; ++s) {
                    const uint64_t d = pr.cell[s];
                    counts_[d] = static_cast<uint8_t>((counts_[d] - 4) ^ s);
                    xors_[d] ^= x;
                    if (s != slot && (counts_[d] >> 2) == 1) queue_[queued++] = static_cast<uint32_t>(d);
                }
            }
            return peeled == n;
        }

        // Values in reverse peel order: a key's own cell is set after every
        // key peeled later (whose cells it may share) is final.
        BinaryFuseFilter assign() {
            release(xors_);
            release(counts_);
            queue_.reset();
            BinaryFuseFilter filter(p_);
            uint8_t* out = reinterpret_cast<uint8_t*>(filter.words_.data());
            for (uint64_t i = p_.num_keys; i-- > 0;) {
                const Probe pr = probe_of(p_, order_[i]);
                const unsigned own = own_slot_[i];
                const uint64_t c = pr.cell[own];
                const uint32_t value =
                    pr.fingerprint ^ filter.cell(pr.cell[(own + 1) % 3]) ^ filter.cell(pr.cell[(own + 2) % 3]);
                if (p_.fingerprint_bits == 8) {
                    out[c] = static_cast<uint8_t>(value);
                } else {
                    out[2 * c] = static_cast<uint8_t>(value);
                    out[2 * c + 1] = static_cast<uint8_t>(value >> 8);
                }
            }
            return filter;
        }

        template <class T>
        static void release(std::vector<T>& v) {
            std::vector<T>().swap(v);
        }

        std::vector<uint64_t>& hashes_;
        BinaryFuseParams p_;
        std::unique_ptr<uint64_t[]> order_;
        std::unique_ptr<uint8_t[]> own_slot_;
        std::unique_ptr<uint32_t[]> queue_;
        std::vector<uint64_t> xors_;
        std::vector<uint8_t> counts_;
    };

    BinaryFuseParams params_;
    WordStorage words_;
};

// A BinaryFuseFilter over the payload of a mapped file (mapped_file.hpp's
// MappedFile, or anything with data() and size()), in place: every length
// and parameter is checked as for a load, the checksum on request. The
// filter holds `file` for as long as it lives and never writes to it.
template <class File>
BinaryFuseFilter map_binary_fuse(const std::shared_ptr<File>& file, Checksum checksum, FrameInfo* info) {
    const Frame frame = parse_frame(file->data(), static_cast<size_t>(file->size()), FilterType::BinaryFuse, checksum);
    if (reinterpret_cast<uintptr_t>(frame.payload) % kPayloadAlignment != 0)
        throw FormatError("the payload is not 64-byte aligned (a format version " + std::to_string(frame.version) +
                          " file); load() it and save() it again to map it");
    const BinaryFuseParams p =
        BinaryFuseFilter::read_params(ByteReader(frame.params, frame.params_length), frame.payload_length);
    auto* words = reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(frame.payload));
    if (info != nullptr) *info = FrameInfo{frame.version, frame.keyed, frame.key_check};
    return BinaryFuseFilter(p, WordStorage::borrow(words, p.num_words(), file, StorageAccess::ReadOnly));
}

}  // namespace bloomkit
