// Parquet's split-block Bloom filter in the core (parquet_bloom.hpp), its
// footer reader (parquet_footer.hpp), file skipping (parquet_skip.hpp) and xxHash64 (xxhash64.hpp): the
// published xxHash64 vectors, the Thrift readers' refusals, the batch probes
// equal the single probe, and a struct's leaf found with its filters.
#include <doctest/doctest.h>

#include <bloomkit/parquet_bloom.hpp>
#include <bloomkit/parquet_footer.hpp>
#include <bloomkit/parquet_skip.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"

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

namespace {

// Thrift compact pieces for a FileMetaData built field by field.
struct Compact {
    std::vector<uint8_t> out;
    void field(int delta, uint8_t type) { out.push_back(static_cast<uint8_t>(delta << 4 | type)); }
    void varint(uint64_t v) {
        while (v >= 0x80) {
            out.push_back(static_cast<uint8_t>(v | 0x80));
            v >>= 7;
        }
        out.push_back(static_cast<uint8_t>(v));
    }
    void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
    void binary(const std::string& s) {
        varint(s.size());
        out.insert(out.end(), s.begin(), s.end());
    }
    void list(size_t count, uint8_t type) { out.push_back(static_cast<uint8_t>(count << 4 | type)); }
    void stop() { out.push_back(0); }
    // SchemaElement {4: name, 5: num_children (groups only)}.
    void schema_element(const std::string& name, int children) {
        field(4, 8);
        binary(name);
        if (children > 0) {
            field(1, 5);
            zigzag(children);
        }
        stop();
    }
};

// Schema: root { a, s { id } }; two row groups; s.id has a filter in the
// second only, with and without a recorded length.
std::vector<uint8_t> two_row_groups_footer(int64_t offset, int32_t length) {
    Compact c;
    c.field(1, 5);  // 1: version
    c.zigzag(1);
    c.field(1, 9);  // 2: schema
    c.list(4, 12);
    c.schema_element("root", 2);
    c.schema_element("a", 0);
    c.schema_element("s", 1);
    c.schema_element("id", 0);
    c.field(1, 6);  // 3: num_rows
    c.zigzag(10);
    c.field(1, 9);  // 4: row_groups
    c.list(2, 12);
    for (int g = 0; g < 2; ++g) {
        c.field(1, 9);  // RowGroup 1: columns
        c.list(2, 12);
        for (int column = 0; column < 2; ++column) {
            c.field(2, 6);  // ColumnChunk 2: file_offset
            c.zigzag(4);
            c.field(1, 12);  // 3: meta_data
            c.field(1, 5);   // ColumnMetaData 1: type
            c.zigzag(2);
            if (g == 1 && column == 1) {
                c.field(13, 6);  // 14: bloom_filter_offset
                c.zigzag(offset);
                if (length >= 0) {
                    c.field(1, 5);  // 15: bloom_filter_length
                    c.zigzag(length);
                }
            }
            c.stop();  // meta_data
            c.stop();  // ColumnChunk
        }
        c.stop();  // RowGroup
    }
    c.stop();  // FileMetaData
    return c.out;
}

}  // namespace

TEST_CASE("Parquet footer: a leaf inside a struct, its filters per row group; every truncation refused") {
    const std::vector<uint8_t> footer = two_row_groups_footer(123456789012LL, 4096);
    const ColumnFilters found = find_column_filters(footer.data(), footer.size(), {"s", "id"});
    REQUIRE(found.found);
    CHECK(found.leaf_index == 1);
    REQUIRE(found.row_groups.size() == 2);
    CHECK(found.row_groups[0].offset == -1);
    CHECK(found.row_groups[1].offset == 123456789012LL);
    CHECK(found.row_groups[1].length == 4096);
    const ColumnFilters flat = find_column_filters(footer.data(), footer.size(), {"a"});
    CHECK(flat.found);
    CHECK(flat.leaf_index == 0);
    CHECK(flat.signature != found.signature);
    CHECK_FALSE(find_column_filters(footer.data(), footer.size(), {"s"}).found);  // a group, not a leaf
    const std::vector<uint8_t> unrecorded = two_row_groups_footer(77, -1);
    CHECK(find_column_filters(unrecorded.data(), unrecorded.size(), {"s", "id"}).row_groups[1].length == -1);
    for (size_t cut = 0; cut < footer.size(); ++cut)
        CHECK_THROWS_AS(find_column_filters(footer.data(), cut, {"s", "id"}), FormatError);
    const std::vector<uint8_t> negative = two_row_groups_footer(-5, 10);
    CHECK_THROWS_WITH_AS(find_column_filters(negative.data(), negative.size(), {"s", "id"}),
                         doctest::Contains("bloom_filter_offset is negative"), FormatError);
}

TEST_CASE("Parquet skipping: a key set's masks answer as the filter's own probe, both SIMD levels") {
    // Filters from 1 to 64 blocks, three quarters of their bits set: some key sets
    // hit, some miss, and any_in must agree with contains_hash either way.
    for (uint32_t blocks : {1u, 3u, 64u}) {
        std::vector<uint8_t> data = header_bytes(32 * blocks);
        const size_t header = data.size();
        data.resize(header + 32 * blocks);
        for (size_t i = 0; i < 32 * blocks; ++i) {
            const uint64_t r = bloomkit_test::splitmix64(i + 1000 * blocks);
            data[header + i] = static_cast<uint8_t>((r | (r >> 8)) & 0xff);  // each bit set with p = 3/4
        }
        const ParquetBloomFilter f = ParquetBloomFilter::parse(data.data(), data.size());
        size_t hits = 0;
        for (uint64_t set = 0; set < 200; ++set) {
            const std::vector<uint64_t> hashes = bloomkit_test::distinct_keys(1 + set % 7, set);
            const KeyProbes probes(hashes.data(), hashes.size());
            bool expected = false;
            for (uint64_t h : hashes) expected = expected || f.contains_hash(h);
            CHECK(probes.any_in(data.data() + header, blocks) == expected);
            hits += expected;
        }
        CHECK(hits > 0);
        CHECK(hits < 200);
    }
    CHECK_FALSE(KeyProbes().any_in(nullptr, 1));  // no keys: nothing may be present
}

namespace {

// A Parquet file in memory: magic, the filter of s.id's second row group at
// offset 4, the footer, its length and the magic.
std::vector<uint8_t> file_with_filter(const std::vector<uint8_t>& filter, int32_t recorded_length) {
    std::vector<uint8_t> file = {'P', 'A', 'R', '1'};
    file.insert(file.end(), filter.begin(), filter.end());
    const std::vector<uint8_t> footer = two_row_groups_footer(4, recorded_length);
    file.insert(file.end(), footer.begin(), footer.end());
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<uint8_t>(footer.size() >> (8 * i)));
    file.insert(file.end(), {'P', 'A', 'R', '1'});
    return file;
}

SkipStop skip_memory(FileSkipper& skipper, const std::vector<std::vector<uint8_t>>& files) {
    return skipper.run(files.size(), 0,
                       [&](size_t i) { return std::make_unique<MemoryFile>(files[i].data(), files[i].size()); });
}

}  // namespace

TEST_CASE("Parquet skipping: files walked in the core, keys asked for once per column type, bad files named") {
    // The filter of row group 1 holds key 7 only.
    std::vector<uint8_t> filter = header_bytes(64);
    const size_t header = filter.size();
    filter.resize(header + 64, 0);
    const uint64_t h = xxhash64_u64(7);
    const uint64_t block = ((h >> 32) * 2) >> 32;
    for (int i = 0; i < 8; ++i) {
        const uint32_t bit = (static_cast<uint32_t>(h) * SplitBlockLayout::kSalts[i]) >> 27;
        filter[header + 32 * block + 4 * i + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    }
    const std::vector<std::vector<uint8_t>> files = {file_with_filter(filter, static_cast<int32_t>(filter.size())),
                                                     file_with_filter(filter, -1)};
    FileSkipper skipper({"s", "id"});
    SkipStop stop = skip_memory(skipper, files);
    REQUIRE(stop.kind == SkipStop::kNeedKeys);
    CHECK(stop.file == 0);
    const uint64_t present = h;
    skipper.add_keys(stop.signature, &present, 1);
    CHECK(skip_memory(skipper, files).kind == SkipStop::kDone);
    // Row group 0 has no filter (always a candidate); 1 holds the key, in both files.
    CHECK(skipper.candidates() == std::vector<Candidate>{{0, 0}, {0, 1}, {1, 0}, {1, 1}});

    FileSkipper absent({"s", "id"});
    const uint64_t other = xxhash64_u64(8);
    absent.add_keys(stop.signature, &other, 1);
    CHECK(skip_memory(absent, files).kind == SkipStop::kDone);
    CHECK(absent.candidates() == std::vector<Candidate>{{0, 0}, {1, 0}});

    FileSkipper group({"s"});
    CHECK(skip_memory(group, files).kind == SkipStop::kNoColumn);

    // Every cut of the file is refused (never read past its end), naming the
    // file; the candidates of a refused file are not kept.
    for (size_t cut = 0; cut < files[1].size(); ++cut) {
        FileSkipper cut_skipper({"s", "id"});
        cut_skipper.add_keys(stop.signature, &present, 1);
        const std::vector<std::vector<uint8_t>> cut_files = {
            files[0], std::vector<uint8_t>(files[1].begin(), files[1].begin() + cut)};
        const SkipStop refused = skip_memory(cut_skipper, cut_files);
        CHECK(refused.kind == SkipStop::kMalformed);
        CHECK(refused.file == 1);
        CHECK(cut_skipper.candidates().size() == 2);
    }
    // A filter recorded longer than the file, and one whose header declares
    // more than the recorded length holds.
    FileSkipper bounded({"s", "id"});
    bounded.add_keys(stop.signature, &present, 1);
    const std::vector<std::vector<uint8_t>> too_long = {file_with_filter(filter, 1 << 20)};
    const SkipStop past_end = skip_memory(bounded, too_long);
    CHECK(past_end.kind == SkipStop::kMalformed);
    CHECK(past_end.row_group == 1);
    CHECK(past_end.reason == "the recorded filter length 1048576 at offset 4 does not fit the file");
    const std::vector<std::vector<uint8_t>> short_length = {file_with_filter(filter, 40)};
    const SkipStop truncated = skip_memory(bounded, short_length);
    CHECK(truncated.kind == SkipStop::kMalformed);
    CHECK(truncated.reason.find("Parquet Bloom filter: the header declares a 64-byte bitset") == 0);
}
