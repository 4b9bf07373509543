// File-backed BloomFilter bindings (bloomkit/mapped_file.hpp): the opaque
// MappedFile handle, BloomCore construction over a mapping, flush/close
// (mapped.hpp, shared with the rotating filter), and the Python exceptions
// for closed and read-only filters.
#include <bloomkit/mapped_file.hpp>

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <system_error>

#include "common.hpp"
#include "mapped.hpp"

namespace bloomkit_py {

using bloomkit::BloomFilter;
using bloomkit::BloomGeometry;
using bloomkit::MappedFile;

void bind_mapped_bloom(py::module_& m, py::class_<Guarded<BloomFilter>>& cls) {
    using G = Guarded<BloomFilter>;

    // A write to a filter opened with mode "r" raises io.UnsupportedOperation
    // (an OSError and a ValueError), as a write to a file opened "r" does;
    // any use of a closed filter raises ValueError, as for a closed file.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const bloomkit::ReadOnlyError& e) {
            // Looked up once, also when two threads (free-threaded CPython) get here together.
            PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;
            const py::object& unsupported =
                storage
                    .call_once_and_store_result([] { return py::module_::import("io").attr("UnsupportedOperation"); })
                    .get_stored();
            PyErr_SetString(unsupported.ptr(), e.what());
        } catch (const bloomkit::ClosedError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const std::system_error& e) {
            // OSError(errno, message) picks the subclass (ENOSPC, EACCES, ...).
            py::object error = py::module_::import("builtins").attr("OSError")(e.code().value(), e.what());
            PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
        }
    });

    py::class_<MappedFile, std::shared_ptr<MappedFile>>(m, "MappedFile",
                                                        "A filter file mapped into memory (BloomFilter.open).")
        .def(py::init([](int fd, const std::string& path, const std::string& mode) {
                 const bloomkit::MapMode map_mode = bloomkit::map_mode_from_name(mode);
                 if (map_mode == bloomkit::MapMode::Create)
                     throw std::invalid_argument("mode 'w+' creates a file: use _create_bloom_file");
                 return AccessGuard::without_gil([&] { return MappedFile::open(fd, path, map_mode); });
             }),
             py::arg("fd"), py::arg("path"), py::arg("mode"))
        .def("_lock_writers", &MappedFile::lock_writers, py::arg("fd"),
             "Exact test-and-set: serialise this process's adds with other writers of the file.")
        .def_property_readonly("writable", &MappedFile::writable)
        .def_property_readonly("exact", [](const MappedFile& f) { return f.writer_lock() != nullptr; })
        .def_property_readonly("size", &MappedFile::size);

    m.def(
        "_create_bloom_file",
        [](int fd, const std::string& path, uint64_t num_bits, uint32_t num_hashes, uint32_t seed, uint64_t capacity,
           double error_rate, const std::string& layout) {
            const BloomGeometry geometry{num_bits, num_hashes, seed,
                                         capacity, error_rate, bloomkit::layout_from_name(layout)};
            return AccessGuard::without_gil([&] { return bloomkit::create_bloom_file(fd, path, geometry); });
        },
        py::arg("fd"), py::arg("path"), py::arg("num_bits"), py::arg("num_hashes"), py::arg("seed"),
        py::arg("capacity"), py::arg("error_rate"), py::arg("layout"));

    // The filter over the file's payload, in place (no copy).
    cls.def(
        py::init([](std::shared_ptr<MappedFile> file, bool verify) {
            return AccessGuard::without_gil([&] {
                return new G(bloomkit::map_bloom(file, verify ? bloomkit::Checksum::Verify : bloomkit::Checksum::Skip));
            });
        }),
        py::arg("file"), py::arg("verify"));

    bind_file_methods<BloomFilter>(cls);
}

}  // namespace bloomkit_py
