// bloomkit.redis's client side: bit positions from a filter's geometry, the
// BITFIELD command encoder (cpp/include/bloomkit/redis_bitfield.hpp) and a
// filter family member's lookup and test-and-set on its generations' bytes
// (cpp/include/bloomkit/family_member.hpp).
#include <bloomkit/bloom.hpp>
#include <bloomkit/family_member.hpp>
#include <bloomkit/redis_bitfield.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace py = pybind11;

namespace {

// A generation as Redis returned it: empty (no such generation, null) or at
// least the geometry's bytes (the family's 16-byte trailer follows them).
const uint8_t* generation_bytes(const ByteBuffer& buffer, size_t nbytes, const char* which) {
    if (buffer.size() == 0) return nullptr;
    if (buffer.size() < nbytes)
        throw py::value_error(std::string("the ") + which + " generation is " + std::to_string(buffer.size()) +
                              " bytes, the geometry needs " + std::to_string(nbytes));
    return buffer.data();
}

}  // namespace

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
            "(len(keys), num_hashes) uint64 array: the bit indices each key sets, as BloomFilter._positions_many.")
        .def(
            "_member_contains_many",
            [](const bloomkit::BloomGeometry& self, py::handle keys, py::handle current, py::handle previous) {
                KeyBatch batch(keys, bloomkit::KeyHashing(self.seed));
                const size_t nbytes = static_cast<size_t>(self.num_bits / 8);
                ByteBuffer current_buffer(current), previous_buffer(previous);
                const uint8_t* current_bits = generation_bytes(current_buffer, nbytes, "current");
                const uint8_t* previous_bits = generation_bytes(previous_buffer, nbytes, "previous");
                auto result = new_bool_array(batch.size());
                uint8_t* out = bool_data(result);
                AccessGuard::without_gil([&] {
                    batch.visit([&](const auto& source) {
                        bloomkit::member_contains_many(self, source, current_bits, previous_bits, out);
                    });
                });
                return result;
            },
            py::arg("keys"), py::arg("current"), py::arg("previous"),
            "Per key, whether it is in the generation `current` or `previous` (bytes; b'': none).")
        .def(
            "_member_add_many",
            [](const bloomkit::BloomGeometry& self, py::handle keys, py::handle current, py::handle previous,
               uint64_t limit) {
                KeyBatch batch(keys, bloomkit::KeyHashing(self.seed));
                const size_t nbytes = static_cast<size_t>(self.num_bits / 8);
                ByteBuffer current_buffer(current), previous_buffer(previous);
                const uint8_t* current_bits = generation_bytes(current_buffer, nbytes, "current");
                const uint8_t* previous_bits = generation_bytes(previous_buffer, nbytes, "previous");
                std::string bits(nbytes, '\0'), rotated(nbytes, '\0');
                if (current_bits) std::memcpy(bits.data(), current_bits, nbytes);
                auto found = new_bool_array(batch.size());
                uint8_t* out = bool_data(found);
                bloomkit::MemberAddResult done;
                AccessGuard::without_gil([&] {
                    batch.visit([&](const auto& source) {
                        done = bloomkit::member_add_many(self, source, reinterpret_cast<uint8_t*>(bits.data()),
                                                         previous_bits, reinterpret_cast<uint8_t*>(rotated.data()),
                                                         limit, out);
                    });
                });
                return py::make_tuple(found, py::bytes(bits),
                                      done.rotated ? py::object(py::bytes(rotated)) : py::none(), done.fresh,
                                      done.fresh_before_rotation);
            },
            py::arg("keys"), py::arg("current"), py::arg("previous"), py::arg("limit"),
            "Test-and-set with rotation at `limit` set bits on a member's generations (family_member.hpp): "
            "(found, current bits, the rotated generation's bits or None, new keys, new keys before the rotation).");
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
