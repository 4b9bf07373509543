// OrcBloomCore: ORC's Bloom filter (cpp/include/bloomkit/orc_bloom.hpp).
//
// Python floats are Java doubles (doubleToLongBits); every other key takes
// bloomkit's one normalisation path (canonical_key: int -> 64-bit value,
// str -> UTF-8, bytes-like -> bytes) and is then hashed ORC's way: integers
// as Java longs (getLongHash), bytes with Murmur3.hash64. Batches are first
// turned into ORC's hash pairs (validating every key), then applied.
#include <bloomkit/orc_bloom.hpp>
#include <bloomkit/orc_file_skip.hpp>
#include <bloomkit/orc_skip.hpp>
#if defined(BLOOMKIT_HAVE_ZLIB)
#include <bloomkit/zlib/orc_inflate.hpp>
#endif

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "fast_methods.hpp"
#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace orc = bloomkit::orc;
using orc::HashPair;
using orc::OrcBloomFilter;

namespace {

HashPair pair_of(py::handle key, Py_ssize_t index = -1) {
    if (PyFloat_Check(key.ptr())) return orc::split(orc::hash_double(PyFloat_AS_DOUBLE(key.ptr())));
    const CanonicalKey canonical = canonical_key(key, index);
    if (canonical.is_integer) return orc::split(orc::hash_long(static_cast<int64_t>(canonical.integer)));
    return orc::split(orc::hash_bytes(canonical.data, canonical.size));
}

py::array_t<int32_t> new_pairs(size_t count) {
    return py::array_t<int32_t>({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(2)});
}

// Python objects (any iterable of str / bytes-like / int).
py::array_t<int32_t> pairs_of_objects(py::handle keys) {
    std::vector<HashPair> pairs;
    Py_ssize_t index = 0;
    for (py::handle key : py::iter(keys)) pairs.push_back(pair_of(key, index++));
    auto out = new_pairs(pairs.size());
    if (!pairs.empty()) std::memcpy(out.mutable_data(), pairs.data(), pairs.size() * sizeof(HashPair));
    return out;
}

// A contiguous int64 array: Java longs.
py::array_t<int32_t> pairs_of_longs(py::array_t<int64_t, py::array::c_style> values) {
    const size_t n = static_cast<size_t>(values.size());
    auto out = new_pairs(n);
    auto* dst = reinterpret_cast<HashPair*>(out.mutable_data());
    const int64_t* src = values.data();
    AccessGuard::without_gil([&] { orc::hash_pairs_of_longs(src, n, dst); });
    return out;
}

// A contiguous float64 array: Java doubles.
py::array_t<int32_t> pairs_of_doubles(py::array_t<double, py::array::c_style> values) {
    const size_t n = static_cast<size_t>(values.size());
    auto out = new_pairs(n);
    auto* dst = reinterpret_cast<HashPair*>(out.mutable_data());
    const double* src = values.data();
    AccessGuard::without_gil([&] { orc::hash_pairs_of_doubles(src, n, dst); });
    return out;
}

// Arrow-style strings: `data` bytes, n + 1 `offsets` into it.
py::array_t<int32_t> pairs_of_offsets(py::array_t<uint8_t, py::array::c_style> data,
                                      py::array_t<int64_t, py::array::c_style> offsets) {
    if (offsets.size() < 1) throw py::value_error("offsets must hold at least one value");
    const size_t n = static_cast<size_t>(offsets.size()) - 1;
    auto out = new_pairs(n);
    auto* dst = reinterpret_cast<HashPair*>(out.mutable_data());
    const size_t bad = AccessGuard::without_gil([&] {
        return orc::hash_pairs_of_offsets(data.data(), static_cast<uint64_t>(data.size()), offsets.data(), n, dst);
    });
    if (bad != n)
        throw py::value_error("offsets are not monotone within the data buffer at index " + std::to_string(bad));
    return out;
}

using G = Guarded<OrcBloomFilter>;

// The single-key methods, installed as METH_O functions (fast_methods.hpp)
// like every other filter's: positional-only, no pybind11 dispatch.
py::object orc_add(G& self, py::handle key) {
    const HashPair h = pair_of(key);
    return py::bool_(self.write([&] { return self.core.add(h); }));
}

bool orc_contains(G& self, py::handle key) {
    const HashPair h = pair_of(key);
    return self.guard.read([&] { return self.core.contains(h); });
}

py::object orc_contains_object(G& self, py::handle key) { return py::bool_(orc_contains(self, key)); }

const HashPair* pair_data(const py::array_t<int32_t, py::array::c_style>& pairs) {
    if (pairs.ndim() != 2 || pairs.shape(1) != 2) throw py::value_error("hash pairs must have shape (n, 2)");
    return reinterpret_cast<const HashPair*>(pairs.data());
}

}  // namespace

// The fields of one protobuf message (protobuf_wire.hpp): (number, int) for
// varint and fixed fields, (number, bytes) for length-delimited ones, in
// order. bloomkit.orc reads ORC's file tail and stripe footers with it.
py::list protobuf_fields(py::handle data, const std::string& what) {
    ByteBuffer buffer(data);
    bloomkit::protobuf::WireReader reader(buffer.data(), buffer.size(), what.c_str());
    py::list out;
    while (!reader.done()) {
        const bloomkit::protobuf::Field f = reader.next();
        if (f.wire_type == bloomkit::protobuf::kLengthDelimited)
            out.append(py::make_tuple(f.number, py::bytes(reinterpret_cast<const char*>(f.data), f.size)));
        else
            out.append(py::make_tuple(f.number, f.value));
    }
    return out;
}

void bind_orc(py::module_& m) {
    m.def("_protobuf_fields", &protobuf_fields, py::arg("data"), py::arg("what"),
          "The fields of one protobuf message: (number, int | bytes) pairs; ValueError naming `what` if malformed.");
    py::class_<G> cls(m, "OrcBloomCore", "C++ core of bloomkit.OrcBloomFilter; use that class instead.");
    cls.def(py::init([](uint32_t num_hashes, uint64_t num_words) { return new G(num_hashes, num_words); }),
            py::arg("num_hashes"), py::arg("num_words"));
    cls.def(py::init([](G& other) { return other.guard.read([&] { return new G(other.core); }); }), py::arg("other"));
    cls.def(py::init([](py::handle data) {
                ByteBuffer buffer(data);
                return AccessGuard::without_gil(
                    [&] { return new G(OrcBloomFilter::deserialize(buffer.data(), buffer.size())); });
            }),
            py::arg("data"));

    def_meth_o(cls, "add", meth_o<G, &orc_add>,
               "add($self, key, /)\n--\n\nInsert key; return True if it was (probably) present before.");
    def_meth_o(cls, "contains", meth_o<G, &orc_contains_object>,
               "contains($self, key, /)\n--\n\nTrue if key is (probably) in the filter.");
    def_sq_contains(cls, sq_contains<G, &orc_contains>);
    // ORC's hashing has no seed: the pairs are the same for every filter.
    cls.def("_pairs_of_objects", [](G&, py::handle keys) { return pairs_of_objects(keys); });
    cls.def("_pairs_of_longs",
            [](G&, py::array_t<int64_t, py::array::c_style> values) { return pairs_of_longs(values); });
    cls.def("_pairs_of_doubles",
            [](G&, py::array_t<double, py::array::c_style> values) { return pairs_of_doubles(values); });
    cls.def("_pairs_of_offsets",
            [](G&, py::array_t<uint8_t, py::array::c_style> data, py::array_t<int64_t, py::array::c_style> offsets) {
                return pairs_of_offsets(data, offsets);
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
        "_orc_bytes",
        [](G& self, bool utf8) {
            const auto encoding = utf8 ? orc::Encoding::Utf8Bitset : orc::Encoding::Bitset;
            std::vector<uint8_t> out = self.guard.released_read([&] { return self.core.serialize(encoding); });
            return to_py_bytes(out);
        },
        py::arg("utf8"));
    cls.def(
        "clear", [](G& self) { self.write([&] { self.core.clear(); }); }, "Remove every key.");
    cls.def_property_readonly("num_hashes", [](G& self) { return self.core.num_hashes(); });
    cls.def_property_readonly("num_bits", [](G& self) { return self.core.num_bits(); });
    cls.def_property_readonly("nbytes", [](G& self) { return self.core.nbytes(); });
    cls.def_property_readonly("_set_bits",
                              [](G& self) { return self.guard.read([&] { return self.core.set_bits(); }); });

    // One candidates() call's key set (orc_skip.hpp); made and used by that
    // call only, so no other thread reaches it.
    py::class_<orc::OrcKeyProbes> probes(m, "OrcKeyProbes", "C++ core of bloomkit.orc.candidates' probe.");
    probes.def(py::init([](const py::array_t<int32_t, py::array::c_style>& pairs) {
                   return new orc::OrcKeyProbes(pair_data(pairs), static_cast<size_t>(pairs.shape(0)));
               }),
               py::arg("pairs"));
    probes.def(
        "_any_in",
        [](orc::OrcKeyProbes& self, G& filter) {
            return filter.guard.released_read([&] { return self.any_in(filter.core); });
        },
        py::arg("filter"), "Whether any of the keys may be in filter (its contains() for at least one).");

    // One candidates() call's walk over local paths (orc_file_skip.hpp).
    py::class_<orc::OrcFileSkipper> walker(m, "OrcSkipCore", "C++ core of bloomkit.orc.candidates over local paths.");
    walker.def(py::init([](const std::string& column, const py::array_t<int32_t, py::array::c_style>& pairs) {
                   return new orc::OrcFileSkipper(column, pair_data(pairs), static_cast<size_t>(pairs.shape(0)));
               }),
               py::arg("column"), py::arg("pairs"));
    walker.def(
        "_run",
        [](orc::OrcFileSkipper& self, const std::vector<std::string>& paths, size_t start, py::object inflate) {
            // A ZLIB chunk is inflated in the core when the extension was built
            // with zlib (BLOOMKIT_HAVE_ZLIB), on the walking thread with the GIL
            // released; any other compressed chunk goes to Python's inflater
            // (bloomkit/orc.py) under the GIL. A chunk either refuses leaves the
            // file to orc.py's own reader, which raises why with the file named.
            const orc::Inflate call = [&](uint32_t compression, const uint8_t* chunk, size_t size, uint8_t* out,
                                          size_t capacity) -> size_t {
                py::gil_scoped_acquire gil;
                try {
                    const py::bytes result =
                        inflate(compression, py::bytes(reinterpret_cast<const char*>(chunk), size), capacity);
                    const std::string_view data = result;
                    if (data.size() > capacity) throw orc::ReadElsewhere{};
                    std::memcpy(out, data.data(), data.size());
                    return data.size();
                } catch (py::error_already_set&) {
                    throw orc::ReadElsewhere{};
                }
            };
#if defined(BLOOMKIT_HAVE_ZLIB)
            const auto make_inflate = [&] { return orc::inflate_zlib_here(call); };
#else
            const auto make_inflate = [&] { return call; };
#endif
            const orc::OrcSkipStop stop = AccessGuard::without_gil([&] {
                return self.run(
                    paths.size(), start, [&](size_t i) { return std::make_unique<bloomkit::FdFile>(paths[i]); },
                    make_inflate);
            });
            return py::make_tuple(static_cast<int>(stop.kind), stop.file);
        },
        py::arg("paths"), py::arg("start"), py::arg("inflate"),
        "(kind, file): the walk over paths[start:] ended (0) or stopped at a file to read elsewhere (1).");
    // Whether ZLIB chunks are inflated in the core (the extension found zlib when it was built).
#if defined(BLOOMKIT_HAVE_ZLIB)
    walker.attr("_inflates_zlib") = true;
#else
    walker.attr("_inflates_zlib") = false;
#endif
    walker.def_property_readonly("_candidates",
                                 [](const orc::OrcFileSkipper& self) { return pairs_array(self.candidates()); });
}

}  // namespace bloomkit_py
