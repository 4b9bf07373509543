// BloomFilter bindings: the common surface plus layouts, positions and
// bit-level set algebra.
#include <bloomkit/bloom.hpp>
#include <bloomkit/erased_keys.hpp>

#include <string>

#include "common.hpp"

namespace bloomkit_py {

using bloomkit::BloomFilter;
using bloomkit::BloomGeometry;

namespace {

// A batch of precomputed XXH64 digests (a 1-D int64/uint64 array, read in
// place) for an xxhash64 filter; the array must stay referenced while used.
bloomkit::Xxh64DigestKeys digest_keys(const Guarded<BloomFilter>& self, const py::array& digests) {
    if (self.hashing.digest() != bloomkit::KeyDigest::Xxh64)
        throw py::value_error(
            "64-bit digests are keys only of a filter built with hashing='xxhash64'; this one hashes keys with "
            "MurmurHash3 (hashing='bloomkit')");
    const char kind = digests.dtype().kind();
    if (digests.ndim() != 1 || (kind != 'i' && kind != 'u') || digests.itemsize() != 8)
        throw py::type_error("digests must be a 1-D int64 or uint64 array, got " + std::to_string(digests.ndim()) +
                             "-D of dtype " + py::str(digests.dtype()).cast<std::string>());
    return bloomkit::Xxh64DigestKeys(static_cast<const uint8_t*>(digests.data()), static_cast<size_t>(digests.size()),
                                     digests.strides(0));
}

}  // namespace

void bind_mapped_bloom(py::module_& m, py::class_<Guarded<BloomFilter>>& cls);  // mapped.cpp

void bind_bloom(py::module_& m) {
    using G = Guarded<BloomFilter>;
    py::class_<G> cls(m, "BloomCore", "C++ core of bloomkit.BloomFilter; use that class instead.");
    cls.def(
        py::init([](uint64_t num_bits, uint32_t num_hashes, uint32_t seed, uint64_t capacity, double error_rate,
                    const std::string& layout, const std::string& hashing) {
            return new G(BloomGeometry{num_bits, num_hashes, seed, capacity, error_rate,
                                       bloomkit::layout_from_name(layout), bloomkit::key_digest_from_name(hashing)});
        }),
        py::arg("num_bits"), py::arg("num_hashes"), py::arg("seed"), py::arg("capacity"), py::arg("error_rate"),
        py::arg("layout") = "classic", py::arg("hashing") = "bloomkit");
    bind_common<BloomFilter>(cls);

    cls.def_property_readonly("num_bits", [](G& self) { return self.core.num_bits(); });
    cls.def_property_readonly("num_hashes", [](G& self) { return self.core.num_hashes(); });
    cls.def_property_readonly("capacity", [](G& self) { return self.core.geometry().capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.geometry().error_rate; });
    cls.def_property_readonly(
        "layout", [](G& self) { return std::string(bloomkit::layout_name(self.core.layout())); },
        "Bit layout: 'classic', 'blocked512' or 'split_block' (docs/FORMAT.md).");
    cls.def_property_readonly(
        "hashing", [](G& self) { return std::string(bloomkit::key_digest_name(self.core.digest())); },
        "How keys are hashed: 'bloomkit' (MurmurHash3) or 'xxhash64' (docs/FORMAT.md).");
    // Inserts and lookups of precomputed XXH64 digests (one per key), through
    // the same batch loops as keys (hash_chunks over an erased source), with
    // the GIL released; `results=False` skips the was-present array.
    cls.def(
        "_add_digests",
        [](G& self, const py::array& digests, bool results) -> py::object {
            const bloomkit::Xxh64DigestKeys keys = digest_keys(self, digests);
            const bloomkit::ErasedKeys erased(keys);
            py::array_t<bool> out;
            if (results) out = new_bool_array(keys.size());
            uint8_t* found = results ? bool_data(out) : nullptr;
            const unsigned threads = threads_for_batch(keys.size());
            self.released_write([&] { self.core.add_many(erased, found, threads); });
            if (!results) return py::none();
            return std::move(out);
        },
        py::arg("digests"), py::arg("results") = true);
    cls.def(
        "_contains_digests",
        [](G& self, const py::array& digests) {
            const bloomkit::Xxh64DigestKeys keys = digest_keys(self, digests);
            const bloomkit::ErasedKeys erased(keys);
            auto out = new_bool_array(keys.size());
            uint8_t* present = bool_data(out);
            const unsigned threads = threads_for_batch(keys.size());
            self.guard.released_read([&] { contains_many_on(self.core, erased, present, threads); });
            return out;
        },
        py::arg("digests"));
    cls.def_property_readonly("_set_bits",
                              [](G& self) { return self.guard.read([&] { return self.core.set_bits(); }); });
    cls.def(
        "_positions_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.hashing);
            const py::ssize_t k = self.core.num_hashes();
            py::array_t<uint64_t> out({static_cast<py::ssize_t>(batch.size()), k});
            uint64_t* data = out.mutable_data();
            // Positions depend only on the geometry, which never changes:
            // no lock needed, and the GIL is released for the hashing (and
            // re-acquired outside a destructor: guard.hpp, without_gil).
            AccessGuard::without_gil(
                [&] { batch.visit([&](const auto& source) { self.core.positions_many(source, data); }); });
            return out;
        },
        py::arg("keys"));
    // The payload bytes of docs/FORMAT.md alone, and their replacement, for
    // stores that keep the bits outside the process (bloomkit.redis). The
    // replacement is validated like a loaded payload before anything changes.
    cls.def("_payload", [](G& self) {
        std::vector<uint8_t> out;
        self.guard.released_read([&] {
            bloomkit::ByteWriter w(out);
            self.core.write_payload(w);
        });
        return to_py_bytes(out);
    });
    cls.def("_assign_payload", [](G& self, py::handle payload) {
        ByteBuffer buffer(payload);
        self.released_write([&] {
            bloomkit::SpanSource source(buffer.data(), buffer.size());
            bloomkit::StreamReader r(source, buffer.size(), nullptr);
            self.core.assign_payload(r);
        });
    });
    cls.def("_union_update", [](G& self, G& other) {
        check_same_key(self.hashing, other.hashing, "union");
        write_first_read_second(self.guard, other.guard, [&] { self.core.union_with(other.core); });
    });
    cls.def("_intersection_update", [](G& self, G& other) {
        check_same_key(self.hashing, other.hashing, "intersection");
        write_first_read_second(self.guard, other.guard, [&] { self.core.intersect_with(other.core); });
    });
    cls.def("_union_set_bits", [](G& self, G& other) {
        check_same_key(self.hashing, other.hashing, "union estimate");
        return read_pair(self.guard, other.guard, [&] { return self.core.union_set_bits(other.core); });
    });
    bind_mapped_bloom(m, cls);
}

}  // namespace bloomkit_py
