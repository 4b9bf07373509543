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
        // Acquired, not peeked at: a released memoryview's pointer is freed
        // memory, and PyObject_GetBuffer is what refuses it.
        if (!out.hold_buffer(obj)) {
            PyErr_Clear();
            throw py::value_error(where(index) + " is a released or unreadable memoryview");
        }
        if (!out.buffer_is_contiguous())
            throw py::value_error(where(index) + " is a non-contiguous memoryview: keys must be C-contiguous buffers");
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

OffsetBatch::OffsetBatch(py::buffer data, py::buffer offsets) : data_view_(data.request()) {
    const py::buffer_info& data_info = data_view_;
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
    count_ = static_cast<size_t>(offsets_info.shape[0] - 1);
    const int64_t data_size = static_cast<int64_t>(data_info.size);
    // Copy, then check the copy: the checked values are the ones used.
    if (wide_) {
        const auto* source = static_cast<const int64_t*>(offsets_info.ptr);
        offsets64_.assign(source, source + count_ + 1);
    } else {
        const auto* source = static_cast<const int32_t*>(offsets_info.ptr);
        offsets32_.assign(source, source + count_ + 1);
    }
    auto offset_at = [&](size_t i) -> int64_t { return wide_ ? offsets64_[i] : offsets32_[i]; };
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
    py::dtype dtype = array.dtype();
    const char kind = dtype.kind();
    if (array.ndim() == 2 && kind == 'u' && dtype.itemsize() == 1) {
        from_byte_rows(array);
        return;
    }
    if (array.ndim() != 1)
        throw py::value_error("key arrays must be 1-D (or 2-D uint8, one binary key per row), got a " +
                              std::to_string(array.ndim()) + "-D array of dtype '" + std::string(py::str(dtype)) +
                              "'");
    if (kind == 'O') {
        from_object_array(array);
        return;
    }
    if (kind == 'V') {
        if (!dtype.attr("names").is_none())
            throw py::type_error("structured dtype '" + std::string(py::str(dtype)) +
                                 "' is not a key type: pass one field, or raw bytes as dtype 'V<n>'");
        owner_ = array;
        base_ = static_cast<const uint8_t*>(array.data());
        count_ = static_cast<size_t>(array.shape(0));
        stride_ = static_cast<ptrdiff_t>(array.strides(0));
        itemsize_ = static_cast<size_t>(array.itemsize());
        kind_ = Kind::RawBytes;
        return;
    }
    if (kind != 'i' && kind != 'u' && kind != 'S' && kind != 'U')
        throw py::type_error("unsupported key array dtype '" + std::string(py::str(dtype)) +
                             "': key arrays must hold integers, bytes (S), raw binary (V), str (U) or objects");
    if (!dtype.attr("isnative").cast<bool>())
        array = array.attr("astype")(dtype.attr("newbyteorder")("="));
    owner_ = array;
    base_ = static_cast<const uint8_t*>(array.data());
    count_ = static_cast<size_t>(array.shape(0));
    stride_ = static_cast<ptrdiff_t>(array.strides(0));
    itemsize_ = static_cast<size_t>(array.itemsize());
    if (kind == 'S') {
        kind_ = Kind::FixedBytes;
        warn_if_binary();
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

// A 2-D uint8 array: row i (all shape[1] bytes, NULs included) is key i.
void KeyBatch::from_byte_rows(py::array array) {
    if (array.strides(1) != 1)
        throw py::value_error("a 2-D uint8 key array needs contiguous rows (use numpy.ascontiguousarray)");
    owner_ = array;
    base_ = static_cast<const uint8_t*>(array.data());
    count_ = static_cast<size_t>(array.shape(0));
    stride_ = static_cast<ptrdiff_t>(array.strides(0));
    itemsize_ = static_cast<size_t>(array.shape(1));
    kind_ = Kind::RawBytes;
}

// NumPy 'S' items lose their trailing NUL bytes (numpy.bytes_ semantics,
// which the key follows so that b"ab" in an S4 array matches the key
// b"ab"). Binary data such as digests ends in NUL one time in 256 and then
// silently becomes another key. An item with a NUL *inside* it is binary
// data for sure, so such an array gets a warning pointing at the lossless
// forms ('V<n>' dtype or 2-D uint8 rows); text never has interior NULs.
void KeyBatch::warn_if_binary() const {
    for (size_t i = 0; i < count_; ++i) {
        const uint8_t* item = base_ + static_cast<ptrdiff_t>(i) * stride_;
        size_t len = itemsize_;
        while (len > 0 && item[len - 1] == 0) --len;
        if (len > 0 && std::memchr(item, 0, len) != nullptr) {
            const std::string message =
                "key at index " + std::to_string(i) +
                " of this 'S' array holds binary data (a NUL byte inside it): NumPy 'S' items drop trailing NUL "
                "bytes, so binary keys ending in NUL would become different keys. Pass fixed-width binary keys "
                "losslessly as array.view('V" + std::to_string(itemsize_) + "') or as a 2-D uint8 array";
            if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) != 0) throw py::error_already_set();
            return;
        }
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
