#include "keys.hpp"

#include <cstring>

namespace bloomkit_py {

namespace {

const char* const kAllowedKeys = "keys must be str, bytes, bytearray, memoryview or int";

std::string where(Py_ssize_t index) {
    return index >= 0 ? "key at index " + std::to_string(index) : std::string("key");
}

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__qualname__")); }

[[noreturn]] void unsupported(py::handle key, Py_ssize_t index) {
    throw py::type_error(where(index) + " has unsupported type '" + type_name(key) + "': " + kAllowedKeys);
}

// numpy.integer, looked up once; NumPy integer scalars are keys like ints.
bool is_numpy_integer(py::handle obj) {
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;
    const py::object& integer = storage.call_once_and_store_result([] {
        return py::module_::import("numpy").attr("integer");
    }).get_stored();
    const int result = PyObject_IsInstance(obj.ptr(), integer.ptr());
    if (result < 0) throw py::error_already_set();
    return result == 1;
}

// value mod 2^64 for value in [-2^63, 2^64); anything else is a ValueError.
uint64_t integer_value(py::handle obj, Py_ssize_t index) {
    int overflow = 0;
    const long long as_signed = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow == 0) {
        if (as_signed == -1 && PyErr_Occurred()) throw py::error_already_set();
        return static_cast<uint64_t>(as_signed);
    }
    if (overflow > 0) {
        const unsigned long long as_unsigned = PyLong_AsUnsignedLongLong(obj.ptr());
        if (!(as_unsigned == static_cast<unsigned long long>(-1) && PyErr_Occurred()))
            return static_cast<uint64_t>(as_unsigned);
        PyErr_Clear();
    }
    throw py::value_error(where(index) + " is an int outside [-2**63, 2**64): " +
                          std::string(py::str(py::repr(obj))).substr(0, 60));
}

}  // namespace

CanonicalKey canonical_key(py::handle key, Py_ssize_t index) {
    PyObject* obj = key.ptr();
    CanonicalKey out;
    if (PyUnicode_Check(obj)) {
        Py_ssize_t size = 0;
        const char* utf8 = PyUnicode_AsUTF8AndSize(obj, &size);
        if (utf8 == nullptr) {
            PyErr_Clear();
            throw py::value_error(where(index) +
                                  " is a str that cannot be encoded as UTF-8 (it contains a lone surrogate)");
        }
        out.data = reinterpret_cast<const uint8_t*>(utf8);
        out.size = static_cast<size_t>(size);
        return out;
    }
    if (PyBytes_Check(obj)) {
        out.data = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(obj));
        out.size = static_cast<size_t>(PyBytes_GET_SIZE(obj));
        return out;
    }
    if (PyLong_Check(obj)) {
        if (PyBool_Check(obj)) unsupported(key, index);
        out.is_integer = true;
        out.integer = integer_value(key, index);
        return out;
    }
    if (PyByteArray_Check(obj)) {
        out.data = reinterpret_cast<const uint8_t*>(PyByteArray_AS_STRING(obj));
        out.size = static_cast<size_t>(PyByteArray_GET_SIZE(obj));
        return out;
    }
    if (PyMemoryView_Check(obj)) {
        const Py_buffer* view = PyMemoryView_GET_BUFFER(obj);
        if (!PyBuffer_IsContiguous(view, 'C'))
            throw py::value_error(where(index) + " is a non-contiguous memoryview: keys must be C-contiguous buffers");
        out.data = static_cast<const uint8_t*>(view->buf);
        out.size = static_cast<size_t>(view->len);
        return out;
    }
    if (is_numpy_integer(key)) {
        py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(obj));
        if (!as_int) throw py::error_already_set();
        out.is_integer = true;
        out.integer = integer_value(as_int, index);
        return out;
    }
    unsupported(key, index);
}

Hash128 hash_key(py::handle key, uint32_t seed) { return canonical_key(key).hash(seed); }

py::bytes canonical_bytes(py::handle key) {
    const CanonicalKey k = canonical_key(key);
    if (k.is_integer) {
        char le[8];
        for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(k.integer >> (8 * i));
        return py::bytes(le, 8);
    }
    return py::bytes(reinterpret_cast<const char*>(k.data), k.size);
}

// ---------------------------------------------------------------- OffsetBatch

OffsetBatch::OffsetBatch(py::buffer data, py::buffer offsets) : data_owner_(data), offsets_owner_(offsets) {
    const py::buffer_info data_info = data.request();
    const py::buffer_info offsets_info = offsets.request();
    if (data_info.ndim != 1 || offsets_info.ndim != 1)
        throw py::value_error("OffsetBatch needs 1-D data and offsets buffers");
    if (data_info.itemsize != 1 || data_info.strides[0] != 1)
        throw py::value_error("OffsetBatch data must be a contiguous byte buffer");
    if (offsets_info.itemsize != 4 && offsets_info.itemsize != 8)
        throw py::value_error("OffsetBatch offsets must be int32 or int64");
    if (offsets_info.strides[0] != offsets_info.itemsize)
        throw py::value_error("OffsetBatch offsets must be contiguous");
    if (offsets_info.shape[0] < 1) throw py::value_error("OffsetBatch needs at least one offset");
    wide_ = offsets_info.itemsize == 8;
    data_ = static_cast<const uint8_t*>(data_info.ptr);
    offsets_ = offsets_info.ptr;
    count_ = static_cast<size_t>(offsets_info.shape[0] - 1);
    const int64_t data_size = static_cast<int64_t>(data_info.size);
    auto offset_at = [&](size_t i) -> int64_t {
        return wide_ ? static_cast<const int64_t*>(offsets_)[i] : static_cast<const int32_t*>(offsets_)[i];
    };
    int64_t previous = offset_at(0);
    if (previous < 0 || previous > data_size) throw py::value_error("OffsetBatch offset 0 is outside the data");
    for (size_t i = 1; i <= count_; ++i) {
        const int64_t current = offset_at(i);
        if (current < previous || current > data_size)
            throw py::value_error("OffsetBatch offsets are not monotone inside the data at index " +
                                  std::to_string(i));
        previous = current;
    }
}

// ------------------------------------------------------------------- KeyBatch

KeyBatch::KeyBatch(py::handle keys, uint32_t seed) : seed_(seed) {
    if (py::isinstance<OffsetBatch>(keys)) {
        owner_ = py::reinterpret_borrow<py::object>(keys);
        offsets_ = keys.cast<const OffsetBatch*>();
        count_ = offsets_->size();
        kind_ = Kind::Offsets;
        return;
    }
    if (py::isinstance<py::array>(keys)) {
        from_array(py::reinterpret_borrow<py::array>(keys));
        return;
    }
    if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()) || PyByteArray_Check(keys.ptr()) ||
        PyMemoryView_Check(keys.ptr()))
        throw py::type_error("expected an iterable of keys, got a single '" + type_name(keys) +
                             "' (wrap one key in a list)");
    from_objects(keys);
}

void KeyBatch::from_array(py::array array) {
    if (array.ndim() != 1)
        throw py::value_error("key arrays must be 1-D, got a " + std::to_string(array.ndim()) + "-D array");
    py::dtype dtype = array.dtype();
    const char kind = dtype.kind();
    if (kind == 'O') {
        from_object_array(array);
        return;
    }
    if (kind != 'i' && kind != 'u' && kind != 'S' && kind != 'U')
        throw py::type_error("unsupported key array dtype '" + std::string(py::str(dtype)) +
                             "': key arrays must hold integers, bytes (S), str (U) or objects");
    if (!dtype.attr("isnative").cast<bool>())
        array = array.attr("astype")(dtype.attr("newbyteorder")("="));
    owner_ = array;
    base_ = static_cast<const uint8_t*>(array.data());
    count_ = static_cast<size_t>(array.shape(0));
    stride_ = static_cast<ptrdiff_t>(array.strides(0));
    itemsize_ = static_cast<size_t>(array.itemsize());
    if (kind == 'S') {
        kind_ = Kind::FixedBytes;
        return;
    }
    if (kind == 'U') {
        kind_ = Kind::FixedUtf32;
        const size_t bad = bloomkit::Utf32Keys(base_, count_, stride_, itemsize_ / 4).first_invalid();
        if (bad != count_)
            throw py::value_error("key at index " + std::to_string(bad) +
                                  " is a str that cannot be encoded as UTF-8 (surrogate or out-of-range code point)");
        return;
    }
    const bool is_signed = kind == 'i';
    switch (itemsize_) {
        case 1: kind_ = is_signed ? Kind::Int8 : Kind::UInt8; break;
        case 2: kind_ = is_signed ? Kind::Int16 : Kind::UInt16; break;
        case 4: kind_ = is_signed ? Kind::Int32 : Kind::UInt32; break;
        case 8: kind_ = is_signed ? Kind::Int64 : Kind::UInt64; break;
        default:
            throw py::type_error("unsupported integer key width of " + std::to_string(itemsize_) + " bytes");
    }
}

void KeyBatch::from_objects(py::handle sequence) {
    // Lists and tuples are walked in place; any other iterable is first
    // collected into a tuple. Each item is held by a strong reference while
    // it is converted (a conversion may run Python code, e.g. __index__,
    // which could shrink a list), and the size is re-read every step.
    py::object items;
    if (PyList_Check(sequence.ptr()) || PyTuple_Check(sequence.ptr())) {
        items = py::reinterpret_borrow<py::object>(sequence);
    } else {
        items = py::reinterpret_steal<py::object>(PySequence_Tuple(sequence.ptr()));
        if (!items) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                throw py::type_error("expected an iterable of keys, got '" + type_name(sequence) + "'");
            }
            throw py::error_already_set();
        }
    }
    const bool is_list = PyList_Check(items.ptr());
    auto length = [&] { return is_list ? PyList_GET_SIZE(items.ptr()) : PyTuple_GET_SIZE(items.ptr()); };
    digests_.reserve(static_cast<size_t>(length()));
    for (Py_ssize_t i = 0; i < length(); ++i) {
        py::object item = py::reinterpret_borrow<py::object>(is_list ? PyList_GET_ITEM(items.ptr(), i)
                                                                     : PyTuple_GET_ITEM(items.ptr(), i));
        digests_.push_back(canonical_key(item, i).hash(seed_));
    }
    count_ = digests_.size();
    kind_ = Kind::Digests;
}

void KeyBatch::from_object_array(py::array array) {
    // NumPy object arrays hold PyObject pointers (NULL reads as None); the
    // array is kept alive by `array` for the whole walk.
    const auto* base = static_cast<const uint8_t*>(array.data());
    const ptrdiff_t stride = static_cast<ptrdiff_t>(array.strides(0));
    const Py_ssize_t n = array.shape(0);
    digests_.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* raw;
        std::memcpy(&raw, base + i * stride, sizeof raw);
        py::object item = py::reinterpret_borrow<py::object>(raw != nullptr ? raw : Py_None);
        digests_.push_back(canonical_key(item, i).hash(seed_));
    }
    count_ = digests_.size();
    kind_ = Kind::Digests;
}

}  // namespace bloomkit_py
