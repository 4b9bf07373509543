// Text signatures for the functions pybind11 binds, so inspect.signature,
// help() and IDEs see each method's parameters.
//
// CPython reads a builtin's signature from the start of its docstring: the
// function's name, its parameters in Python syntax, then "\n--\n\n"
// (`__text_signature__`). pybind11 writes
// its own "name(self: T, key: object) -> None" header instead, which
// inspect cannot parse, so `inspect.signature(f.clear)` raised ValueError.
// add_text_signatures() walks every pybind11 function of the module and of
// its classes once, at import, and prepends the CPython header built from
// pybind11's own record of the arguments (names, defaults, positional-only
// and keyword-only markers), so a new binding gets its signature without a
// hand-written string. The single-key METH_O methods (fast_methods.hpp)
// carry theirs already; overloaded functions (the constructors) have no one
// signature and are left as pybind11 wrote them.
#pragma once

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace bloomkit_py {

namespace py = pybind11;

namespace detail_signature {

// A default as text that inspect can evaluate back (a literal), or "..."
// for any other object: the signature then says "has a default" without
// inventing its spelling.
inline std::string default_text(py::handle value) {
    if (value.is_none()) return "None";
    if (PyBool_Check(value.ptr())) return value.ptr() == Py_True ? "True" : "False";
    if (PyLong_CheckExact(value.ptr()) || PyUnicode_CheckExact(value.ptr()) || PyBytes_CheckExact(value.ptr()))
        return py::repr(value).cast<std::string>();
    if (PyFloat_CheckExact(value.ptr()) && std::isfinite(PyFloat_AS_DOUBLE(value.ptr())))
        return py::repr(value).cast<std::string>();
    return "...";
}

// Whether argument i has a name a caller could pass it by.
inline bool named(const py::detail::function_record& rec, size_t i) {
    return i < rec.args.size() && rec.args[i].name != nullptr && rec.args[i].name[0] != '\0';
}

// "(" parameters ")" for one function record, or "" when the record cannot
// be written as a Python parameter list (*args, **kwargs, or a default
// before a positional argument without one). pybind11's markers: the first
// nargs_pos_only arguments are positional-only (py::pos_only()), those from
// nargs_pos on keyword-only (py::kw_only()); an argument bound without
// py::arg has no name and can only be passed by position.
inline std::string parameters(const py::detail::function_record& rec) {
    if (rec.has_args || rec.has_kwargs) return "";
    const size_t count = rec.nargs;
    const size_t self = rec.is_method ? 1 : 0;
    size_t positional_only = rec.nargs_pos_only;
    for (size_t i = self; i < count && i < rec.nargs_pos; ++i)
        if (!named(rec, i)) positional_only = i + 1;
    std::string text = "(";
    bool any_default = false;
    for (size_t i = 0; i < count; ++i) {
        if (i > 0) text += ", ";
        if (i == rec.nargs_pos) text += "*, ";
        if (i < self) {
            // Plain "self", not CPython's "$self": inspect drops a "$" parameter
            // whenever the function has a __self__, and a pybind11 function's
            // __self__ is its record, so "$self" would vanish from the unbound
            // method too. A bound method drops this first parameter as usual.
            text += "self";
        } else if (named(rec, i)) {
            text += rec.args[i].name;
        } else {
            text += "arg" + std::to_string(i - self);
        }
        if (i < rec.args.size() && rec.args[i].value) {
            text += "=" + default_text(rec.args[i].value);
            any_default = true;
        } else if (any_default && i < rec.nargs_pos) {
            return "";
        }
        if (i + 1 == positional_only && positional_only > self) text += ", /";
    }
    return text + ")";
}

inline void add_one(py::handle function) {
    py::handle callable = py::detail::get_function(function);
    if (!callable || !PyCFunction_Check(callable.ptr())) return;
    py::detail::function_record* rec =
        py::detail::function_record_ptr_from_PyObject(PyCFunction_GET_SELF(callable.ptr()));
    if (rec == nullptr || rec->next != nullptr || rec->def == nullptr) return;  // not pybind11's, or overloaded
    const char* old_doc = rec->def->ml_doc;
    const std::string name = rec->name;
    if (old_doc != nullptr && std::strncmp(old_doc, (name + "(").c_str(), name.size() + 1) == 0 &&
        std::strstr(old_doc, "\n--\n\n") != nullptr)
        return;  // already has one
    const std::string params = parameters(*rec);
    if (params.empty()) return;
    std::string doc = name + params + "\n--\n\n" + (old_doc != nullptr ? old_doc : "");
    // pybind11 frees ml_doc with std::free when the function is destroyed.
    char* copy = static_cast<char*>(std::malloc(doc.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, doc.c_str(), doc.size() + 1);
    std::free(const_cast<char*>(old_doc));
    rec->def->ml_doc = copy;
}

}  // namespace detail_signature

// Every function of the module, and every method (static or not) of the
// classes it binds.
inline void add_text_signatures(py::module_& m) {
    for (auto item : m.attr("__dict__").cast<py::dict>()) {
        py::handle value = item.second;
        if (PyType_Check(value.ptr())) {
            if (py::detail::get_type_info(reinterpret_cast<PyTypeObject*>(value.ptr())) == nullptr) continue;
            for (auto member : value.attr("__dict__").cast<py::dict>()) {
                py::handle attribute = member.second;
                if (PyObject_TypeCheck(attribute.ptr(), &PyStaticMethod_Type)) {
                    detail_signature::add_one(attribute.attr("__func__"));
                } else {
                    detail_signature::add_one(attribute);
                }
            }
        } else {
            detail_signature::add_one(value);
        }
    }
}

}  // namespace bloomkit_py
