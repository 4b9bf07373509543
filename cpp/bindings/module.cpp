// bloomkit._core: the pybind11 module. Each filter type binds itself in its
// own file; this file only wires them together with the shared pieces.
#include <bloomkit/cuckoo.hpp>
#include <bloomkit/filter_types.hpp>
#include <bloomkit/format.hpp>
#include <bloomkit/memory.hpp>
#include <bloomkit/parallel.hpp>
#include <bloomkit/simd.hpp>

#include <cstdlib>

#include <new>

#include <pybind11/pybind11.h>

#include "common.hpp"
#include "gil_split.hpp"
#include "int_key.hpp"
#include "keys.hpp"
#include "text_signature.hpp"

namespace py = pybind11;

namespace bloomkit_py {
// Each framed type's binding function, one per row of filter_types.hpp.
#define BLOOMKIT_DECLARE_BIND(Enum, tag, name, bind) void bind(py::module_& m);
BLOOMKIT_FILTER_TYPES(BLOOMKIT_DECLARE_BIND)
#undef BLOOMKIT_DECLARE_BIND
void bind_redis(py::module_& m);
void bind_parquet(py::module_& m);
void bind_spark(py::module_& m);
void bind_orc(py::module_& m);
void bind_sizing(py::module_& m);
void bind_window(py::module_& m);
}  // namespace bloomkit_py

// py::mod_gil_not_used(): on free-threaded CPython importing the module
// leaves the GIL off; every guard the GIL gave on other builds is held
// without it there (guard.hpp, keys.cpp, docs/RELIABILITY.md "Threads"),
// proven by .ci/free_threaded.sh.
PYBIND11_MODULE(_core, m, py::mod_gil_not_used()) {
    m.doc() = "bloomkit C++ core (MurmurHash3_x64_128, filters, binary format)";

    // The SIMD kernels (bloomkit/simd.hpp): the best the CPU runs, unless
    // BLOOMKIT_SIMD ('auto', 'avx2' or 'portable') says otherwise. Read once,
    // here, at import; an unknown or unsupported value fails the import
    // with a ValueError naming it rather than being ignored.
    if (const char* requested = std::getenv("BLOOMKIT_SIMD")) {
        try {
            bloomkit::simd::set_level(bloomkit::simd::level_from_name(requested));
        } catch (const std::invalid_argument& e) {
            throw py::value_error(std::string("BLOOMKIT_SIMD: ") + e.what());
        }
    }
    m.def(
        "simd_level", [] { return std::string(bloomkit::simd::level_name(bloomkit::simd::active_level())); },
        "The SIMD kernels in use: 'avx2' or 'portable' (set with the BLOOMKIT_SIMD environment variable).");
    m.def(
        "simd_supported", [] { return std::string(bloomkit::simd::level_name(bloomkit::simd::supported_level())); },
        "The best SIMD kernels this CPU and build can run: 'avx2' or 'portable'.");
    m.def(
        "_set_simd_level",
        [](const std::string& name) { bloomkit::simd::set_level(bloomkit::simd::level_from_name(name)); },
        py::arg("level"),
        "Switch the SIMD kernels at run time (benchmarks compare both in one process; results are identical).");

    m.def(
        "_batch_threads", [] { return bloomkit_py::batch_threads(); },
        "Threads a large batch may use (bloomkit/parallel.hpp): 2, or 1 with one usable CPU or "
        "BLOOMKIT_BATCH_THREADS=1.");
    m.def(
        "_helper_slots_in_use", [] { return bloomkit::HelperSlot::in_use_now(); },
        "Helper threads of two-thread batches running now (bloomkit/parallel.hpp; for tests).");
    m.def(
        "_set_batch_threads", [](int threads) { bloomkit_py::set_batch_threads(threads); }, py::arg("threads"),
        "Set the threads large batches may use, 1 or 2 (benchmarks and tests compare both in one process; "
        "results are identical).");

    m.def(
        "hash128",
        [](py::handle key, uint32_t seed) {
            const bloomkit::Hash128 h = bloomkit_py::hash_key(key, seed);
            return (py::int_(h.h2) << py::int_(64)) | py::int_(h.h1);
        },
        py::arg("key"), py::arg("seed") = 0);
    m.def("canonical_bytes", &bloomkit_py::canonical_bytes, py::arg("key"));
    m.attr("_INT_FAST_PATH") = bloomkit_py::kIntFastPath;
    m.def(
        "_int_key_paths",
        [](py::handle key) {
            // Both reads of an exact int key (int_key.hpp): (fast, public), each
            // value mod 2**64 or None where that read leaves the key to the
            // general path. tests/test_int_keys.py compares them.
            if (!PyLong_CheckExact(key.ptr())) throw py::type_error("_int_key_paths takes an exact int");
            uint64_t value = 0;
            bool error = false;
            py::object fast = py::none();
            if (bloomkit_py::exact_int_value(key.ptr(), value, error)) fast = py::int_(value);
            if (error) throw py::error_already_set();
            py::object fallback = py::none();
            if (bloomkit_py::exact_int_value_public(key.ptr(), value, error)) fallback = py::int_(value);
            if (error) throw py::error_already_set();
            return py::make_tuple(fast, fallback);
        },
        py::arg("key"));
    m.def(
        "peek_type",
        [](py::handle frame) {
            bloomkit_py::ByteBuffer buffer(frame);
            return static_cast<int>(bloomkit::peek_type(buffer.data(), buffer.size()));
        },
        py::arg("frame"));

    m.def(
        "frame_header",
        [](py::handle header) {
            bloomkit_py::ByteBuffer buffer(header);
            const bloomkit::FrameHeader h = bloomkit::parse_header(buffer.data(), buffer.size());
            return py::make_tuple(static_cast<int>(h.type), h.frame_length);
        },
        py::arg("header"),
        "(type tag, total frame length) a 24-byte header declares, from the core's one header parser "
        "(ValueError if it is not a header).");
    m.attr("FRAME_HEADER_SIZE") = bloomkit::kHeaderSize;

    py::class_<bloomkit_py::OffsetBatch>(m, "OffsetBatch", "Keys as an Arrow-style (data, offsets) buffer pair.")
        .def(py::init<py::buffer, py::buffer>(), py::arg("data"), py::arg("offsets"))
        .def("__len__", &bloomkit_py::OffsetBatch::size);
    py::class_<bloomkit_py::ViewBatch>(m, "ViewBatch", "Keys as Arrow BinaryView buffers (views, data buffers).")
        .def(py::init<py::buffer, py::list>(), py::arg("views"), py::arg("buffers"))
        .def("__len__", &bloomkit_py::ViewBatch::size);
    py::class_<bloomkit_py::RowBatch>(m, "RowBatch",
                                      "Key columns whose rows are the keys (docs/decisions.md, row keys).")
        .def(py::init<py::list, py::list>(), py::arg("columns"), py::arg("names"))
        .def("__len__", [](const bloomkit_py::RowBatch& rows) { return rows.columns().size(); });
    py::class_<bloomkit_py::ChunkedBatch>(m, "ChunkedBatch",
                                          "One column of keys as several batches, read in place as one batch.")
        .def(py::init<py::list>(), py::arg("chunks"))
        .def("__len__", &bloomkit_py::ChunkedBatch::size);

    // bloomkit.FilterFullError: a RuntimeError raised when a cuckoo filter
    // cannot store a key because it is full. bloomkit.TooManyCopiesError: a
    // separate RuntimeError for one key stored more often than its two
    // buckets hold (the filter may be nearly empty). register_exception
    // creates each type and its what() translation; the translator after
    // them (tried first) also sets `index`, the failing key's position in a
    // batch (None for one key).
    static py::handle filter_full =
        py::register_exception<bloomkit::FilterFullError>(m, "FilterFullError", PyExc_RuntimeError);
    static py::handle too_many_copies =
        py::register_exception<bloomkit::TooManyCopiesError>(m, "TooManyCopiesError", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        auto raise = [](py::handle type, const char* what, uint64_t index) {
            py::object error = py::reinterpret_borrow<py::object>(type)(what);
            error.attr("index") =
                index == bloomkit::FilterFullError::kNoIndex ? py::object(py::none()) : py::object(py::int_(index));
            PyErr_SetObject(type.ptr(), error.ptr());
        };
        try {
            if (p) std::rethrow_exception(p);
        } catch (const bloomkit::FilterFullError& e) {
            raise(filter_full, e.what(), e.index());
        } catch (const bloomkit::TooManyCopiesError& e) {
            raise(too_many_copies, e.what(), e.index());
        }
    });

    // bloomkit.SecretKeyError: a ValueError for a keyed filter loaded without
    // its key or with another, an unkeyed one loaded with a key, or filters
    // of different keys combined (common.hpp).
    py::register_exception<bloomkit_py::SecretKeyError>(m, "SecretKeyError", PyExc_ValueError);
    m.def(
        "siphash128",
        [](py::handle key, py::handle data) {
            bloomkit_py::ByteBuffer k(key);
            if (k.size() != 16) throw py::value_error("a SipHash key is 16 bytes, got " + std::to_string(k.size()));
            bloomkit_py::ByteBuffer d(data);
            const bloomkit::Hash128 h =
                bloomkit::siphash24_128(bloomkit::SipKey::from_bytes(k.data()), d.data(), d.size());
            return (py::int_(h.h2) << py::int_(64)) | py::int_(h.h1);
        },
        py::arg("key"), py::arg("data"),
        "SipHash-2-4-128 of data under a 16-byte key, as h1 | h2 << 64 (the reference's 16 output bytes, "
        "little-endian).");

    // Allocation failures: the core's own check (memory.hpp) says what was
    // asked for; a plain std::bad_alloc gets a message that says more than
    // pybind11's "std::bad_alloc".
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const bloomkit::OutOfMemory& e) {
            PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const std::bad_alloc&) {
            PyErr_SetString(PyExc_MemoryError,
                            "out of memory: the filter's storage could not be allocated (std::bad_alloc)");
        }
    });
    // Whether a filter object's C++ core exists (its __init__ ran). The
    // Python layer uses it to refuse a second __init__, which pybind11 would
    // silently ignore.
    m.def("_initialised", [](py::handle obj) {
        if (py::detail::get_type_info(Py_TYPE(obj.ptr())) == nullptr) return false;
        auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
        for (const py::detail::value_and_holder& v_h : py::detail::values_and_holders(inst))
            if (!v_h.holder_constructed()) return false;
        return true;
    });
    m.def("available_memory", &bloomkit::available_memory,
          "Bytes the system can still give this process (MemAvailable + SwapFree, cgroup limit).");

    m.def(
        "filter_types",
        [] {
            py::tuple rows(bloomkit::kFilterTypeCount);
            for (size_t i = 0; i < bloomkit::kFilterTypeCount; ++i)
                rows[i] = py::make_tuple(bloomkit::kFilterTypes[i].python_name, bloomkit::kFilterTypes[i].tag);
            return rows;
        },
        "The framed filter types of this build as (Python class name, format type tag) pairs in tag order "
        "(bloomkit/filter_types.hpp).");

    bloomkit_py::bind_frame_view(m);
    // Sizing and windows first: a filter's bindings may take a WindowSpec,
    // whose Python name their signatures show only once it is bound.
    bloomkit_py::bind_sizing(m);
    bloomkit_py::bind_window(m);
#define BLOOMKIT_CALL_BIND(Enum, tag, name, bind) bloomkit_py::bind(m);
    BLOOMKIT_FILTER_TYPES(BLOOMKIT_CALL_BIND)
#undef BLOOMKIT_CALL_BIND
    bloomkit_py::bind_redis(m);
    bloomkit_py::bind_spark(m);
    bloomkit_py::bind_parquet(m);
    bloomkit_py::bind_orc(m);

    // Last, once every function exists (text_signature.hpp).
    bloomkit_py::add_text_signatures(m);
}
