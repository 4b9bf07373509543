// The framed filter types of the core: one list, one row per type. Every
// other list of types is derived from it — the FilterType enum, the name
// table and the header's tag check (here), the binding loop of the module
// (cpp/bindings/module.cpp), the fuzzer's dispatch (fuzz/load_fuzzer.cpp) and
// bloomkit._core.filter_types(), which the Python registry checks itself
// against at import.
//
// A row is X(Enum, tag, "PythonName", bind_function):
//   Enum           FilterType::Enum; the core class is bloomkit::<Enum>Filter
//                  (X(Bloom, ...) -> bloomkit::BloomFilter), found by that name
//                  by the fuzzer and the C++ tests;
//   tag            the format's type tag (docs/FORMAT.md): 1..0x3fff, rows in
//                  increasing tag order (bits 14 and 15 are the header's flags);
//   "PythonName"   the public Python class, in messages and filter_types();
//   bind_function  void bind_function(pybind11::module_&), defined in the type's
//                  own cpp/bindings/<type>.cpp (the bindings are globbed by CMake).
//
// Adding a type: one row here, its core header, its bindings file.
#pragma once

#include <cstddef>
#include <cstdint>

#define BLOOMKIT_FILTER_TYPES(X)                                    \
    X(Bloom, 1, "BloomFilter", bind_bloom)                          \
    X(CountingBloom, 2, "CountingBloomFilter", bind_counting_bloom) \
    X(ScalableBloom, 3, "ScalableBloomFilter", bind_scalable_bloom) \
    X(Cuckoo, 4, "CuckooFilter", bind_cuckoo)                       \
    X(RotatingBloom, 5, "RotatingBloomFilter", bind_rotating_bloom) \
    X(BinaryFuse, 6, "BinaryFuseFilter", bind_binary_fuse)

namespace bloomkit {

#define BLOOMKIT_FILTER_TYPE_ENUMERATOR(Enum, tag, name, bind) Enum = tag,
enum class FilterType : uint16_t { BLOOMKIT_FILTER_TYPES(BLOOMKIT_FILTER_TYPE_ENUMERATOR) };
#undef BLOOMKIT_FILTER_TYPE_ENUMERATOR

struct FilterTypeRow {
    FilterType type;
    uint16_t tag;
    const char* python_name;
};

#define BLOOMKIT_FILTER_TYPE_ROW(Enum, tag, name, bind) FilterTypeRow{FilterType::Enum, tag, name},
inline constexpr FilterTypeRow kFilterTypes[] = {BLOOMKIT_FILTER_TYPES(BLOOMKIT_FILTER_TYPE_ROW)};
#undef BLOOMKIT_FILTER_TYPE_ROW

inline constexpr size_t kFilterTypeCount = sizeof kFilterTypes / sizeof kFilterTypes[0];

// Tags strictly increasing (so unique, and filter_types() comes out in tag
// order) and clear of the header's flag bits (kKeyedFlag 0x8000,
// kOpenForWritingFlag 0x4000, format.hpp) and of 0, which no frame carries.
constexpr bool filter_type_tags_are_valid() {
    uint16_t previous = 0;
    for (const FilterTypeRow& row : kFilterTypes) {
        if (row.tag <= previous || row.tag > 0x3fff || static_cast<uint16_t>(row.type) != row.tag) return false;
        previous = row.tag;
    }
    return true;
}
static_assert(filter_type_tags_are_valid(), "BLOOMKIT_FILTER_TYPES: tags must be 1..0x3fff, strictly increasing");

// Whether a type tag (flag bits already removed) names a type of this build.
constexpr bool is_filter_type_tag(uint16_t tag) {
    for (const FilterTypeRow& row : kFilterTypes)
        if (row.tag == tag) return true;
    return false;
}

// The Python class name of a type, for messages ("data holds a CuckooFilter,
// not a BloomFilter").
constexpr const char* filter_type_name(FilterType type) {
    for (const FilterTypeRow& row : kFilterTypes)
        if (row.type == type) return row.python_name;
    return "unknown";
}

}  // namespace bloomkit
