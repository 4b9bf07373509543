// RotatingBloomFilter bindings: the common surface, the clock hand-over
// (_observe), the window's figures and the file-backed filter
// (RotatingBloomFilter.open: a mapped file, mapped.hpp). Conversion only;
// batches run without the GIL through bind_common.
#include <bloomkit/mapped_file.hpp>
#include <bloomkit/rotating_bloom.hpp>

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"
#include "mapped.hpp"

namespace bloomkit_py {

using bloomkit::RotatingBloomFilter;
using bloomkit::RotatingParams;
using bloomkit::WindowSpec;

void bind_rotating_bloom(py::module_& m) {
    using G = Guarded<RotatingBloomFilter>;
    py::class_<G> cls(m, "RotatingBloomCore", "C++ core of bloomkit.RotatingBloomFilter; use that class instead.");
    cls.def(py::init([](uint64_t capacity, double error_rate, const WindowSpec& window, uint32_t seed,
                        const std::string& layout) {
                RotatingParams params;
                params.capacity = capacity;
                params.error_rate = error_rate;
                params.window = window;
                params.seed = seed;
                params.layout = bloomkit::layout_from_name(layout);
                return new G(params);
            }),
            py::arg("capacity"), py::arg("error_rate"), py::arg("window"), py::arg("seed"),
            py::arg("layout") = "classic");
    bind_common<RotatingBloomFilter>(cls);

    // The filter over a mapped file's payload, in place; a writable file
    // holds its writer lock (MappedFile._lock_writers) before this.
    cls.def(py::init([](std::shared_ptr<bloomkit::MappedFile> file, bool verify) {
                return AccessGuard::without_gil([&] {
                    return new G(
                        bloomkit::map_rotating(file, verify ? bloomkit::Checksum::Verify : bloomkit::Checksum::Skip));
                });
            }),
            py::arg("file"), py::arg("verify"));
    m.def(
        "_create_rotating_file",
        [](int fd, const std::string& path, uint64_t capacity, double error_rate, const WindowSpec& window,
           uint32_t seed, const std::string& layout) {
            RotatingParams params;
            params.capacity = capacity;
            params.error_rate = error_rate;
            params.window = window;
            params.seed = seed;
            params.layout = bloomkit::layout_from_name(layout);
            return AccessGuard::without_gil(
                [&] { return bloomkit::create_rotating_file<bloomkit::MappedFile>(fd, path, params); });
        },
        py::arg("fd"), py::arg("path"), py::arg("capacity"), py::arg("error_rate"), py::arg("window"), py::arg("seed"),
        py::arg("layout"));
    bind_file_methods<RotatingBloomFilter>(cls);

    // The clock reading of the calls that follow (time windows; a running
    // maximum, no lock needed).
    cls.def(
        "_observe", [](G& self, double now) { self.core.observe(now); }, py::arg("now"));
    cls.def_property_readonly("capacity", [](G& self) { return self.core.params().capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.params().error_rate; });
    cls.def_property_readonly("_window", [](G& self) { return self.core.window(); });
    cls.def_property_readonly("layout",
                              [](G& self) { return std::string(bloomkit::layout_name(self.core.params().layout)); });
    cls.def_property_readonly("generations", [](G& self) { return self.core.generations(); });
    cls.def_property_readonly(
        "num_bits", [](G& self) { return self.core.generation_geometry().num_bits; }, "Bits per generation.");
    cls.def_property_readonly(
        "num_hashes", [](G& self) { return self.core.generation_geometry().num_hashes; }, "Hashes per key.");
    cls.def_property_readonly(
        "generation_capacity", [](G& self) { return self.core.generation_geometry().capacity; },
        "Keys each generation is sized for: ceil(capacity / (generations - 1)).");
    cls.def_property_readonly(
        "generation_error_rate", [](G& self) { return self.core.generation_geometry().error_rate; },
        "Each generation's rate, 1 - (1 - error_rate)^(1/generations).");
    cls.def_property_readonly("_count", [](G& self) { return self.guard.read([&] { return self.core.count(); }); });
    cls.def_property_readonly("keys_seen",
                              [](G& self) { return self.guard.read([&] { return self.core.keys_seen(); }); });
    cls.def_property_readonly("current_generation", [](G& self) -> py::object {
        const int64_t current = self.guard.read([&] { return self.core.current(); });
        if (current == RotatingBloomFilter::kNoGeneration) return py::none();
        return py::int_(current);
    });
    // Per live generation, oldest first: (generation, count, set_bits).
    cls.def("_generation_info", [](G& self) {
        using Row = std::tuple<int64_t, uint64_t, uint64_t>;
        return self.guard.read([&] {
            std::vector<Row> rows;
            const int64_t current = self.core.current();
            if (current == RotatingBloomFilter::kNoGeneration) return rows;
            for (int64_t g = self.core.window().oldest_live(current); g <= current; ++g) {
                const uint32_t slot = self.core.window().slot(g);
                if (self.core.slot_generation(slot) == g)
                    rows.emplace_back(g, self.core.slot_count(slot), self.core.slot_set_bits(slot));
            }
            return rows;
        });
    });
}

}  // namespace bloomkit_py
