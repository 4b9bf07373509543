// Apache ORC's Bloom filter (org.apache.orc.util.BloomFilter), bit for bit.
//
// ORC files hold one of these per column per row-index stride; Hive and
// Spark write them. docs/FORMAT.md ("ORC's Bloom filter") gives the bytes.
// What ORC's Java code does, and so what this does:
//
// * Bytes (strings as UTF-8, binary) are hashed with ORC's Murmur3.hash64:
//   the 64-bit MurmurHash3 that walks 8-byte little-endian blocks with the
//   x64_128 constants and mixing of h1 only (h = rotl(h ^ k, 27) * 5 +
//   0x52dce729), folds the tail into one block, then h ^= length and fmix64.
//   Seed 104729. It is not the first half of MurmurHash3_x64_128.
// * Longs are not hashed with Murmur3 but with Thomas Wang's 64-bit integer
//   hash (`getLongHash`, arithmetic right shifts). Doubles (and floats,
//   widened) are the long Double.doubleToLongBits(x): raw IEEE bits, every
//   NaN as 0x7ff8000000000000.
// * Probes (Kirsch & Mitzenmacher 2006, "Less hashing, same performance"):
//   hash1 = low 32 bits, hash2 = high 32 bits of the 64-bit hash; for
//   i = 1..k, c = hash1 + i * hash2 in 32-bit wrapping arithmetic, c = ~c if
//   negative, bit c mod m (m = 64 * words, a positive Java int).
// * Bits: bit i is bit i mod 64 of the long i div 64.
// * Sizing (BloomFilter(n, fpp)): nb = (int)(-n ln fpp / (ln 2)^2),
//   m = nb + 64 - nb mod 64 (a whole word more when nb is a multiple of 64),
//   k = max(1, round(m / n * ln 2)) -- from the rounded-up m.
// * Serialized as the protobuf message orc.proto.BloomFilter:
//   1: uint32 num_hash_functions, 2: repeated fixed64 bitset (the legacy
//   BLOOM_FILTER stream, not packed), 3: bytes utf8bitset (the words
//   little-endian; the BLOOM_FILTER_UTF8 stream every current writer uses).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "format.hpp"
#include "hash.hpp"
#include "pair_hashed_bits.hpp"
#include "platform.hpp"
#include "protobuf_wire.hpp"

namespace bloomkit {
namespace orc {

constexpr uint32_t kMurmurSeed = 104729;  // Murmur3.DEFAULT_SEED in ORC

namespace detail {
// MurmurHash3's 64-bit pieces are hash.hpp's (rotl64, load_le64, the x64
// constants in mix_k1, fmix64); only the one-lane body is ORC's own.
using bloomkit::detail::fmix64;
using bloomkit::detail::load_le64;
using bloomkit::detail::mix_k1;
using bloomkit::detail::rotl64;
// Java's >> on a long: arithmetic.
inline uint64_t sar(uint64_t x, int n) { return static_cast<uint64_t>(static_cast<int64_t>(x) >> n); }
}  // namespace detail

// Murmur3.hash64(data, 0, length, 104729).
inline uint64_t hash_bytes(const uint8_t* data, size_t length) {
    uint64_t h = kMurmurSeed;
    const size_t blocks = length / 8;
    for (size_t i = 0; i < blocks; ++i) {
        h ^= detail::mix_k1(detail::load_le64(data + 8 * i));
        h = detail::rotl64(h, 27) * 5 + 0x52dce729ULL;
    }
    const size_t tail = length - 8 * blocks;
    if (tail != 0) {
        uint64_t k = 0;
        for (size_t i = tail; i-- > 0;) k = (k << 8) | data[8 * blocks + i];
        h ^= detail::mix_k1(k);
    }
    // Java's `hash ^= length` with an int length: lengths are below 2^31.
    h ^= static_cast<uint64_t>(length);
    return detail::fmix64(h);
}

// BloomFilter.getLongHash: Thomas Wang's 64-bit integer hash.
inline uint64_t hash_long(int64_t value) {
    uint64_t key = static_cast<uint64_t>(value);
    key = (~key) + (key << 21);
    key = key ^ detail::sar(key, 24);
    key = (key + (key << 3)) + (key << 8);
    key = key ^ detail::sar(key, 14);
    key = (key + (key << 2)) + (key << 4);
    key = key ^ detail::sar(key, 28);
    key = key + (key << 31);
    return key;
}

// Double.doubleToLongBits: the IEEE bits, NaNs collapsed to one.
inline int64_t double_to_long_bits(double value) {
    if (value != value) return 0x7ff8000000000000LL;
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

inline uint64_t hash_double(double value) { return hash_long(double_to_long_bits(value)); }

// A key's two 32-bit probe hashes, as ORC splits the 64-bit hash.
struct HashPair {
    int32_t hash1;  // (int) hash64
    int32_t hash2;  // (int) (hash64 >>> 32)
};

inline HashPair split(uint64_t hash64) {
    return {static_cast<int32_t>(static_cast<uint32_t>(hash64)), static_cast<int32_t>(hash64 >> 32)};
}

// The batch loops behind the bindings' batch calls, run with the GIL
// released over NumPy arrays or Arrow-style strings.
inline void hash_pairs_of_longs(const int64_t* values, size_t count, HashPair* out) {
    for (size_t i = 0; i < count; ++i) out[i] = split(hash_long(values[i]));
}

inline void hash_pairs_of_doubles(const double* values, size_t count, HashPair* out) {
    for (size_t i = 0; i < count; ++i) out[i] = split(hash_double(values[i]));
}

// Key i is bytes [offsets[i], offsets[i+1]) of `data`. Each pair of offsets
// is read once and checked as it is used (the caller's buffers may change
// while the GIL is released). Returns `count`, or the index of the first key
// whose offsets are not monotone within the data.
inline size_t hash_pairs_of_offsets(const uint8_t* data, uint64_t data_size, const int64_t* offsets, size_t count,
                                    HashPair* out) {
    for (size_t i = 0; i < count; ++i) {
        const int64_t start = offsets[i], end = offsets[i + 1];
        if (start < 0 || end < start || static_cast<uint64_t>(end) > data_size) return i;
        out[i] = split(hash_bytes(data + start, static_cast<size_t>(end - start)));
    }
    return count;
}

// Bounds of a filter. m = 64 * words must be a positive Java int (ORC's
// numBits is an int), so at most 2^25 - 1 words. ORC does not bound k; a key
// costs k probes, so a loaded k is capped to keep a hostile file from making
// every lookup a near-endless loop (ORC's own sizing gives k <= 100 for any
// fpp above 1e-30).
constexpr uint64_t kMaxOrcWords = (uint64_t(1) << 25) - 1;
constexpr uint32_t kMaxOrcHashes = 1 << 16;

// How the words are stored in the message (see the top of this file).
enum class Encoding { Utf8Bitset, Bitset };

class OrcBloomFilter : public PairHashedBits<OrcBloomFilter, HashPair> {
  public:
    OrcBloomFilter(uint32_t num_hashes, uint64_t num_words) : num_hashes_(num_hashes) {
        validate(num_hashes, num_words);
        words_.assign(num_words, 0);
    }

    // ORC's hashing has one fixed seed (Murmur3.DEFAULT_SEED; getLongHash has
    // none); the bindings' Guarded<Core> asks every core for its seed.
    uint32_t seed() const { return kMurmurSeed; }
    uint32_t num_hashes() const { return num_hashes_; }
    const uint64_t* words() const { return words_.data(); }

    template <class F>
    void for_each_position(HashPair h, F&& f) const {
        const uint32_t bits = static_cast<uint32_t>(num_bits());  // < 2^31
        for (uint32_t i = 1; i <= num_hashes_; ++i) {
            int32_t c = static_cast<int32_t>(static_cast<uint32_t>(h.hash1) + i * static_cast<uint32_t>(h.hash2));
            if (c < 0) c = ~c;
            f(static_cast<uint32_t>(c) % bits);
        }
    }

    // Stops at the first clear bit: most absent keys cost one or two probes
    // instead of k.
    bool contains(HashPair h) const {
        const uint32_t bits = static_cast<uint32_t>(num_bits());
        for (uint32_t i = 1; i <= num_hashes_; ++i) {
            int32_t c = static_cast<int32_t>(static_cast<uint32_t>(h.hash1) + i * static_cast<uint32_t>(h.hash2));
            if (c < 0) c = ~c;
            const uint32_t bit = static_cast<uint32_t>(c) % bits;
            if (((words_[bit >> 6] >> (bit & 63)) & 1) == 0) return false;
        }
        return true;
    }

    // BloomFilter.merge: equal m and k.
    void union_with(const OrcBloomFilter& other) {
        if (num_hashes_ != other.num_hashes_ || words_.size() != other.words_.size())
            throw std::invalid_argument("union needs ORC filters with equal bit size and num_hashes");
        or_words(other);
    }

    bool operator==(const OrcBloomFilter& other) const {
        return num_hashes_ == other.num_hashes_ && words_ == other.words_;
    }

    // BloomFilterIO.serialize + toByteArray(): fields in number order, the
    // words as field 3 (BloomFilterUtf8) or as one field 2 each (legacy).
    std::vector<uint8_t> serialize(Encoding encoding = Encoding::Utf8Bitset) const {
        std::vector<uint8_t> out;
        out.reserve(16 + 9 * words_.size());
        protobuf::put_tag(out, 1, protobuf::kVarint);
        protobuf::put_varint(out, num_hashes_);
        if (encoding == Encoding::Utf8Bitset) {
            protobuf::put_tag(out, 3, protobuf::kLengthDelimited);
            protobuf::put_varint(out, 8 * words_.size());
            for (uint64_t w : words_) protobuf::put_fixed64(out, w);
        } else {
            for (uint64_t w : words_) {
                protobuf::put_tag(out, 2, protobuf::kFixed64);
                protobuf::put_fixed64(out, w);
            }
        }
        return out;
    }

    // An orc.proto.BloomFilter message, either encoding (repeated fixed64
    // packed or not). The message is walked once to find and bound the
    // fields before the words are allocated; fields ORC does not define are
    // skipped, as protobuf readers do. A message with words in both fields
    // is refused: ORC writes one of them, and which one counts depends on the
    // stream it came from.
    static OrcBloomFilter deserialize(const uint8_t* data, size_t len) {
        protobuf::WireReader reader(data, len, "ORC BloomFilter");
        bool has_k = false;
        uint64_t k = 0;
        uint64_t bitset_words = 0;
        const uint8_t* utf8 = nullptr;
        size_t utf8_size = 0;
        bool has_utf8 = false;
        while (!reader.done()) {
            const protobuf::Field f = reader.next();
            if (f.number == 1) {
                if (f.wire_type != protobuf::kVarint) reader.fail("num_hash_functions is not a varint");
                has_k = true;
                k = f.value;
            } else if (f.number == 2) {
                if (f.wire_type == protobuf::kFixed64) {
                    bitset_words += 1;
                } else if (f.wire_type == protobuf::kLengthDelimited) {
                    if (f.size % 8 != 0) reader.fail("packed bitset of " + std::to_string(f.size) + " bytes");
                    bitset_words += f.size / 8;
                } else {
                    reader.fail("bitset is neither fixed64 nor packed fixed64");
                }
            } else if (f.number == 3) {
                if (f.wire_type != protobuf::kLengthDelimited) reader.fail("utf8bitset is not bytes");
                has_utf8 = true;  // proto2 optional bytes: the last one counts
                utf8 = f.data;
                utf8_size = f.size;
            }
        }
        if (!has_k) reader.fail("no num_hash_functions");
        if (has_utf8 && bitset_words != 0) reader.fail("words in both bitset and utf8bitset");
        if (has_utf8 && utf8_size % 8 != 0)
            reader.fail("utf8bitset of " + std::to_string(utf8_size) + " bytes, not whole 64-bit words");
        const uint64_t words = has_utf8 ? utf8_size / 8 : bitset_words;
        try {
            validate(k, words);
        } catch (const std::invalid_argument& e) {
            reader.fail(e.what());
        }
        OrcBloomFilter filter(static_cast<uint32_t>(k), words);
        if (has_utf8) {
            for (uint64_t i = 0; i < words; ++i) filter.words_[i] = protobuf::get_fixed64(utf8 + 8 * i);
            return filter;
        }
        protobuf::WireReader again(data, len, "ORC BloomFilter");
        size_t next = 0;
        while (!again.done()) {
            const protobuf::Field f = again.next();
            if (f.number != 2) continue;
            if (f.wire_type == protobuf::kFixed64) {
                filter.words_[next++] = f.value;
            } else {
                for (size_t i = 0; i < f.size; i += 8) filter.words_[next++] = protobuf::get_fixed64(f.data + i);
            }
        }
        return filter;
    }

  private:
    static void validate(uint64_t num_hashes, uint64_t num_words) {
        if (num_hashes < 1 || num_hashes > kMaxOrcHashes)
            throw std::invalid_argument("num_hash_functions must be in [1, " + std::to_string(kMaxOrcHashes) +
                                        "], got " + std::to_string(num_hashes));
        if (num_words < 1 || num_words > kMaxOrcWords)
            throw std::invalid_argument("the bitset must hold 1 to " + std::to_string(kMaxOrcWords) +
                                        " 64-bit words, got " + std::to_string(num_words));
    }

    uint32_t num_hashes_;
};

}  // namespace orc
}  // namespace bloomkit
