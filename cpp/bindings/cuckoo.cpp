// CuckooFilter bindings: the common surface, deletion, and the geometry.
#include <bloomkit/cuckoo.hpp>

#include <pybind11/stl.h>

#include <tuple>
#include <vector>

#include "common.hpp"
#include "removal.hpp"

namespace bloomkit_py {

using bloomkit::CuckooFilter;
using bloomkit::CuckooGeometry;
using bloomkit::CuckooTable;

void bind_cuckoo(py::module_& m) {
    using G = Guarded<CuckooFilter>;
    py::class_<G> cls(m, "CuckooCore", "C++ core of bloomkit.CuckooFilter; use that class instead.");
    cls.def(py::init([](uint64_t num_buckets, uint32_t bucket_size, uint32_t fingerprint_bits, uint32_t seed,
                        uint64_t capacity, double error_rate, bool auto_grow) {
                return new G(
                    CuckooGeometry{num_buckets, bucket_size, fingerprint_bits, seed, capacity, error_rate, auto_grow});
            }),
            py::arg("num_buckets"), py::arg("bucket_size"), py::arg("fingerprint_bits"), py::arg("seed"),
            py::arg("capacity"), py::arg("error_rate"), py::arg("auto_grow"));
    bind_common<CuckooFilter>(cls);
    bind_removal<CuckooFilter>(cls);

    cls.def(
        "_add_new_many",
        [](G& self, py::handle keys, bool want_result) -> py::object {
            KeyBatch batch(keys, self.hashing);
            if (!want_result) {
                self.released_write(
                    [&] { batch.visit([&](const auto& source) { self.core.add_new_many(source, nullptr); }); });
                return py::none();
            }
            auto result = new_bool_array(batch.size());
            uint8_t* out = bool_data(result);
            self.released_write([&] { batch.visit([&](const auto& source) { self.core.add_new_many(source, out); }); });
            return std::move(result);
        },
        py::arg("keys"), py::arg("want_result") = true);
    cls.def(
        "__len__", [](G& self) { return self.guard.read([&] { return self.core.size(); }); },
        "Exact number of fingerprints stored (each add stores one, each removal takes one).");
    cls.def_property_readonly("capacity", [](G& self) { return self.core.geometry().capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.geometry().error_rate; });
    cls.def_property_readonly("bucket_size", [](G& self) { return self.core.geometry().bucket_size; });
    cls.def_property_readonly("fingerprint_bits", [](G& self) { return self.core.geometry().fingerprint_bits; });
    cls.def_property_readonly("auto_grow", [](G& self) { return self.core.geometry().auto_grow; });
    cls.def_property_readonly("num_buckets",
                              [](G& self) { return self.guard.read([&] { return self.core.num_buckets(); }); });
    cls.def_property_readonly("is_full", [](G& self) { return self.guard.read([&] { return self.core.full(); }); });
    // Per stage: (num_buckets, fingerprint_bits, stored, victim_used).
    cls.def_property_readonly("_stages", [](G& self) {
        // Read under the guard (which may release the GIL), build Python objects after.
        using Stage = std::tuple<uint64_t, unsigned, uint64_t, bool>;
        const std::vector<Stage> stages = self.guard.read([&] {
            std::vector<Stage> out;
            for (const CuckooTable& t : self.core.stages())
                out.emplace_back(t.num_buckets(), t.table().fingerprint_bits(), t.size(), t.victim().used);
            return out;
        });
        py::list out;
        for (const Stage& s : stages)
            out.append(py::make_tuple(std::get<0>(s), std::get<1>(s), std::get<2>(s), std::get<3>(s)));
        return out;
    });
}

}  // namespace bloomkit_py
