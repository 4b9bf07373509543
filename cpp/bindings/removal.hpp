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

#include "fast_methods.hpp"
#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace py = pybind11;

template <class Core>
bool removal_discard(Guarded<Core>& self, py::handle key) {
    const Hash128 h = hash_key(key, self.hashing);
    return self.write([&] { return self.core.remove(h); });
}

template <class Core>
py::object removal_remove(Guarded<Core>& self, py::handle key) {
    if (!removal_discard(self, key)) {
        // Like set.remove: KeyError carrying the key itself.
        PyErr_SetObject(PyExc_KeyError, key.ptr());
        throw py::error_already_set();
    }
    return py::none();
}

template <class Core>
py::object removal_discard_object(Guarded<Core>& self, py::handle key) {
    return py::bool_(removal_discard(self, key));
}

template <class Core>
py::object removal_count(Guarded<Core>& self, py::handle key) {
    const Hash128 h = hash_key(key, self.hashing);
    return py::int_(self.guard.read([&] { return self.core.count(h); }));
}

template <class Core>
void bind_removal(py::class_<Guarded<Core>>& cls) {
    using G = Guarded<Core>;

    // Single-key methods as METH_O functions (fast_methods.hpp): they are
    // the ones called once per key in Python loops.
    def_meth_o(
        cls, "remove", meth_o<G, &removal_remove<Core>>,
        "remove($self, key, /)\n--\n\nRemove one copy of key; KeyError (and no change) if the key is definitely not "
        "in the filter.");
    def_meth_o(
        cls, "discard", meth_o<G, &removal_discard_object<Core>>,
        "discard($self, key, /)\n--\n\nRemove one copy of key if present; return whether something was removed.");
    def_meth_o(cls, "count", meth_o<G, &removal_count<Core>>,
               "count($self, key, /)\n--\n\nHow many times key is (probably) stored; 0 means definitely absent.");

    cls.def(
        "_remove_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.hashing);
            const size_t missing = self.released_write([&] {
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
