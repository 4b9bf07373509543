// Deletion for the filters that support it (cuckoo, counting Bloom), bound
// once for any core type, next to bind_common().
//
// A core type Core provides:
//     bool remove(Hash128)        removes one copy; false (and no change)
//                                 when the key is definitely absent
//     uint64_t count(Hash128) const
//     template <class Keys> size_t remove_many(const Keys&)
//                                 all or nothing: keys.size() when every key
//                                 was removed, else the index of the first
//                                 definitely absent key, with the filter
//                                 left exactly as it was
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace py = pybind11;

template <class Core>
void bind_removal(py::class_<Guarded<Core>>& cls) {
    using G = Guarded<Core>;

    cls.def(
        "remove",
        [](G& self, py::handle key) {
            const Hash128 h = hash_key(key, self.core.seed());
            if (!self.guard.write([&] { return self.core.remove(h); })) {
                // Like set.remove: KeyError carrying the key itself.
                PyErr_SetObject(PyExc_KeyError, key.ptr());
                throw py::error_already_set();
            }
        },
        py::arg("key"),
        "Remove one copy of key; KeyError (and no change) if the key is definitely not in the filter.");
    cls.def(
        "discard",
        [](G& self, py::handle key) {
            const Hash128 h = hash_key(key, self.core.seed());
            return self.guard.write([&] { return self.core.remove(h); });
        },
        py::arg("key"), "Remove one copy of key if present; return whether something was removed.");
    cls.def(
        "count",
        [](G& self, py::handle key) {
            const Hash128 h = hash_key(key, self.core.seed());
            return self.guard.read([&] { return self.core.count(h); });
        },
        py::arg("key"), "How many times key is (probably) stored; 0 means definitely absent.");
    cls.def(
        "_remove_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.core.seed());
            const size_t missing = self.guard.released_write([&] {
                size_t first_missing = batch.size();
                batch.visit([&](const auto& source) { first_missing = self.core.remove_many(source); });
                return first_missing;
            });
            if (missing != batch.size())
                throw py::key_error("key at index " + std::to_string(missing) +
                                    " is not in the filter; nothing was removed");
        },
        py::arg("keys"));
}

}  // namespace bloomkit_py
