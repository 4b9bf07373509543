// Parquet's split-block Bloom filter (parquet-format BloomFilter.md), read
// and probed: the Thrift-compact BloomFilterHeader a column chunk's filter
// starts with, and its bitset probed with Parquet's own hashing.
//
// Bytes: BloomFilterHeader {1: numBytes i32, 2: algorithm union {1: BLOCK},
// 3: hash union {1: XXHASH}, 4: compression union {1: UNCOMPRESSED}} in
// Thrift's compact protocol, then numBytes of bitset: blocks of 256 bits,
// eight little-endian uint32 words each.
//
// A key is xxHash64 (seed 0) of its plain encoding, h; its block is
// ((h >> 32) * num_blocks) >> 32 and word i of that block must have bit
// ((uint32)h * SALT[i]) >> 27 set — the block and salts of bloomkit's
// split_block layout (layouts.hpp), whose in-block kernel this reuses; only
// the block choice and the hash differ. Parquet's words are little-endian
// uint32 pairs, which are exactly split_block's 64-bit words (lane 2w in the
// low half) once each 8 bytes are read little-endian.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "format.hpp"
#include "layouts.hpp"
#include "memory.hpp"
#include "platform.hpp"
#include "simd.hpp"
#include "storage.hpp"
#include "xxhash64.hpp"

namespace bloomkit {
namespace parquet {

// Bitset bounds: at least one block; at most 128 MiB, the cap
// parquet-format's BloomFilter.md gives writers (Arrow's reader refuses
// more), so a hostile numBytes never sizes an allocation.
constexpr uint32_t kBlockBytes = 32;
constexpr uint32_t kMaxBitsetBytes = 128u << 20;
// Structs inside unknown fields (skipped) may nest this deep; deeper is refused
// rather than recursed into.
constexpr int kMaxThriftNesting = 16;

struct BloomHeader {
    uint32_t num_bytes = 0;  // bitset bytes that follow the header
    size_t header_size = 0;  // bytes of the Thrift header itself
};

namespace detail {

// Thrift compact protocol types (thrift/doc/specs/thrift-compact-protocol.md).
enum CompactType : uint8_t {
    kStop = 0,
    kBoolTrue = 1,
    kBoolFalse = 2,
    kByte = 3,
    kI16 = 4,
    kI32 = 5,
    kI64 = 6,
    kDouble = 7,
    kBinary = 8,
    kList = 9,
    kSet = 10,
    kMap = 11,
    kStruct = 12,
};

// A bounded reader of the compact protocol over caller's bytes: every length
// is checked against the bytes left before it is used, nesting is capped,
// and every failure is a FormatError naming what was being read.
class CompactReader {
  public:
    // `context` starts every error message ("Parquet footer: ", ...).
    CompactReader(const uint8_t* data, size_t size, const char* context = "Parquet Bloom filter header: ")
        : data_(data), size_(size), context_(context) {}

    size_t position() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    [[noreturn]] void fail(const std::string& what) const { throw FormatError(context_ + what); }

    // The next `count` bytes, in place.
    const uint8_t* take(uint64_t count, const char* what) {
        const uint8_t* start = data_ + pos_;
        skip_bytes(count, what);
        return start;
    }

    uint8_t byte(const char* what) {
        if (pos_ >= size_) fail(std::string("truncated while reading ") + what);
        return data_[pos_++];
    }

    uint64_t varint(const char* what) {
        uint64_t value = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            const uint8_t b = byte(what);
            if (shift == 63 && b > 1) break;
            value |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return value;
        }
        fail(std::string("varint of ") + what + " is longer than 64 bits");
    }

    int64_t zigzag(const char* what) {
        const uint64_t v = varint(what);
        return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
    }

    int32_t i32(const char* what) {
        const int64_t v = zigzag(what);
        if (v < INT32_MIN || v > INT32_MAX) fail(std::string(what) + " is out of the i32 range");
        return static_cast<int32_t>(v);
    }

    // A field header: its type, and its id (delta-encoded or explicit).
    // Returns false at the struct's STOP.
    bool field(int16_t& id, uint8_t& type, const char* what) {
        const uint8_t b = byte(what);
        if (b == kStop) return false;
        type = b & 0x0f;
        const uint8_t delta = b >> 4;
        if (delta != 0) {
            id = static_cast<int16_t>(id + delta);
        } else {
            const int64_t explicit_id = zigzag(what);
            if (explicit_id < INT16_MIN || explicit_id > INT16_MAX) fail(std::string(what) + ": field id out of range");
            id = static_cast<int16_t>(explicit_id);
        }
        return true;
    }

    void skip_bytes(uint64_t count, const char* what) {
        if (count > size_ - pos_) fail(std::string("truncated while reading ") + what);
        pos_ += static_cast<size_t>(count);
    }

    // Skips one value of `type`; `in_collection`: a bool is then a byte of
    // its own (in a struct field the type carries it).
    void skip(uint8_t type, int depth, bool in_collection = false) {
        if (depth > kMaxThriftNesting)
            fail("values nested deeper than " + std::to_string(kMaxThriftNesting) + " levels");
        switch (type) {
            case kBoolTrue:
            case kBoolFalse:
                if (in_collection) byte("a bool");
                return;
            case kByte: byte("a byte"); return;
            case kI16:
            case kI32:
            case kI64: varint("an integer"); return;
            case kDouble: skip_bytes(8, "a double"); return;
            case kBinary: skip_bytes(varint("a binary length"), "a binary value"); return;
            case kList:
            case kSet: {
                const uint8_t head = byte("a list header");
                uint64_t count = head >> 4;
                if (count == 15) count = varint("a list size");
                // Every element takes at least one byte: a larger count is a
                // truncation, found before any loop runs that long.
                if (count > size_ - pos_) fail("truncated while reading a list");
                for (uint64_t i = 0; i < count; ++i) skip(head & 0x0f, depth + 1, true);
                return;
            }
            case kMap: {
                const uint64_t count = varint("a map size");
                if (count == 0) return;
                const uint8_t kinds = byte("a map's key and value types");
                if (count > size_ - pos_) fail("truncated while reading a map");
                for (uint64_t i = 0; i < count; ++i) {
                    skip(kinds >> 4, depth + 1, true);
                    skip(kinds & 0x0f, depth + 1, true);
                }
                return;
            }
            case kStruct: {
                int16_t id = 0;
                uint8_t field_type = 0;
                while (field(id, field_type, "a struct field")) skip(field_type, depth + 1);
                return;
            }
            default: fail("unknown Thrift compact type " + std::to_string(type));
        }
    }

  private:
    const uint8_t* data_;
    size_t size_;
    std::string context_;
    size_t pos_ = 0;
};

// One of the header's unions, which must hold member 1 (the only member
// the spec defines: BLOCK, XXHASH, UNCOMPRESSED), an empty struct.
inline void read_union(CompactReader& in, const char* name, const char* member) {
    int16_t id = 0;
    uint8_t type = 0;
    bool found = false;
    while (in.field(id, type, name)) {
        if (id != 1 || type != kStruct)
            in.fail(std::string(name) + " is not " + member + " (union member " + std::to_string(id) +
                    "), which bloomkit cannot read");
        in.skip(kStruct, 2);
        found = true;
    }
    if (!found) in.fail(std::string(name) + " is not set");
}

}  // namespace detail

// Parses the header at the start of `data`. Does not need the bitset: a
// reader that does not know the filter's length reads a prefix first.
inline BloomHeader parse_bloom_header(const uint8_t* data, size_t size) {
    detail::CompactReader in(data, size);
    int16_t id = 0;
    uint8_t type = 0;
    bool have_num_bytes = false, have_algorithm = false, have_hash = false, have_compression = false;
    int32_t num_bytes = 0;
    auto expect = [&](uint8_t wanted, const char* name) {
        if (type != wanted)
            in.fail(std::string(name) + " has Thrift type " + std::to_string(type) + ", expected " +
                    std::to_string(wanted));
    };
    while (in.field(id, type, "a BloomFilterHeader field")) {
        switch (id) {
            case 1:
                expect(detail::kI32, "numBytes");
                num_bytes = in.i32("numBytes");
                have_num_bytes = true;
                break;
            case 2:
                expect(detail::kStruct, "algorithm");
                detail::read_union(in, "algorithm", "BLOCK");
                have_algorithm = true;
                break;
            case 3:
                expect(detail::kStruct, "hash");
                detail::read_union(in, "hash", "XXHASH");
                have_hash = true;
                break;
            case 4:
                expect(detail::kStruct, "compression");
                detail::read_union(in, "compression", "UNCOMPRESSED");
                have_compression = true;
                break;
            default: in.skip(type, 1);  // a field a later format version added
        }
    }
    if (!have_num_bytes) in.fail("numBytes is missing");
    if (!have_algorithm) in.fail("algorithm is missing");
    if (!have_hash) in.fail("hash is missing");
    if (!have_compression) in.fail("compression is missing");
    if (num_bytes < static_cast<int32_t>(kBlockBytes) || static_cast<uint32_t>(num_bytes) > kMaxBitsetBytes ||
        num_bytes % kBlockBytes != 0)
        in.fail("numBytes " + std::to_string(num_bytes) + " is not a whole number of 32-byte blocks in [32, " +
                std::to_string(kMaxBitsetBytes) + "]");
    return BloomHeader{static_cast<uint32_t>(num_bytes), in.position()};
}

// Parquet's hash of n fixed-width values (see contains_fixed) and of n
// BYTE_ARRAY values (see contains_offsets; returns n or the first bad index).
template <class HashOf>
void hash_each(size_t n, HashOf&& hash_of, uint64_t* out) {
    for (size_t i = 0; i < n; ++i) out[i] = hash_of(i);
}

inline uint64_t hash_fixed_value(const uint8_t* value, size_t width) {
    if (width == 4) return xxhash64_u32(static_cast<uint32_t>(bloomkit::detail::load_le32(value)));
    if (width == 8) return xxhash64_u64(bloomkit::detail::load_le64(value));
    return xxhash64(value, width);
}

inline void hash_fixed(const uint8_t* values, size_t width, size_t n, uint64_t* out) {
    hash_each(
        n, [&](size_t i) { return hash_fixed_value(values + width * i, width); }, out);
}

inline size_t first_bad_offset(uint64_t data_size, const int64_t* offsets, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (offsets[i] < 0 || offsets[i + 1] < offsets[i] || static_cast<uint64_t>(offsets[i + 1]) > data_size)
            return i;
    return n;
}

inline uint64_t hash_offset_value(const uint8_t* data, const int64_t* offsets, size_t i) {
    return xxhash64(data + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
}

inline size_t hash_offsets(const uint8_t* data, uint64_t data_size, const int64_t* offsets, size_t n, uint64_t* out) {
    const size_t bad = first_bad_offset(data_size, offsets, n);
    if (bad != n) return bad;
    hash_each(
        n, [&](size_t i) { return hash_offset_value(data, offsets, i); }, out);
    return n;
}

// A column chunk's filter: read-only, probed with Parquet's hashing.
class ParquetBloomFilter {
  public:
    static constexpr uint64_t kBlockWords = SplitBlockLayout::kBlockWords;

    // `data`: the header followed by exactly its numBytes of bitset.
    static ParquetBloomFilter parse(const uint8_t* data, size_t size) {
        const BloomHeader header = check_bytes(data, size);
        return ParquetBloomFilter(data + header.header_size, header.num_bytes);
    }

    // The header of a filter's bytes, checked to be followed by exactly its
    // bitset (what parse reads; file skipping probes the bytes in place).
    static BloomHeader check_bytes(const uint8_t* data, size_t size) {
        const BloomHeader header = parse_bloom_header(data, size);
        const size_t rest = size - header.header_size;
        if (rest != header.num_bytes)
            throw FormatError("Parquet Bloom filter: the header declares a " + std::to_string(header.num_bytes) +
                              "-byte bitset, " + std::to_string(rest) + " bytes follow it" +
                              (rest < header.num_bytes ? " (truncated)" : ""));
        return header;
    }

    // The bitset alone (numBytes, a whole number of blocks).
    ParquetBloomFilter(const uint8_t* bitset, uint32_t num_bytes)
        : words_(checked_words(num_bytes)), num_blocks_(num_bytes / kBlockBytes) {
        uint64_t* words = words_.data();
        for (uint64_t i = 0; i < words_.size(); ++i) words[i] = bloomkit::detail::load_le64(bitset + 8 * i);
    }

    uint64_t num_blocks() const { return num_blocks_; }
    uint64_t num_bytes() const { return num_blocks_ * kBlockBytes; }

    // Parquet's block choice: the high 32 bits of the hash, scaled to the
    // block count (BloomFilter.md, "Technical Approach").
    uint64_t block_of(uint64_t hash) const { return ((hash >> 32) * num_blocks_) >> 32; }

    bool contains_hash(uint64_t hash) const {
        const uint64_t* block = words_.data() + block_of(hash) * kBlockWords;
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2)
            return SplitBlockLayout::contains_block<simd::Level::Avx2>(block, static_cast<uint32_t>(hash));
#endif
        return SplitBlockLayout::contains_block<simd::Level::Portable>(block, static_cast<uint32_t>(hash));
    }

    // out[i] = whether key i may be present, for keys hashed by hash_of(i):
    // a chunk is hashed and its blocks prefetched before it is probed, so
    // the cache misses of a large filter overlap.
    template <class HashOf>
    void contains_each(size_t n, HashOf&& hash_of, uint8_t* out) const {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2) return probe_each<simd::Level::Avx2>(n, hash_of, out);
#endif
        probe_each<simd::Level::Portable>(n, hash_of, out);
    }

    void contains_hashes(const uint64_t* hashes, size_t n, uint8_t* out) const {
        contains_each(
            n, [&](size_t i) { return hashes[i]; }, out);
    }

    // n values of `width` bytes each, back to back: INT32/FLOAT (4),
    // INT64/DOUBLE (8) in little-endian, FIXED_LEN_BYTE_ARRAY (any width).
    void contains_fixed(const uint8_t* values, size_t width, size_t n, uint8_t* out) const {
        if (width == 4)
            return contains_each(
                n,
                [&](size_t i) {
                    return xxhash64_u32(static_cast<uint32_t>(bloomkit::detail::load_le32(values + 4 * i)));
                },
                out);
        if (width == 8)
            return contains_each(
                n, [&](size_t i) { return xxhash64_u64(bloomkit::detail::load_le64(values + 8 * i)); }, out);
        contains_each(
            n, [&](size_t i) { return xxhash64(values + width * i, width); }, out);
    }

    // BYTE_ARRAY values: value i is data[offsets[i], offsets[i + 1]). The
    // offsets are checked first; returns n, or the index of the first value
    // whose offsets go backwards or leave the data (nothing is then probed).
    size_t contains_offsets(const uint8_t* data, uint64_t data_size, const int64_t* offsets, size_t n,
                            uint8_t* out) const {
        const size_t bad = first_bad_offset(data_size, offsets, n);
        if (bad != n) return bad;
        contains_each(
            n, [&](size_t i) { return hash_offset_value(data, offsets, i); }, out);
        return n;
    }

    // Whether any of n hashed keys may be present: stops at the first one
    // (a file-skipping query asks only that, for many filters and one key set
    // hashed once).
    bool contains_any_hash(const uint64_t* hashes, size_t n) const {
        constexpr size_t kChunk = 64;
        uint8_t found[kChunk];
        for (size_t start = 0; start < n; start += kChunk) {
            const size_t count = std::min(kChunk, n - start);
            contains_hashes(hashes + start, count, found);
            for (size_t i = 0; i < count; ++i)
                if (found[i]) return true;
        }
        return false;
    }

    // Bits set, for the fill ratio (and so an FPR estimate) of a read filter.
    uint64_t set_bits() const {
        uint64_t count = 0;
        for (uint64_t i = 0; i < words_.size(); ++i) count += platform::popcount64(words_.data()[i]);
        return count;
    }

    bool operator==(const ParquetBloomFilter& other) const {
        return num_blocks_ == other.num_blocks_ &&
               std::equal(words_.data(), words_.data() + words_.size(), other.words_.data());
    }

  private:
    // The bitset's storage, its size checked before anything is allocated.
    static WordStorage checked_words(uint32_t num_bytes) {
        if (num_bytes == 0 || num_bytes % kBlockBytes != 0 || num_bytes > kMaxBitsetBytes)
            throw FormatError("Parquet Bloom filter: a bitset of " + std::to_string(num_bytes) +
                              " bytes is not a whole number of 32-byte blocks in [32, " +
                              std::to_string(kMaxBitsetBytes) + "]");
        return WordStorage(check_allocation(num_bytes / 8, 8, "Parquet Bloom filter"));
    }

    template <simd::Level L, class HashOf>
    void probe_each(size_t n, HashOf& hash_of, uint8_t* out) const {
        constexpr size_t kChunk = 64;
        uint64_t hashes[kChunk];
        const uint64_t* words = words_.data();
        for (size_t start = 0; start < n; start += kChunk) {
            const size_t count = std::min(kChunk, n - start);
            for (size_t i = 0; i < count; ++i) {
                hashes[i] = hash_of(start + i);
                platform::prefetch_read(words + block_of(hashes[i]) * kBlockWords);
            }
            for (size_t i = 0; i < count; ++i)
                out[start + i] = SplitBlockLayout::contains_block<L>(words + block_of(hashes[i]) * kBlockWords,
                                                                     static_cast<uint32_t>(hashes[i]));
        }
    }

    WordStorage words_;
    uint64_t num_blocks_;
};

}  // namespace parquet
}  // namespace bloomkit
