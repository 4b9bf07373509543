// Single-key methods bound as plain CPython METH_O functions.
//
// pybind11's general dispatcher (overload resolution, argument casters,
// keyword handling) costs more than hashing a short key. The methods called
// once per key in a Python loop — add, contains, __contains__, remove, ... —
// take exactly one positional argument, so they are installed as METH_O
// method descriptors instead: Python's vectorcall reaches the C++ function
// directly. Exceptions still go through pybind11's registered translators.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "guard.hpp"

namespace bloomkit_py {

namespace py = pybind11;

// The C++ object behind `self`. The method descriptors installed below only
// ever receive instances of the bound class (CPython checks that), whose
// pybind11 layout is "simple" (one C++ base), so the value pointer is read
// straight from the instance instead of through pybind11's general caster.
// An instance made with __new__ whose __init__ never ran holds no object.
// The rare cases live out of line so that this stays a few inlined loads
// in every per-key call.
template <class Self>
[[gnu::noinline, gnu::cold]] Self& self_object_slow(PyObject* self) {
    auto* instance = reinterpret_cast<py::detail::instance*>(self);
    if (!instance->simple_layout) return py::handle(self).cast<Self&>();
    throw not_initialised(self);
}

template <class Self>
inline Self& self_object(PyObject* self) {
    auto* instance = reinterpret_cast<py::detail::instance*>(self);
    if (instance->simple_layout && instance->simple_holder_constructed && instance->simple_value_holder[0] != nullptr)
        return *static_cast<Self*>(instance->simple_value_holder[0]);
    return self_object_slow<Self>(self);
}

// Wraps `Fn(self_object, key) -> py::object` as a METH_O C function.
template <class Self, py::object (*Fn)(Self&, py::handle)>
PyObject* meth_o(PyObject* self, PyObject* key) {
    try {
        return Fn(self_object<Self>(self), key).release().ptr();
    }
#if defined(__GLIBCXX__)
    catch (abi::__forced_unwind&) {
        throw;  // thread ending at interpreter exit (guard.hpp, without_gil)
    }
#endif
    catch (...) {
        py::detail::try_translate_exceptions();
        return nullptr;
    }
}

// Installs `function` on the class as method `name`. The PyMethodDef must
// outlive the type, so it is allocated once and never freed (module lifetime).
// `doc` starts with CPython's text-signature header, "name($self, key, /)\n--\n\n",
// which inspect.signature reads as `(self, key, /)` (METH_O takes exactly one
// positional-only argument).
template <class Class>
void def_meth_o(Class& cls, const char* name, PyCFunction function, const char* doc) {
    auto* definition = new PyMethodDef{name, function, METH_O, doc};
    PyObject* descriptor = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), definition);
    if (descriptor == nullptr) throw py::error_already_set();
    py::setattr(cls, name, py::reinterpret_steal<py::object>(descriptor));
}

// Wraps `Fn(self_object, key) -> bool` as an sq_contains slot function.
template <class Self, bool (*Fn)(Self&, py::handle)>
int sq_contains(PyObject* self, PyObject* key) {
    try {
        return Fn(self_object<Self>(self), key) ? 1 : 0;
    }
#if defined(__GLIBCXX__)
    catch (abi::__forced_unwind&) {
        throw;
    }
#endif
    catch (...) {
        py::detail::try_translate_exceptions();
        return -1;
    }
}

// Makes `function` the class's `in` operator. A plain `__contains__` method
// would leave CPython calling it through the generic slot_sq_contains (an
// attribute lookup and a method call per `in`). A wrapper descriptor built
// on the same wrapperbase as `tuple.__contains__` is what CPython itself
// creates for C-level slots, so the slot, and that of every Python subclass,
// points straight at `function`.
template <class Class>
void def_sq_contains(Class& cls, objobjproc function) {
    py::object model = py::module_::import("builtins").attr("tuple").attr("__contains__");
    if (!PyObject_TypeCheck(model.ptr(), &PyWrapperDescr_Type))
        throw std::runtime_error("tuple.__contains__ is not a wrapper descriptor");
    struct wrapperbase* base = reinterpret_cast<PyWrapperDescrObject*>(model.ptr())->d_base;
    PyObject* descriptor =
        PyDescr_NewWrapper(reinterpret_cast<PyTypeObject*>(cls.ptr()), base, reinterpret_cast<void*>(function));
    if (descriptor == nullptr) throw py::error_already_set();
    // Setting the attribute on a heap type updates its slot (typeobject.c: update_slot).
    py::setattr(cls, "__contains__", py::reinterpret_steal<py::object>(descriptor));
}

}  // namespace bloomkit_py
