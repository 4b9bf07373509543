// CountingBloomFilter bindings: the common and removal surfaces, geometry
// properties, union and conversion to a plain BloomFilter.
#include <bloomkit/counting_bloom.hpp>

#include <memory>

#include "common.hpp"
#include "removal.hpp"

namespace bloomkit_py {

using bloomkit::BloomFilter;
using bloomkit::BloomGeometry;
using bloomkit::CountingBloomFilter;

void bind_counting_bloom(py::module_& m) {
    using G = Guarded<CountingBloomFilter>;
    py::class_<G> cls(m, "CountingBloomCore", "C++ core of bloomkit.CountingBloomFilter; use that class instead.");
    cls.def(py::init([](uint64_t num_bits, uint32_t num_hashes, uint32_t seed, uint64_t capacity, double error_rate,
                        uint32_t counter_bits) {
                return new G(BloomGeometry{num_bits, num_hashes, seed, capacity, error_rate}, counter_bits);
            }),
            py::arg("num_bits"), py::arg("num_hashes"), py::arg("seed"), py::arg("capacity"), py::arg("error_rate"),
            py::arg("counter_bits"));
    bind_common<CountingBloomFilter>(cls);
    bind_removal<CountingBloomFilter>(cls);

    cls.def_property_readonly(
        "num_bits", [](G& self) { return self.core.num_counters(); },
        "Number of counters m (one per bit of the equivalent BloomFilter).");
    cls.def_property_readonly("num_hashes", [](G& self) { return self.core.num_hashes(); });
    cls.def_property_readonly("capacity", [](G& self) { return self.core.geometry().capacity; });
    cls.def_property_readonly("error_rate", [](G& self) { return self.core.geometry().error_rate; });
    cls.def_property_readonly(
        "counter_bits", [](G& self) { return self.core.counter_bits(); },
        "Bits per counter (4, 8 or 16); counters saturate at 2**counter_bits - 1.");
    cls.def_property_readonly("_nonzero_counters",
                              [](G& self) { return self.guard.read([&] { return self.core.nonzero_counters(); }); });
    cls.def("_union_update", [](G& self, G& other) {
        check_same_key(self.hashing, other.hashing, "union");
        write_first_read_second(self.guard, other.guard, [&] { self.core.union_with(other.core); });
    });
    // A plain BloomCore object; the Python layer copies it into a BloomFilter.
    cls.def("_to_bloom_core", [](G& self) {
        auto bloom =
            std::make_unique<Guarded<BloomFilter>>(self.guard.released_read([&] { return self.core.to_bloom(); }));
        bloom->hashing = self.hashing;  // a keyed counting filter gives a keyed Bloom filter
        return bloom;
    });
}

}  // namespace bloomkit_py
