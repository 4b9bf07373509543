// SparkBloomCore: Spark's Bloom filter (cpp/include/bloomkit/spark_sketch.hpp).
//
// Keys take bloomkit's one normalisation path (canonical_key: int -> 64-bit
// value, str -> UTF-8, bytes-like -> bytes) and are then hashed Spark's way:
// integers as Java longs, bytes with hashUnsafeBytes. Batches are first
// turned into hash pairs (validating every key), then applied.
#include <bloomkit/spark_sketch.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

#include "common.hpp"
#include "fast_methods.hpp"
#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace spark = bloomkit::spark;
using spark::HashPair;
using spark::SparkBloomFilter;

namespace {

HashPair pair_of(const CanonicalKey& key, int32_t seed) {
    if (key.is_integer) return spark::hash_pair_long(static_cast<int64_t>(key.integer), seed);
    return spark::hash_pair_bytes(key.data, key.size, seed);
}

py::array_t<int32_t> new_pairs(size_t count) {
    return py::array_t<int32_t>({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(2)});
}

// Python objects (any iterable of str / bytes-like / int).
py::array_t<int32_t> pairs_of_objects(py::handle keys, int32_t seed) {
    std::vector<HashPair> pairs;
    Py_ssize_t index = 0;
    for (py::handle key : py::iter(keys)) pairs.push_back(pair_of(canonical_key(key, index++), seed));
    auto out = new_pairs(pairs.size());
    if (!pairs.empty()) std::memcpy(out.mutable_data(), pairs.data(), pairs.size() * sizeof(HashPair));
    return out;
}

// A contiguous int64 array: Spark longs.
py::array_t<int32_t> pairs_of_longs(py::array_t<int64_t, py::array::c_style> values, int32_t seed) {
    const size_t n = static_cast<size_t>(values.size());
    auto out = new_pairs(n);
    auto* dst = reinterpret_cast<HashPair*>(out.mutable_data());
    const int64_t* src = values.data();
    AccessGuard::without_gil([&] { spark::hash_pairs_of_longs(src, n, seed, dst); });
    return out;
}

// Arrow-style strings: `data` bytes, n + 1 `offsets` into it.
py::array_t<int32_t> pairs_of_offsets(py::array_t<uint8_t, py::array::c_style> data,
                                      py::array_t<int64_t, py::array::c_style> offsets, int32_t seed) {
    if (offsets.size() < 1) throw py::value_error("offsets must hold at least one value");
    const size_t n = static_cast<size_t>(offsets.size()) - 1;
    auto out = new_pairs(n);
    auto* dst = reinterpret_cast<HashPair*>(out.mutable_data());
    const size_t bad = AccessGuard::without_gil([&] {
        return spark::hash_pairs_of_offsets(data.data(), static_cast<uint64_t>(data.size()), offsets.data(), n, seed,
                                            dst);
    });
    if (bad != n)
        throw py::value_error("offsets are not monotone within the data buffer at index " + std::to_string(bad));
    return out;
}

using G = Guarded<SparkBloomFilter>;

// The single-key methods, installed as METH_O functions (fast_methods.hpp)
// like every other filter's: positional-only, no pybind11 dispatch.
py::object spark_add(G& self, py::handle key) {
    const HashPair h = pair_of(canonical_key(key), self.core.seed());
    return py::bool_(self.write([&] { return self.core.add(h); }));
}

bool spark_contains(G& self, py::handle key) {
    const HashPair h = pair_of(canonical_key(key), self.core.seed());
    return self.guard.read([&] { return self.core.contains(h); });
}

py::object spark_contains_object(G& self, py::handle key) { return py::bool_(spark_contains(self, key)); }

const HashPair* pair_data(const py::array_t<int32_t, py::array::c_style>& pairs) {
    if (pairs.ndim() != 2 || pairs.shape(1) != 2) throw py::value_error("hash pairs must have shape (n, 2)");
    return reinterpret_cast<const HashPair*>(pairs.data());
}

}  // namespace

void bind_spark(py::module_& m) {
    py::class_<G> cls(m, "SparkBloomCore", "C++ core of bloomkit.SparkBloomFilter; use that class instead.");
    cls.def(py::init([](int32_t version, int32_t num_hashes, int32_t seed, uint64_t num_words) {
                return new G(version, num_hashes, seed, num_words);
            }),
            py::arg("version"), py::arg("num_hashes"), py::arg("seed"), py::arg("num_words"));
    cls.def(py::init([](G& other) { return other.guard.read([&] { return new G(other.core); }); }), py::arg("other"));
    cls.def(py::init([](py::handle data) {
                ByteBuffer buffer(data);
                return AccessGuard::without_gil(
                    [&] { return new G(SparkBloomFilter::deserialize(buffer.data(), buffer.size())); });
            }),
            py::arg("data"));

    def_meth_o(cls, "add", meth_o<G, &spark_add>,
               "add($self, key, /)\n--\n\nInsert key; return True if it was (probably) present before.");
    def_meth_o(cls, "contains", meth_o<G, &spark_contains_object>,
               "contains($self, key, /)\n--\n\nTrue if key is (probably) in the filter.");
    def_sq_contains(cls, sq_contains<G, &spark_contains>);
    cls.def("_pairs_of_objects", [](G& self, py::handle keys) { return pairs_of_objects(keys, self.core.seed()); });
    cls.def("_pairs_of_longs", [](G& self, py::array_t<int64_t, py::array::c_style> values) {
        return pairs_of_longs(values, self.core.seed());
    });
    cls.def("_pairs_of_offsets", [](G& self, py::array_t<uint8_t, py::array::c_style> data,
                                    py::array_t<int64_t, py::array::c_style> offsets) {
        return pairs_of_offsets(data, offsets, self.core.seed());
    });
    cls.def("_add_pairs", [](G& self, py::array_t<int32_t, py::array::c_style> pairs, bool want_result) {
        const HashPair* h = pair_data(pairs);
        const size_t n = static_cast<size_t>(pairs.shape(0));
        auto result = new_bool_array(want_result ? n : 0);
        uint8_t* out = want_result ? bool_data(result) : nullptr;
        self.released_write([&] { self.core.add_many(h, n, out); });
        return result;
    });
    cls.def("_contains_pairs", [](G& self, py::array_t<int32_t, py::array::c_style> pairs) {
        const HashPair* h = pair_data(pairs);
        const size_t n = static_cast<size_t>(pairs.shape(0));
        auto result = new_bool_array(n);
        uint8_t* out = bool_data(result);
        self.guard.released_read([&] { self.core.contains_many(h, n, out); });
        return result;
    });
    cls.def("_union_update", [](G& self, G& other) {
        write_first_read_second(self.guard, other.guard, [&] { self.core.union_with(other.core); });
    });
    cls.def("_equals", [](G& self, G& other) {
        return read_pair(self.guard, other.guard, [&] { return self.core == other.core; });
    });
    cls.def(
        "to_spark_bytes",
        [](G& self) {
            std::vector<uint8_t> out = self.guard.released_read([&] { return self.core.serialize(); });
            return to_py_bytes(out);
        },
        "The filter as Spark's BloomFilter.writeTo writes it (readable by BloomFilter.readFrom).");
    cls.def(
        "clear", [](G& self) { self.write([&] { self.core.clear(); }); }, "Remove every key.");
    cls.def_property_readonly("version", [](G& self) { return self.core.version(); });
    cls.def_property_readonly("num_hashes", [](G& self) { return self.core.num_hashes(); });
    cls.def_property_readonly("seed", [](G& self) { return self.core.seed(); });
    cls.def_property_readonly("num_bits", [](G& self) { return self.core.num_bits(); });
    cls.def_property_readonly("nbytes", [](G& self) { return self.core.nbytes(); });
    cls.def_property_readonly("_set_bits",
                              [](G& self) { return self.guard.read([&] { return self.core.set_bits(); }); });
}

}  // namespace bloomkit_py
