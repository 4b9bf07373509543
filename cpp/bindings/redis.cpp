// bloomkit.redis's command encoder (cpp/include/bloomkit/redis_bitfield.hpp).
#include <bloomkit/redis_bitfield.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "guard.hpp"

namespace bloomkit_py {

namespace py = pybind11;

void bind_redis(py::module_& m) {
    m.def(
        "redis_bitfield",
        [](std::string command, std::string key, std::string op, std::string value,
           py::array_t<uint64_t, py::array::c_style | py::array::forcecast> bits, uint64_t base) {
            if (bits.ndim() != 1) throw py::value_error("bits must be a 1-d array");
            const std::string packed = AccessGuard::without_gil([&] {
                return bloomkit::bitfield_command(command, key, op, value, bits.data(),
                                                  static_cast<size_t>(bits.size()), base);
            });
            return py::bytes(packed);
        },
        py::arg("command"), py::arg("key"), py::arg("op"), py::arg("value"), py::arg("bits"), py::arg("base"),
        "RESP bytes of `command key op u1 OFFSET [value] ...` for filter bits in the shard starting at `base`.");
}

}  // namespace bloomkit_py
