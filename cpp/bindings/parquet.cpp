// ParquetBloomCore: a Parquet column chunk's split-block Bloom filter
// (cpp/include/bloomkit/parquet_bloom.hpp), read-only. Argument conversion
// only: the Python layer (bloomkit/parquet.py) turns keys into their plain
// encodings (fixed-width values or Arrow offsets); the probes run here with
// the GIL released. No guard: nothing writes the filter after it is read.
#include <bloomkit/parquet_bloom.hpp>
#include <bloomkit/parquet_footer.hpp>
#include <bloomkit/parquet_skip.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "guard.hpp"

namespace bloomkit_py {

namespace parquet = bloomkit::parquet;
using parquet::ParquetBloomFilter;

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style>;
using I64Array = py::array_t<int64_t, py::array::c_style>;

py::array_t<bool> contains_fixed(const ParquetBloomFilter& self, const U8Array& values, size_t width) {
    if (width == 0) throw py::value_error("value width must be at least 1 byte");
    const size_t size = static_cast<size_t>(values.size());
    if (size % width != 0)
        throw py::value_error(std::to_string(size) + " bytes are not a whole number of " + std::to_string(width) +
                              "-byte values");
    const size_t n = size / width;
    auto result = new_bool_array(n);
    uint8_t* out = bool_data(result);
    const uint8_t* data = values.data();
    AccessGuard::without_gil([&] { self.contains_fixed(data, width, n, out); });
    return result;
}

py::array_t<bool> contains_offsets(const ParquetBloomFilter& self, const U8Array& data, const I64Array& offsets) {
    if (offsets.size() < 1) throw py::value_error("offsets must hold at least one value");
    const size_t n = static_cast<size_t>(offsets.size()) - 1;
    auto result = new_bool_array(n);
    uint8_t* out = bool_data(result);
    const uint8_t* bytes = data.data();
    const uint64_t data_size = static_cast<uint64_t>(data.size());
    const int64_t* offs = offsets.data();
    const size_t done = AccessGuard::without_gil([&] { return self.contains_offsets(bytes, data_size, offs, n, out); });
    if (done != n)
        throw py::value_error("offsets are not monotone within the data buffer at index " + std::to_string(done));
    return result;
}

py::array_t<uint64_t> new_hash_array(size_t n) { return py::array_t<uint64_t>(static_cast<py::ssize_t>(n)); }

py::array_t<uint64_t> hash_fixed(const U8Array& values, size_t width) {
    if (width == 0) throw py::value_error("value width must be at least 1 byte");
    const size_t size = static_cast<size_t>(values.size());
    if (size % width != 0)
        throw py::value_error(std::to_string(size) + " bytes are not a whole number of " + std::to_string(width) +
                              "-byte values");
    const size_t n = size / width;
    auto result = new_hash_array(n);
    uint64_t* out = result.mutable_data();
    const uint8_t* data = values.data();
    AccessGuard::without_gil([&] { parquet::hash_fixed(data, width, n, out); });
    return result;
}

py::array_t<uint64_t> hash_offsets(const U8Array& data, const I64Array& offsets) {
    if (offsets.size() < 1) throw py::value_error("offsets must hold at least one value");
    const size_t n = static_cast<size_t>(offsets.size()) - 1;
    auto result = new_hash_array(n);
    uint64_t* out = result.mutable_data();
    const uint8_t* bytes = data.data();
    const uint64_t data_size = static_cast<uint64_t>(data.size());
    const int64_t* offs = offsets.data();
    const size_t done = AccessGuard::without_gil([&] { return parquet::hash_offsets(bytes, data_size, offs, n, out); });
    if (done != n)
        throw py::value_error("offsets are not monotone within the data buffer at index " + std::to_string(done));
    return result;
}

}  // namespace

void bind_parquet(py::module_& m) {
    py::class_<ParquetBloomFilter> cls(m, "ParquetBloomCore",
                                       "C++ core of bloomkit.parquet.ParquetBloomFilter; use that class instead.");
    cls.def(py::init([](py::handle data) {
                ByteBuffer buffer(data);
                return AccessGuard::without_gil(
                    [&] { return new ParquetBloomFilter(ParquetBloomFilter::parse(buffer.data(), buffer.size())); });
            }),
            py::arg("data"));
    cls.def("_contains_fixed", &contains_fixed, py::arg("values"), py::arg("width"));
    cls.def("_contains_offsets", &contains_offsets, py::arg("data"), py::arg("offsets"));
    cls.def(
        "_contains_any_hash",
        [](const ParquetBloomFilter& self, const py::array_t<uint64_t, py::array::c_style>& hashes) {
            const uint64_t* h = hashes.data();
            const size_t n = static_cast<size_t>(hashes.size());
            return AccessGuard::without_gil([&] { return self.contains_any_hash(h, n); });
        },
        py::arg("hashes"));
    cls.def_property_readonly("num_blocks", &ParquetBloomFilter::num_blocks);
    cls.def_property_readonly("nbytes", &ParquetBloomFilter::num_bytes);
    cls.def_property_readonly("_set_bits", &ParquetBloomFilter::set_bits);
    cls.def("_equals", [](const ParquetBloomFilter& self, const ParquetBloomFilter& other) { return self == other; });

    m.def(
        "parquet_bloom_header",
        [](py::handle data) {
            ByteBuffer buffer(data);
            const parquet::BloomHeader header = parquet::parse_bloom_header(buffer.data(), buffer.size());
            return py::make_tuple(header.header_size, header.num_bytes);
        },
        py::arg("data"),
        "(header size, bitset size) of the Parquet BloomFilterHeader at the start of data; ValueError if it is "
        "truncated, malformed or not a split-block / xxHash / uncompressed filter.");
    m.def(
        "xxhash64",
        [](py::handle data, uint64_t seed) {
            ByteBuffer buffer(data);
            return bloomkit::xxhash64(buffer.data(), buffer.size(), seed);
        },
        py::arg("data"), py::arg("seed") = 0, "xxHash64 of a bytes-like object (Parquet's Bloom filter hash).");
    m.def(
        "parquet_column_filters",
        [](py::handle footer, const std::vector<std::string>& path) {
            ByteBuffer buffer(footer);
            const parquet::ColumnFilters found = AccessGuard::without_gil(
                [&] { return parquet::find_column_filters(buffer.data(), buffer.size(), path); });
            py::list chunks;
            for (const parquet::ChunkFilter& chunk : found.row_groups)
                chunks.append(py::make_tuple(chunk.offset, chunk.length));
            return py::make_tuple(found.found, found.leaf_index, py::bytes(found.signature), chunks);
        },
        py::arg("footer"), py::arg("path"),
        "(found, leaf index, the leaf's SchemaElement bytes, [(bloom_filter_offset, bloom_filter_length) per row "
        "group, -1 when absent]) of the column at path in a Parquet FileMetaData; ValueError if it is malformed.");
    m.def("parquet_hash_fixed", &hash_fixed, py::arg("values"), py::arg("width"),
          "Parquet's Bloom filter hash of fixed-width plain-encoded values, back to back (uint64 array).");
    m.def("parquet_hash_offsets", &hash_offsets, py::arg("data"), py::arg("offsets"),
          "Parquet's Bloom filter hash of BYTE_ARRAY values given as Arrow offsets into data (uint64 array).");
    m.attr("PARQUET_MAX_BITSET_BYTES") = parquet::kMaxBitsetBytes;

    // One candidates() call's walk over local files (parquet_skip.hpp); made
    // and used by that call only, so no other thread reaches it.
    py::class_<parquet::FileSkipper> skipper(m, "ParquetSkipCore",
                                             "C++ core of bloomkit.parquet.candidates over local paths.");
    skipper.def(py::init<std::vector<std::string>>(), py::arg("path"));
    skipper.def(
        "_add_keys",
        [](parquet::FileSkipper& self, const py::bytes& signature,
           const py::array_t<uint64_t, py::array::c_style>& hashes) {
            const std::string key = signature;
            const uint64_t* h = hashes.data();
            const size_t n = static_cast<size_t>(hashes.size());
            AccessGuard::without_gil([&] { self.add_keys(key, h, n); });
        },
        py::arg("signature"), py::arg("hashes"));
    skipper.def(
        "_run",
        [](parquet::FileSkipper& self, const std::vector<std::string>& paths, size_t start) {
            const parquet::SkipStop stop = AccessGuard::without_gil([&] {
                return self.run(paths.size(), start,
                                [&](size_t i) { return std::make_unique<bloomkit::FdFile>(paths[i]); });
            });
            return py::make_tuple(static_cast<int>(stop.kind), stop.file, stop.row_group, stop.error,
                                  py::bytes(stop.reason), py::bytes(stop.signature));
        },
        py::arg("paths"), py::arg("start"),
        "(kind, file, row group, errno, reason, signature): why the walk over paths[start:] stopped "
        "(0 done, 1 keys needed for signature, 2 malformed, 3 no such column, 4 system error).");
    skipper.def_property_readonly("_candidates",
                                  [](const parquet::FileSkipper& self) { return pairs_array(self.candidates()); });
}

}  // namespace bloomkit_py
