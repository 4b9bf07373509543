// ScalableBloomFilter bindings: the common surface plus the chain's
// parameters and per-slice details.
#include <bloomkit/scalable_bloom.hpp>

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"

namespace bloomkit_py {

using bloomkit::ScalableBloomFilter;
using bloomkit::ScalableParams;

void bind_scalable_bloom(py::module_& m) {
    using G = Guarded<ScalableBloomFilter>;
    py::class_<G> cls(m, "ScalableBloomCore", "C++ core of bloomkit.ScalableBloomFilter; use that class instead.");
    cls.def(py::init([](uint64_t initial_capacity, double error_rate, double growth, double tightening, uint32_t seed,
                        const std::string& layout) {
                return new G(ScalableParams{initial_capacity, error_rate, growth, tightening, seed,
                                            bloomkit::layout_from_name(layout)});
            }),
            py::arg("initial_capacity"), py::arg("error_rate"), py::arg("growth"), py::arg("tightening"),
            py::arg("seed"), py::arg("layout") = "classic");
    bind_common<ScalableBloomFilter>(cls);

    cls.def_property_readonly("initial_capacity", [](G& self) { return self.core.params().initial_capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.params().error_rate; });
    cls.def_property_readonly("growth", [](G& self) { return self.core.params().growth; });
    cls.def_property_readonly("tightening", [](G& self) { return self.core.params().tightening; });
    cls.def_property_readonly("layout",
                              [](G& self) { return std::string(bloomkit::layout_name(self.core.params().layout)); });
    cls.def_property_readonly("num_slices",
                              [](G& self) { return self.guard.read([&] { return self.core.slices().size(); }); });
    cls.def_property_readonly(
        "capacity", [](G& self) { return self.guard.read([&] { return self.core.capacity(); }); },
        "Keys the current slices hold before the next one is added (sum of slice capacities).");
    cls.def_property_readonly("_count", [](G& self) { return self.guard.read([&] { return self.core.count(); }); });
    // Per slice: (capacity, error_rate, num_bits, num_hashes, count, set_bits, nbytes).
    cls.def("_slice_info", [](G& self) {
        using Row = std::tuple<uint64_t, double, uint64_t, uint32_t, uint64_t, uint64_t, uint64_t>;
        std::vector<Row> rows = self.guard.read([&] {
            std::vector<Row> out;
            for (const ScalableBloomFilter::Slice& s : self.core.slices()) {
                const auto& g = s.filter.geometry();
                out.emplace_back(g.capacity, g.error_rate, g.num_bits, g.num_hashes, s.count, s.filter.set_bits(),
                                 s.filter.nbytes());
            }
            return out;
        });
        return rows;
    });
}

}  // namespace bloomkit_py
