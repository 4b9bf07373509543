// Parquet's split-block Bloom filter in the core (parquet_bloom.hpp) and
// xxHash64 (xxhash64.hpp): the published xxHash64 vectors, the Thrift
// header reader's refusals, and the batch probes equal the single probe.
#include <doctest/doctest.h>

#include <bloomkit/parquet_bloom.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace bloomkit;
using namespace bloomkit::parquet;

namespace {

uint64_t xxh(const std::string& s, uint64_t seed = 0) {
    return xxhash64(reinterpret_cast<const uint8_t*>(s.data()), s.size(), seed);
}

// A header as parquet-cpp writes it: numBytes, then the three unions
// holding their member 1 (an empty struct each), then STOP.
std::vector<uint8_t> header_bytes(uint32_t num_bytes) {
    std::vector<uint8_t> out = {0x15};
    uint64_t v = static_cast<uint64_t>(num_bytes) << 1;  // zigzag of a non-negative i32
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
    for (int i = 0; i < 3; ++i) out.insert(out.end(), {0x1c, 0x1c, 0x00, 0x00});
    out.push_back(0x00);
    return out;
}

}  // namespace

TEST_CASE("xxHash64: the published vectors") {
    // xxHash's README / python-xxhash's README values.
    CHECK(xxh("") == 0xEF46DB3751D8E999ULL);
    CHECK(xxh("a") == 0xD24EC4F1A98C6E5BULL);
    CHECK(xxh("abc") == 0x44BC2CF5AD770999ULL);
    CHECK(xxh("Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1ULL);
}

TEST_CASE("xxHash64: the 4- and 8-byte shortcuts equal the byte path") {
    for (uint64_t x : {0ULL, 1ULL, 0xFFFFFFFFFFFFFFFFULL, 0x0123456789ABCDEFULL, 1ULL << 63}) {
        uint8_t bytes[8];
        for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(x >> (8 * i));
        CHECK(xxhash64_u64(x) == xxhash64(bytes, 8));
        CHECK(xxhash64_u32(static_cast<uint32_t>(x)) == xxhash64(bytes, 4));
        CHECK(xxhash64_u64(x, 99) == xxhash64(bytes, 8, 99));
    }
}

TEST_CASE("Parquet header: parquet-cpp's bytes parse; every truncation is refused") {
    const std::vector<uint8_t> h = header_bytes(1024);
    const BloomHeader parsed = parse_bloom_header(h.data(), h.size());
    CHECK(parsed.num_bytes == 1024);
    CHECK(parsed.header_size == h.size());
    for (size_t cut = 0; cut < h.size(); ++cut) CHECK_THROWS_AS(parse_bloom_header(h.data(), cut), FormatError);
}

TEST_CASE("Parquet header: sizes out of bounds and unknown union members are refused") {
    for (uint32_t bad : {0u, 16u, 33u, kMaxBitsetBytes + 32u}) {
        const std::vector<uint8_t> h = header_bytes(bad);
        CHECK_THROWS_WITH_AS(parse_bloom_header(h.data(), h.size()), doctest::Contains("numBytes"), FormatError);
    }
    std::vector<uint8_t> h = header_bytes(64);
    h[4] = 0x2c;  // algorithm's member 2: a later algorithm
    CHECK_THROWS_WITH_AS(parse_bloom_header(h.data(), h.size()), doctest::Contains("algorithm is not BLOCK"),
                         FormatError);
    // Deep nesting inside an unknown field stops at the cap, not the stack.
    std::vector<uint8_t> deep = {0x15, 0x80, 0x01, 0x5c};  // numBytes 64, field 6: a struct
    for (int i = 0; i < 1000; ++i) deep.push_back(0x1c);
    CHECK_THROWS_WITH_AS(parse_bloom_header(deep.data(), deep.size()), doctest::Contains("nested deeper"), FormatError);
}

TEST_CASE("Parquet filter: bitset size must equal the header's; batch probes equal single probes") {
    std::vector<uint8_t> data = header_bytes(64);
    const size_t header = data.size();
    data.resize(header + 64, 0);
    CHECK_THROWS_AS(ParquetBloomFilter::parse(data.data(), data.size() - 1), FormatError);
    // Set key 7's bits the way BloomFilter.md's insert does.
    const uint64_t h = xxhash64_u64(7);
    const uint64_t block = ((h >> 32) * 2) >> 32;
    const uint32_t key = static_cast<uint32_t>(h);
    for (int i = 0; i < 8; ++i) {
        const uint32_t bit = (key * SplitBlockLayout::kSalts[i]) >> 27;
        data[header + 32 * block + 4 * i + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    }
    const ParquetBloomFilter f = ParquetBloomFilter::parse(data.data(), data.size());
    CHECK(f.num_blocks() == 2);
    CHECK(f.set_bits() == 8);
    CHECK(f.contains_hash(h));
    std::vector<int64_t> values;
    for (int64_t i = 0; i < 300; ++i) values.push_back(i);
    std::vector<uint8_t> out(values.size());
    f.contains_fixed(reinterpret_cast<const uint8_t*>(values.data()), 8, values.size(), out.data());
    for (size_t i = 0; i < values.size(); ++i) CHECK(out[i] == f.contains_hash(xxhash64_u64(values[i])));
    CHECK(out[7] == 1);

    const std::string text = "abcdefg";
    const std::vector<int64_t> offsets = {0, 3, 3, 7};
    std::vector<uint8_t> found(3);
    CHECK(f.contains_offsets(reinterpret_cast<const uint8_t*>(text.data()), text.size(), offsets.data(), 3,
                             found.data()) == 3);
    CHECK(found[1] == f.contains_hash(xxh("")));
    const std::vector<int64_t> past_end = {0, 3, 8, 8};
    CHECK(f.contains_offsets(reinterpret_cast<const uint8_t*>(text.data()), text.size(), past_end.data(), 3,
                             found.data()) == 1);
}
