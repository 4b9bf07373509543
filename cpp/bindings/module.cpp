// bloomkit._core: the pybind11 module. Each filter type binds itself in its
// own file; this file only wires them together with the shared pieces.
#include <bloomkit/cuckoo.hpp>
#include <bloomkit/format.hpp>

#include <pybind11/pybind11.h>

#include "common.hpp"
#include "keys.hpp"

namespace py = pybind11;

namespace bloomkit_py {
void bind_bloom(py::module_& m);
void bind_cuckoo(py::module_& m);
void bind_counting_bloom(py::module_& m);
void bind_scalable_bloom(py::module_& m);
}

PYBIND11_MODULE(_core, m) {
    m.doc() = "bloomkit C++ core (MurmurHash3_x64_128, filters, binary format)";

    m.def(
        "hash128",
        [](py::handle key, uint32_t seed) {
            const bloomkit::Hash128 h = bloomkit_py::hash_key(key, seed);
            return (py::int_(h.h2) << py::int_(64)) | py::int_(h.h1);
        },
        py::arg("key"), py::arg("seed") = 0);
    m.def("canonical_bytes", &bloomkit_py::canonical_bytes, py::arg("key"));
    m.def(
        "peek_type",
        [](py::handle frame) {
            bloomkit_py::ByteBuffer buffer(frame);
            return static_cast<int>(bloomkit::peek_type(buffer.data(), buffer.size()));
        },
        py::arg("frame"));

    py::class_<bloomkit_py::OffsetBatch>(m, "OffsetBatch",
                                         "Keys as an Arrow-style (data, offsets) buffer pair.")
        .def(py::init<py::buffer, py::buffer>(), py::arg("data"), py::arg("offsets"))
        .def("__len__", &bloomkit_py::OffsetBatch::size);
    py::class_<bloomkit_py::ViewBatch>(m, "ViewBatch", "Keys as Arrow BinaryView buffers (views, data buffers).")
        .def(py::init<py::buffer, py::list>(), py::arg("views"), py::arg("buffers"))
        .def("__len__", &bloomkit_py::ViewBatch::size);
    py::class_<bloomkit_py::RowBatch>(m, "RowBatch",
                                      "Key columns whose rows are the keys (docs/decisions.md, row keys).")
        .def(py::init<py::list, py::list>(), py::arg("columns"), py::arg("names"))
        .def("__len__", [](const bloomkit_py::RowBatch& rows) { return rows.columns().size(); });

    // bloomkit.FilterFullError: a RuntimeError raised when a cuckoo filter
    // cannot store a key. register_exception creates the type and its
    // what() translation; the translator after it (tried first) also sets
    // `index`, the failing key's position in a batch (None for one key).
    static py::handle filter_full = py::register_exception<bloomkit::FilterFullError>(
        m, "FilterFullError", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const bloomkit::FilterFullError& e) {
            py::object error = py::reinterpret_borrow<py::object>(filter_full)(e.what());
            error.attr("index") = e.index() == bloomkit::FilterFullError::kNoIndex
                                      ? py::object(py::none())
                                      : py::object(py::int_(e.index()));
            PyErr_SetObject(filter_full.ptr(), error.ptr());
        }
    });

    bloomkit_py::bind_bloom(m);
    bloomkit_py::bind_cuckoo(m);
    bloomkit_py::bind_counting_bloom(m);
    bloomkit_py::bind_scalable_bloom(m);
}
