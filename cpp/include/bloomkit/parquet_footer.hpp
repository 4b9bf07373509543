// Where a column's Bloom filters are, from a Parquet file's footer
// (parquet-format's FileMetaData, Thrift compact), for skipping many files:
// the column's leaf index by its path through the schema tree, and each row
// group's ColumnMetaData bloom_filter_offset (14) / bloom_filter_length (15).
// Everything else is skipped by the bounded reader of parquet_bloom.hpp; a
// malformed footer is a FormatError. A chunk whose metadata is not readable
// here (in another file, or encrypted) reports no filter, so a skipping
// caller keeps it: never a false "no".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format.hpp"
#include "parquet_bloom.hpp"

namespace bloomkit {
namespace parquet {

// Schema trees deeper than this are refused (a hostile num_children chain).
constexpr size_t kMaxSchemaDepth = 256;

struct ChunkFilter {
    int64_t offset = -1;  // -1: the chunk has no Bloom filter (or none this reader can see)
    int32_t length = -1;  // -1: the writer did not record the length
};

struct ColumnFilters {
    bool found = false;
    uint64_t leaf_index = 0;
    // The leaf's SchemaElement bytes: equal bytes mean an equal column type,
    // so a caller converts keys once per distinct signature.
    std::string signature;
    std::vector<ChunkFilter> row_groups;
};

namespace detail {

inline void expect_type(CompactReader& in, uint8_t type, uint8_t wanted, const char* what) {
    if (type != wanted) in.fail(std::string(what) + " has Thrift type " + std::to_string(type));
}

// A list header: its element type and count (every element takes at least
// one byte, so a count above the bytes left is a truncation).
inline uint64_t list_header(CompactReader& in, uint8_t element_type, const char* what) {
    const uint8_t head = in.byte(what);
    uint64_t count = head >> 4;
    if (count == 15) count = in.varint(what);
    if ((head & 0x0f) != element_type) in.fail(std::string(what) + " holds Thrift type " + std::to_string(head & 0x0f));
    if (count > in.remaining()) in.fail(std::string("truncated while reading ") + what);
    return count;
}

struct SchemaElement {
    std::string name;
    int64_t num_children = 0;
};

inline SchemaElement read_schema_element(CompactReader& in) {
    SchemaElement element;
    int16_t id = 0;
    uint8_t type = 0;
    while (in.field(id, type, "a SchemaElement field")) {
        if (id == 4 && type == kBinary) {
            const uint64_t length = in.varint("a column name's length");
            const uint8_t* start = in.take(length, "a column name");
            element.name.assign(reinterpret_cast<const char*>(start), static_cast<size_t>(length));
        } else if (id == 5 && type == kI32) {
            element.num_children = in.i32("num_children");
            if (element.num_children < 0) in.fail("num_children is negative");
        } else {
            in.skip(type, 2);
        }
    }
    return element;
}

inline ChunkFilter read_column_chunk(CompactReader& in) {
    ChunkFilter chunk;
    bool elsewhere = false;
    int16_t id = 0;
    uint8_t type = 0;
    while (in.field(id, type, "a ColumnChunk field")) {
        if (id == 1) {
            elsewhere = true;  // file_path: the chunk lives in another file
            in.skip(type, 2);
        } else if (id == 3 && type == kStruct) {
            int16_t meta_id = 0;
            uint8_t meta_type = 0;
            while (in.field(meta_id, meta_type, "a ColumnMetaData field")) {
                if (meta_id == 14) {
                    expect_type(in, meta_type, kI64, "bloom_filter_offset");
                    chunk.offset = in.zigzag("bloom_filter_offset");
                    if (chunk.offset < 0) in.fail("bloom_filter_offset is negative");
                } else if (meta_id == 15) {
                    expect_type(in, meta_type, kI32, "bloom_filter_length");
                    chunk.length = in.i32("bloom_filter_length");
                    if (chunk.length < 0) in.fail("bloom_filter_length is negative");
                } else {
                    in.skip(meta_type, 3);
                }
            }
        } else {
            in.skip(type, 2);
        }
    }
    if (elsewhere) chunk = ChunkFilter{};
    return chunk;
}

}  // namespace detail

// The Bloom filters of the leaf column at `path` (its names from the root's
// child down) in the FileMetaData bytes `footer`.
inline ColumnFilters find_column_filters(const uint8_t* footer, size_t size, const std::vector<std::string>& path) {
    detail::CompactReader in(footer, size, "Parquet footer: ");
    ColumnFilters result;
    bool have_schema = false;
    int16_t id = 0;
    uint8_t type = 0;
    while (in.field(id, type, "a FileMetaData field")) {
        if (id == 2) {
            detail::expect_type(in, type, detail::kList, "schema");
            const uint64_t count = detail::list_header(in, detail::kStruct, "the schema");
            if (count == 0) in.fail("the schema is empty");
            std::vector<std::string> names;
            std::vector<int64_t> remaining;
            remaining.push_back(detail::read_schema_element(in).num_children);
            uint64_t leaf = 0;
            for (uint64_t e = 1; e < count; ++e) {
                if (remaining.empty()) in.fail("the schema has elements outside its tree");
                const size_t start = in.position();
                detail::SchemaElement element = detail::read_schema_element(in);
                names.push_back(std::move(element.name));
                if (element.num_children > 0) {
                    if (remaining.size() >= kMaxSchemaDepth)
                        in.fail("the schema is deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
                    remaining.push_back(element.num_children);
                    continue;
                }
                if (!result.found && names == path) {
                    result.found = true;
                    result.leaf_index = leaf;
                    result.signature.assign(reinterpret_cast<const char*>(footer + start), in.position() - start);
                }
                ++leaf;
                names.pop_back();
                // Close every group this leaf completes.
                while (!remaining.empty()) {
                    if (--remaining.back() > 0) break;
                    remaining.pop_back();
                    if (!remaining.empty()) names.pop_back();
                }
            }
            have_schema = true;
        } else if (id == 4) {
            detail::expect_type(in, type, detail::kList, "row_groups");
            if (!have_schema) in.fail("row_groups come before the schema");
            const uint64_t count = detail::list_header(in, detail::kStruct, "row_groups");
            for (uint64_t g = 0; g < count; ++g) {
                ChunkFilter chunk;
                bool have_column = false;
                int16_t group_id = 0;
                uint8_t group_type = 0;
                while (in.field(group_id, group_type, "a RowGroup field")) {
                    if (group_id != 1 || group_type != detail::kList) {
                        in.skip(group_type, 2);
                        continue;
                    }
                    const uint64_t columns = detail::list_header(in, detail::kStruct, "a row group's columns");
                    for (uint64_t c = 0; c < columns; ++c) {
                        if (result.found && c == result.leaf_index) {
                            chunk = detail::read_column_chunk(in);
                            have_column = true;
                        } else {
                            in.skip(detail::kStruct, 2);
                        }
                    }
                }
                if (result.found && !have_column)
                    in.fail("row group " + std::to_string(g) + " has no column " + std::to_string(result.leaf_index));
                result.row_groups.push_back(chunk);
            }
        } else {
            in.skip(type, 1);
        }
    }
    if (!have_schema) in.fail("the schema is missing");
    if (!result.found) result.row_groups.clear();
    return result;
}

}  // namespace parquet
}  // namespace bloomkit
