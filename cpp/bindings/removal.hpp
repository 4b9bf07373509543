// The Python surface for filters that can remove keys (counting Bloom,
// cuckoo), bound once for any core type next to bind_common().
//
// A core type Core provides, besides what bind_common() needs:
//     bool remove(Hash128)        false, changing nothing, when the key is
//                                 definitely absent
//     uint64-convertible count(Hash128) const
//     size_t remove_many(keys)    removes all keys in order or none; returns
//                                 the index of the first key that could not
//                                 be removed, or keys.size()
#pragma once

#include <pybind11/pybind11.h>

#include "common.hpp"
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
                // Like set.remove: the KeyError carries the key itself.
                PyErr_SetObject(PyExc_KeyError, key.ptr());
                throw py::error_already_set();
            }
        },
        py::arg("key"),
        "Remove one occurrence of key; KeyError (and no change) if it is definitely absent.");
    cls.def(
        "discard",
        [](G& self, py::handle key) {
            const Hash128 h = hash_key(key, self.core.seed());
            return self.guard.write([&] { return self.core.remove(h); });
        },
        py::arg("key"),
        "Remove one occurrence of key if it may be present; return whether something was removed.");
    cls.def(
        "count",
        [](G& self, py::handle key) {
            const Hash128 h = hash_key(key, self.core.seed());
            return static_cast<uint64_t>(self.guard.read([&] { return self.core.count(h); }));
        },
        py::arg("key"),
        "Upper bound on how many times key was added (0 if it is definitely absent).");
    // Removes a batch all or nothing; returns -1 when every key was removed,
    // else the index of the first key that could not be (nothing changed).
    // The Python layer turns that into its KeyError.
    cls.def(
        "_remove_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys);
            const size_t failed = self.guard.released_write([&] {
                size_t index = 0;
                batch.visit([&](const auto& source) { index = self.core.remove_many(source); });
                return index;
            });
            return failed == batch.size() ? py::ssize_t(-1) : static_cast<py::ssize_t>(failed);
        },
        py::arg("keys"));
}

}  // namespace bloomkit_py
