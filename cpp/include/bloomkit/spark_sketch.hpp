// Apache Spark's Bloom filter (org.apache.spark.util.sketch), bit for bit.
//
// Spark's `df.stat.bloomFilter`, `BloomFilter.create` and its runtime
// join filters use this structure; docs/FORMAT.md ("Spark's Bloom filter")
// gives every fact below with where it comes from. In short:
//
// * Hashing: Spark's variant of MurmurHash3_x86_32. A long is hashed as two
//   4-byte blocks (low int, then high int). Bytes are hashed as 4-byte
//   little-endian blocks, and then *each remaining tail byte, sign-extended to
//   an int, as a block of its own* (full mixK1 + mixH1) -- unlike the
//   reference MurmurHash3, which folds the tail into one block without mixH1.
//   fmix uses the length in bytes (8 for a long).
// * Each key gets h1 = hash(key, seed) and h2 = hash(key, h1).
// * Version 1 (seed always 0): for i = 1..k, c = h1 + i*h2 in 32-bit
//   wrapping arithmetic, c = ~c if negative, bit c mod bitSize.
// * Version 2 (a seed): c = h1 * (2^31 - 1) in 64 bits; for each of k
//   probes, c += h2, bit (c < 0 ? ~c : c) mod bitSize (c itself is kept).
// * Bits: bitSize = 64 * numWords; bit i is bit i mod 64 of word i div 64.
// * Serialized form (Java DataOutputStream, big-endian): int version, int k,
//   [V2: int seed], int numWords, numWords longs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "format.hpp"
#include "pair_hashed_bits.hpp"
#include "platform.hpp"

namespace bloomkit {
namespace spark {

namespace detail {
inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
inline uint32_t mix_k1(uint32_t k1) { return rotl32(k1 * 0xcc9e2d51u, 15) * 0x1b873593u; }
inline uint32_t mix_h1(uint32_t h1, uint32_t k1) { return rotl32(h1 ^ k1, 13) * 5u + 0xe6546b64u; }
inline uint32_t fmix(uint32_t h1, uint32_t length) {
    h1 ^= length;
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6bu;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35u;
    h1 ^= h1 >> 16;
    return h1;
}
}  // namespace detail

// Murmur3_x86_32.hashLong
inline int32_t hash_long(int64_t value, int32_t seed) {
    const uint64_t v = static_cast<uint64_t>(value);
    uint32_t h1 = detail::mix_h1(static_cast<uint32_t>(seed), detail::mix_k1(static_cast<uint32_t>(v)));
    h1 = detail::mix_h1(h1, detail::mix_k1(static_cast<uint32_t>(v >> 32)));
    return static_cast<int32_t>(detail::fmix(h1, 8));
}

// Murmur3_x86_32.hashUnsafeBytes (Spark's tail handling, see above). Lengths
// are Java ints, so at most 2^31 - 1 bytes.
inline int32_t hash_bytes(const uint8_t* data, size_t length, int32_t seed) {
    const size_t aligned = length - length % 4;
    uint32_t h1 = static_cast<uint32_t>(seed);
    for (size_t i = 0; i < aligned; i += 4) {
        const uint32_t block =
            uint32_t(data[i]) | uint32_t(data[i + 1]) << 8 | uint32_t(data[i + 2]) << 16 | uint32_t(data[i + 3]) << 24;
        h1 = detail::mix_h1(h1, detail::mix_k1(block));
    }
    for (size_t i = aligned; i < length; ++i) {
        const uint32_t sign_extended = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(data[i])));
        h1 = detail::mix_h1(h1, detail::mix_k1(sign_extended));
    }
    return static_cast<int32_t>(detail::fmix(h1, static_cast<uint32_t>(length)));
}

// A key's two hashes: h1 = hash(key, seed), h2 = hash(key, h1).
struct HashPair {
    int32_t h1;
    int32_t h2;
};

inline HashPair hash_pair_long(int64_t value, int32_t seed) {
    const int32_t h1 = hash_long(value, seed);
    return {h1, hash_long(value, h1)};
}

inline HashPair hash_pair_bytes(const uint8_t* data, size_t length, int32_t seed) {
    const int32_t h1 = hash_bytes(data, length, seed);
    return {h1, hash_bytes(data, length, h1)};
}

// The hash pairs of a batch, the loops the bindings run with the GIL
// released over a NumPy int64 array or Arrow-style strings.

// Java longs: out[i] = hash_pair_long(values[i], seed).
inline void hash_pairs_of_longs(const int64_t* values, size_t count, int32_t seed, HashPair* out) {
    for (size_t i = 0; i < count; ++i) out[i] = hash_pair_long(values[i], seed);
}

// Strings as Arrow lays them out: key i is bytes [offsets[i], offsets[i+1])
// of `data` (`data_size` bytes). Each pair of offsets is read once and
// checked as it is used, since the caller's buffers may change while this
// runs (another Python thread, the GIL released). Returns `count`, or the
// index of the first key whose offsets are not monotone within the data
// (out[i] is written only for the keys before it).
inline size_t hash_pairs_of_offsets(const uint8_t* data, uint64_t data_size, const int64_t* offsets, size_t count,
                                    int32_t seed, HashPair* out) {
    for (size_t i = 0; i < count; ++i) {
        const int64_t start = offsets[i], end = offsets[i + 1];
        if (start < 0 || end < start || static_cast<uint64_t>(end) > data_size) return i;
        out[i] = hash_pair_bytes(data + start, static_cast<size_t>(end - start), seed);
    }
    return count;
}

// Bounds on what a serialized filter may claim. Spark's own limits: numWords
// is a positive Java int. k is not bounded by Spark (create(1, 2^20 bits)
// gives k = 726,817); a key costs k probes, so a loaded k is capped to keep a
// hostile file from turning every lookup into a near-endless loop.
constexpr int32_t kMaxSparkHashes = 1 << 16;

class SparkBloomFilter : public PairHashedBits<SparkBloomFilter, HashPair> {
  public:
    SparkBloomFilter(int32_t version, int32_t num_hashes, int32_t seed, uint64_t num_words)
        : version_(version), num_hashes_(num_hashes), seed_(seed) {
        validate(version, num_hashes, seed, num_words);
        words_.assign(num_words, 0);
    }

    int32_t version() const { return version_; }
    int32_t num_hashes() const { return num_hashes_; }
    int32_t seed() const { return seed_; }
    const std::vector<uint64_t>& words() const { return words_; }

    // Calls f(bit) for each of the key's k probe positions, in Spark's order.
    template <class F>
    void for_each_position(HashPair h, F&& f) const {
        const uint64_t bits = num_bits();
        if (version_ == 1) {
            for (int32_t i = 1; i <= num_hashes_; ++i) {
                int32_t c = static_cast<int32_t>(static_cast<uint32_t>(h.h1) +
                                                 static_cast<uint32_t>(i) * static_cast<uint32_t>(h.h2));
                if (c < 0) c = ~c;
                f(static_cast<uint64_t>(c) % bits);
            }
        } else {
            uint64_t c =
                static_cast<uint64_t>(static_cast<int64_t>(h.h1) * int64_t(std::numeric_limits<int32_t>::max()));
            for (int32_t i = 0; i < num_hashes_; ++i) {
                c += static_cast<uint64_t>(static_cast<int64_t>(h.h2));
                const int64_t signed_c = static_cast<int64_t>(c);
                f(static_cast<uint64_t>(signed_c < 0 ? ~signed_c : signed_c) % bits);
            }
        }
    }

    bool contains(HashPair h) const {
        bool present = true;
        for_each_position(h, [&](uint64_t bit) { present &= (words_[bit >> 6] >> (bit & 63)) & 1; });
        return present;
    }

    void union_with(const SparkBloomFilter& other) {
        if (!(version_ == other.version_ && num_hashes_ == other.num_hashes_ && seed_ == other.seed_ &&
              words_.size() == other.words_.size()))
            throw std::invalid_argument("union needs Spark filters with equal version, bit size, num_hashes and seed");
        or_words(other);
    }

    bool operator==(const SparkBloomFilter& other) const {
        return version_ == other.version_ && num_hashes_ == other.num_hashes_ && seed_ == other.seed_ &&
               words_ == other.words_;
    }

    // BloomFilter.writeTo: big-endian ints and longs.
    std::vector<uint8_t> serialize() const {
        std::vector<uint8_t> out;
        out.reserve(16 + 8 * words_.size());
        put_be(out, static_cast<uint32_t>(version_), 4);
        put_be(out, static_cast<uint32_t>(num_hashes_), 4);
        if (version_ == 2) put_be(out, static_cast<uint32_t>(seed_), 4);
        put_be(out, static_cast<uint32_t>(words_.size()), 4);
        for (uint64_t w : words_) put_be(out, w, 8);
        return out;
    }

    // BloomFilter.readFrom, validated: the length must match the header
    // exactly, and the header is checked before anything is allocated.
    static SparkBloomFilter deserialize(const uint8_t* data, size_t len) {
        size_t pos = 0;
        auto read_int = [&](const char* what) {
            if (len - pos < 4) throw FormatError(std::string("Spark Bloom filter truncated while reading ") + what);
            const uint32_t v = static_cast<uint32_t>(get_be(data + pos, 4));
            pos += 4;
            return static_cast<int32_t>(v);
        };
        const int32_t version = read_int("the version");
        if (version != 1 && version != 2)
            throw FormatError("not a Spark Bloom filter: version " + std::to_string(version) +
                              " (Spark writes 1 or 2)");
        const int32_t num_hashes = read_int("numHashFunctions");
        const int32_t seed = version == 2 ? read_int("the seed") : 0;
        const int32_t num_words = read_int("the word count");
        try {
            validate(version, num_hashes, seed, num_words < 0 ? 0 : static_cast<uint64_t>(num_words));
        } catch (const std::invalid_argument& e) {
            throw FormatError(std::string("invalid Spark Bloom filter: ") + e.what());
        }
        const uint64_t expected = pos + 8 * static_cast<uint64_t>(num_words);
        if (len != expected)
            throw FormatError("Spark Bloom filter is " + std::to_string(len) + " bytes but its header says " +
                              std::to_string(expected));
        SparkBloomFilter filter(version, num_hashes, seed, static_cast<uint64_t>(num_words));
        for (auto& w : filter.words_) {
            w = get_be(data + pos, 8);
            pos += 8;
        }
        return filter;
    }

  private:
    static void validate(int32_t version, int32_t num_hashes, int32_t seed, uint64_t num_words) {
        if (version != 1 && version != 2) throw std::invalid_argument("version must be 1 or 2");
        if (num_hashes < 1 || num_hashes > kMaxSparkHashes)
            throw std::invalid_argument("numHashFunctions must be in [1, " + std::to_string(kMaxSparkHashes) +
                                        "], got " + std::to_string(num_hashes));
        if (version == 1 && seed != 0) throw std::invalid_argument("version 1 filters have no seed (it is 0)");
        if (num_words < 1 || num_words > uint64_t(std::numeric_limits<int32_t>::max()))
            throw std::invalid_argument("the word count must be in [1, 2^31 - 1], got " + std::to_string(num_words));
    }

    static void put_be(std::vector<uint8_t>& out, uint64_t v, int width) {
        for (int i = width - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
    static uint64_t get_be(const uint8_t* p, int width) {
        uint64_t v = 0;
        for (int i = 0; i < width; ++i) v = (v << 8) | p[i];
        return v;
    }

    int32_t version_;
    int32_t num_hashes_;
    int32_t seed_;
};

}  // namespace spark
}  // namespace bloomkit
