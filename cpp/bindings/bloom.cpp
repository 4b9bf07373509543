// BloomFilter bindings: the common surface plus layouts, positions and
// bit-level set algebra.
#include <bloomkit/bloom.hpp>

#include <string>

#include "common.hpp"

namespace bloomkit_py {

using bloomkit::BloomFilter;
using bloomkit::BloomGeometry;

void bind_mapped_bloom(py::module_& m, py::class_<Guarded<BloomFilter>>& cls);  // mapped.cpp

void bind_bloom(py::module_& m) {
    using G = Guarded<BloomFilter>;
    py::class_<G> cls(m, "BloomCore", "C++ core of bloomkit.BloomFilter; use that class instead.");
    cls.def(py::init([](uint64_t num_bits, uint32_t num_hashes, uint32_t seed, uint64_t capacity, double error_rate,
                        const std::string& layout) {
                return new G(BloomGeometry{num_bits, num_hashes, seed, capacity, error_rate,
                                           bloomkit::layout_from_name(layout)});
            }),
            py::arg("num_bits"), py::arg("num_hashes"), py::arg("seed"), py::arg("capacity"), py::arg("error_rate"),
            py::arg("layout") = "classic");
    bind_common<BloomFilter>(cls);

    cls.def_property_readonly("num_bits", [](G& self) { return self.core.num_bits(); });
    cls.def_property_readonly("num_hashes", [](G& self) { return self.core.num_hashes(); });
    cls.def_property_readonly("capacity", [](G& self) { return self.core.geometry().capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.geometry().error_rate; });
    cls.def_property_readonly(
        "layout", [](G& self) { return std::string(bloomkit::layout_name(self.core.layout())); },
        "Bit layout: 'classic', 'blocked512' or 'split_block' (docs/FORMAT.md).");
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
