// bloomkit.redis's client side: bit positions from a filter's geometry and
// the BITFIELD command encoder (cpp/include/bloomkit/redis_bitfield.hpp).
#include <bloomkit/bloom.hpp>
#include <bloomkit/redis_bitfield.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <vector>

#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace py = pybind11;

void bind_redis(py::module_& m) {
    py::class_<bloomkit::BloomGeometry>(m, "BloomPositions",
                                        "A Bloom filter's geometry without its bits: where each key's bits are.")
        .def(py::init([](uint64_t num_bits, uint32_t num_hashes, uint32_t seed, uint64_t capacity, double error_rate,
                         const std::string& layout) {
                 bloomkit::BloomGeometry g{num_bits, num_hashes, seed,
                                           capacity, error_rate, bloomkit::layout_from_name(layout)};
                 g.validate();
                 return g;
             }),
             py::arg("num_bits"), py::arg("num_hashes"), py::arg("seed"), py::arg("capacity"), py::arg("error_rate"),
             py::arg("layout"))
        .def(
            "positions_many",
            [](const bloomkit::BloomGeometry& self, py::handle keys) {
                KeyBatch batch(keys, bloomkit::KeyHashing(self.seed));  // unkeyed: Redis filters have no secret_key
                py::array_t<uint64_t> out(
                    {static_cast<py::ssize_t>(batch.size()), static_cast<py::ssize_t>(self.num_hashes)});
                uint64_t* data = out.mutable_data();
                AccessGuard::without_gil([&] {
                    batch.visit([&](const auto& source) { bloomkit::geometry_positions(self, source, data); });
                });
                return out;
            },
            py::arg("keys"),
            "(len(keys), num_hashes) uint64 array: the bit indices each key sets, as BloomFilter._positions_many.");
    m.def(
        "redis_bitfield",
        [](std::vector<std::string> head, std::string op, std::string value,
           py::array_t<uint64_t, py::array::c_style | py::array::forcecast> bits, uint64_t base) {
            if (bits.ndim() != 1) throw py::value_error("bits must be a 1-d array");
            const std::vector<std::string_view> head_views(head.begin(), head.end());
            const std::string packed = AccessGuard::without_gil([&] {
                return bloomkit::bitfield_command(head_views, op, value, bits.data(), static_cast<size_t>(bits.size()),
                                                  base);
            });
            return py::bytes(packed);
        },
        py::arg("head"), py::arg("op"), py::arg("value"), py::arg("bits"), py::arg("base"),
        "RESP bytes of `head... op u1 OFFSET [value] ...` for filter bits in the shard starting at `base`.");
}

}  // namespace bloomkit_py
