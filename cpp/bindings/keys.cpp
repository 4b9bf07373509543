#include "keys.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "gil_split.hpp"
#include "int_key.hpp"

namespace bloomkit_py {

namespace {

const char* const kAllowedKeys = "keys must be str, bytes, bytearray, memoryview, int or float";

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
    const py::object& integer =
        storage.call_once_and_store_result([] { return py::module_::import("numpy").attr("integer"); }).get_stored();
    const int result = PyObject_IsInstance(obj.ptr(), integer.ptr());
    if (result < 0) throw py::error_already_set();
    return result == 1;
}

// numpy.floating (float32, float16, ...; numpy.float64 is a float subclass).
bool is_numpy_floating(py::handle obj) {
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;
    const py::object& floating =
        storage.call_once_and_store_result([] { return py::module_::import("numpy").attr("floating"); }).get_stored();
    const int result = PyObject_IsInstance(obj.ptr(), floating.ptr());
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
    throw py::value_error(where(index) +
                          " is an int outside [-2**63, 2**64): " + std::string(py::str(py::repr(obj))).substr(0, 60));
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
    if (PyFloat_Check(obj)) {
        out.is_integer = true;
        out.integer = bloomkit::canonical_float(PyFloat_AS_DOUBLE(obj));
        return out;
    }
    if (is_numpy_floating(key)) {
        const double value = PyFloat_AsDouble(obj);
        if (value == -1.0 && PyErr_Occurred()) throw py::error_already_set();
        out.is_integer = true;
        out.integer = bloomkit::canonical_float(value);
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

// The canonical bytes of a key that can be read in place with no Python
// call: an exact str in compact ASCII form (its UTF-8 is its data, as
// PyUnicode_AsUTF8AndSize would return) or an exact bytes object. Only
// reads immutable object memory, so the helper thread of split_under_gil
// may run it. Other keys (non-ASCII str, subclasses, numbers, buffers)
// return false and go through canonical_key().
inline bool plain_key_bytes(PyObject* obj, const uint8_t*& data, size_t& size) {
    if (PyUnicode_CheckExact(obj)) {
        if (!PyUnicode_IS_COMPACT_ASCII(obj)) return false;
        data = static_cast<const uint8_t*>(PyUnicode_DATA(obj));
        size = static_cast<size_t>(PyUnicode_GET_LENGTH(obj));
        return true;
    }
    if (PyBytes_CheckExact(obj)) {
        data = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(obj));
        size = static_cast<size_t>(PyBytes_GET_SIZE(obj));
        return true;
    }
    return false;
}

// Every key the fast paths of hash_key() do not take. Out of line so that
// its CanonicalKey (a Py_buffer, ~0x98 bytes of stack frame) is not set up
// on every per-key call.
[[gnu::noinline]] Hash128 hash_key_general(py::handle key, const bloomkit::KeyHashing& hashing) {
    return canonical_key(key).hash(hashing);
}

Hash128 hash_key(py::handle key, const bloomkit::KeyHashing& hashing) {
    // The single-key path (add, in, ...): the two commonest keys skip the
    // CanonicalKey the general path builds (a Py_buffer is zeroed, moved and
    // released per key). An exact int in [-2**63, 2**64) hashes its 8
    // little-endian bytes; a compact ASCII str or exact bytes is read in
    // place (plain_key_bytes, shared with the list batches). Same bytes,
    // same digest as canonical_key() (tests/test_hash.py), keyed or not.
    PyObject* obj = key.ptr();
    if (PyLong_CheckExact(obj)) {
        uint64_t value;
        bool error = false;
        if (exact_int_value(obj, value, error)) return hashing.integer(value);
        if (error) throw py::error_already_set();
        // Other values: the general path decides (and raises out of range).
    } else {
        const uint8_t* data;
        size_t size;
        if (plain_key_bytes(obj, data, size)) return hashing.bytes(data, size);
    }
    return hash_key_general(key, hashing);
}
Hash128 hash_key(py::handle key, uint32_t seed) { return hash_key(key, bloomkit::KeyHashing(seed)); }

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

OffsetBatch::OffsetBatch(py::buffer data, py::buffer offsets)
    : data_view_(data.request()), offsets_view_(offsets.request()) {
    const py::buffer_info& data_info = data_view_;
    const py::buffer_info& offsets_info = offsets_view_;
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
    data_size_ = static_cast<uint64_t>(data_size);
    offsets_ = offsets_info.ptr;
    // Checked in place, for the error a malformed batch deserves; what is
    // read later is clamped again per key (OffsetKeys), so offsets changed
    // after this check can never make a read leave the data.
    auto offset_at = [&](size_t i) -> int64_t {
        return wide_ ? bloomkit::platform::load_once(static_cast<const int64_t*>(offsets_) + i)
                     : bloomkit::platform::load_once(static_cast<const int32_t*>(offsets_) + i);
    };
    int64_t previous = offset_at(0);
    if (previous < 0 || previous > data_size) throw py::value_error("OffsetBatch offset 0 is outside the data");
    for (size_t i = 1; i <= count_; ++i) {
        const int64_t current = offset_at(i);
        if (current < previous || current > data_size)
            throw py::value_error("OffsetBatch offsets are not monotone inside the data at index " + std::to_string(i));
        previous = current;
    }
}

// ------------------------------------------------------------------ ViewBatch

ViewBatch::ViewBatch(py::buffer views, py::list buffers) : views_view_(views.request()) {
    const py::buffer_info& info = views_view_;
    if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1)
        throw py::value_error("ViewBatch views must be a contiguous byte buffer");
    if (info.size % static_cast<py::ssize_t>(bloomkit::ViewKeys::kViewBytes) != 0)
        throw py::value_error("ViewBatch views must be a multiple of 16 bytes");
    views_ = static_cast<const uint8_t*>(info.ptr);
    count_ = static_cast<size_t>(info.size) / bloomkit::ViewKeys::kViewBytes;
    for (py::handle item : buffers) {
        data_views_.push_back(py::reinterpret_borrow<py::buffer>(item).request());
        const py::buffer_info& data = data_views_.back();
        if (data.ndim != 1 || data.itemsize != 1 || data.strides[0] != 1)
            throw py::value_error("ViewBatch data buffers must be contiguous byte buffers");
        pointers_.push_back(static_cast<const uint8_t*>(data.ptr));
        sizes_.push_back(static_cast<uint64_t>(data.size));
    }
    const size_t bad = keys().first_invalid();
    if (bad != count_)
        throw py::value_error("ViewBatch view " + std::to_string(bad) + " points outside its data buffers");
}

// ------------------------------------------------------------------- KeyBatch

KeyBatch::KeyBatch(py::handle keys, const bloomkit::KeyHashing& hashing) : hashing_(hashing) {
    if (py::isinstance<OffsetBatch>(keys)) {
        owner_ = py::reinterpret_borrow<py::object>(keys);
        offsets_ = keys.cast<const OffsetBatch*>();
        count_ = offsets_->size();
        kind_ = Kind::Offsets;
        return;
    }
    if (py::isinstance<ViewBatch>(keys)) {
        owner_ = py::reinterpret_borrow<py::object>(keys);
        views_ = keys.cast<const ViewBatch*>();
        count_ = views_->size();
        kind_ = Kind::Views;
        return;
    }
    if (py::isinstance<RowBatch>(keys)) {
        owner_ = py::reinterpret_borrow<py::object>(keys);
        from_rows(keys.cast<const RowBatch&>());
        return;
    }
    if (py::isinstance<ChunkedBatch>(keys)) {
        owner_ = py::reinterpret_borrow<py::object>(keys);
        from_chunks(keys.cast<const ChunkedBatch&>());
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
                              std::to_string(array.ndim()) + "-D array of dtype '" + std::string(py::str(dtype)) + "'");
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
    if (kind == 'M' || kind == 'm') {
        from_datetime_array(array);
        return;
    }
    if (kind == 'b')
        throw py::type_error(
            "unsupported key array dtype 'bool': booleans are not keys (use .astype('uint8') "
            "if True/False should be the keys 1/0)");
    if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'S' && kind != 'U')
        throw py::type_error("unsupported key array dtype '" + std::string(py::str(dtype)) +
                             "': key arrays must hold integers, floats, datetime64/timedelta64, bytes (S), "
                             "raw binary (V), str (U) or objects");
    if (kind == 'f' && dtype.itemsize() != 4 && dtype.itemsize() != 8)
        throw py::type_error("unsupported float key width of " + std::to_string(dtype.itemsize()) +
                             " bytes: convert with .astype('float64')");
    if (!dtype.attr("isnative").cast<bool>()) array = array.attr("astype")(dtype.attr("newbyteorder")("="));
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
    if (kind == 'f') {
        kind_ = itemsize_ == 4 ? Kind::Float32 : Kind::Float64;
        return;
    }
    const bool is_signed = kind == 'i';
    switch (itemsize_) {
        case 1: kind_ = is_signed ? Kind::Int8 : Kind::UInt8; break;
        case 2: kind_ = is_signed ? Kind::Int16 : Kind::UInt16; break;
        case 4: kind_ = is_signed ? Kind::Int32 : Kind::UInt32; break;
        case 8: kind_ = is_signed ? Kind::Int64 : Kind::UInt64; break;
        default: throw py::type_error("unsupported integer key width of " + std::to_string(itemsize_) + " bytes");
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
                "losslessly as array.view('V" +
                std::to_string(itemsize_) + "') or as a 2-D uint8 array";
            if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) != 0) throw py::error_already_set();
            return;
        }
    }
}

void KeyBatch::from_datetime_array(py::array array) {
    // Units of NumPy's datetime64/timedelta64 in nanoseconds. Calendar units
    // (Y, M) are converted by the Python layer first (bloomkit._batch);
    // units finer than ns cannot be represented as whole nanoseconds.
    static const std::pair<const char*, int64_t> kUnits[] = {
        {"W", 604800000000000LL}, {"D", 86400000000000LL}, {"h", 3600000000000LL}, {"m", 60000000000LL},
        {"s", 1000000000LL},      {"ms", 1000000LL},       {"us", 1000LL},         {"ns", 1LL}};
    py::dtype dtype = array.dtype();
    const py::tuple unit_info = py::module_::import("numpy").attr("datetime_data")(dtype);
    const std::string unit = py::str(unit_info[0]);
    const int64_t multiple = unit_info[1].cast<int64_t>();
    int64_t nanos = 0;
    for (const auto& entry : kUnits)
        if (unit == entry.first) nanos = entry.second;
    if (nanos == 0 || multiple <= 0 || multiple > INT64_MAX / nanos)
        throw py::type_error("unsupported key array dtype '" + std::string(py::str(dtype)) +
                             "': datetime64/timedelta64 keys need a unit from weeks to nanoseconds "
                             "(convert with .astype('datetime64[ns]'))");
    if (!dtype.attr("isnative").cast<bool>()) array = array.attr("astype")(dtype.attr("newbyteorder")("="));
    owner_ = array;
    base_ = static_cast<const uint8_t*>(array.data());
    count_ = static_cast<size_t>(array.shape(0));
    stride_ = static_cast<ptrdiff_t>(array.strides(0));
    itemsize_ = 8;
    nanos_per_unit_ = nanos * multiple;
    kind_ = Kind::Nanoseconds;
    const size_t bad = bloomkit::NanosecondKeys(base_, count_, stride_, nanos_per_unit_).first_out_of_range();
    if (bad != count_)
        throw py::value_error("key at index " + std::to_string(bad) +
                              " is a datetime64/timedelta64 outside the range of int64 nanoseconds "
                              "(years 1678-2261 for datetimes)");
}

namespace {

// Keys whose conversion runs no Python code and whose bytes cannot change
// while the batch holds a reference: such objects can be read again, block
// by block, after validation. (A NumPy scalar's __index__ may be Python
// code; a bytearray or memoryview may be resized or released meanwhile.)
bool rereadable(PyObject* obj) {
    return PyUnicode_Check(obj) || PyBytes_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj);
}

// Warms the cache lines of the object `ahead` places further on: the header
// (type, length) and the first data bytes (a compact str's data follows it).
inline void prefetch_object(PyObject* obj) {
    bloomkit::platform::prefetch_read(obj);
    bloomkit::platform::prefetch_read(reinterpret_cast<const char*>(obj) + 64);
}

constexpr size_t kObjectPrefetch = 8;

// Digests of a list of objects held per block: 2 MiB of digests, so a
// block split over two threads (gil_split.hpp) pays one thread start per
// ~65k keys.
constexpr size_t kObjectBlock = 131072;

// A batch of at most this many plain keys (16 MiB of digests) is hashed in
// the walk that validates it, and the digests are kept: walking a list of
// fresh str objects is most of a batch's cost (each object is a cache
// miss), and a second walk to hash them block by block cost ~5 ns/key of
// the ~26 at 1e6 URLs (docs/decisions.md, "str batches on two cores").
// Longer batches keep O(block) digests and walk twice.
constexpr size_t kHashWhileValidating = size_t(1) << 20;

}  // namespace

PyObject* KeyBatch::object_at(size_t i) const {
    if (object_array_) {
        PyObject* raw;
        std::memcpy(&raw, base_ + static_cast<ptrdiff_t>(i) * stride_, sizeof raw);
        return raw != nullptr ? raw : Py_None;
    }
    PyObject* items = owner_.ptr();
    return PyList_Check(items) ? PyList_GET_ITEM(items, i) : PyTuple_GET_ITEM(items, i);
}

size_t KeyBatch::first_non_plain(size_t count, Hash128* digests) const {
    // Plain keys are valid and rereadable as they are; only the others need
    // canonical_key(). The scan runs no Python code, so a list cannot change.
    size_t first[2] = {count, count};
    split_under_gil(count, [&](size_t begin, size_t end, int half) {
        for (size_t i = begin; i < end; ++i) {
            if (i + kObjectPrefetch < end) prefetch_object(object_at(i + kObjectPrefetch));
            const uint8_t* data;
            size_t size;
            if (!plain_key_bytes(object_at(i), data, size)) {
                first[half] = i;
                return;
            }
            if (digests) digests[i] = hashing_.bytes(data, size);
        }
    });
    return std::min(first[0], first[1]);
}

template <class Item>
void KeyBatch::validate_objects(Py_ssize_t count, Item&& item) {
    size_t first_other;
    if (static_cast<size_t>(count) <= kHashWhileValidating) {
        digests_.resize(static_cast<size_t>(count));
        first_other = first_non_plain(static_cast<size_t>(count), digests_.data());
        if (first_other == static_cast<size_t>(count)) {
            count_ = first_other;
            kind_ = Kind::Digests;
            return;
        }
        std::vector<Hash128>().swap(digests_);
    } else {
        first_other = first_non_plain(static_cast<size_t>(count), nullptr);
    }
    bool deferred = true;
    for (Py_ssize_t i = static_cast<Py_ssize_t>(first_other); i < count; ++i) {
        if (static_cast<size_t>(i) + kObjectPrefetch < static_cast<size_t>(count))
            prefetch_object(item(i + static_cast<Py_ssize_t>(kObjectPrefetch)));
        py::object key = py::reinterpret_borrow<py::object>(item(i));
        canonical_key(key, i);
        deferred = deferred && rereadable(key.ptr());
    }
    count_ = static_cast<size_t>(count);
    if (deferred) {
        kind_ = Kind::Objects;
        return;
    }
    // Hash now, while nothing else can run: the old one-digest-per-key path.
    digests_.resize(count_);
    hash_objects(0, count_, digests_.data());
    kind_ = Kind::Digests;
}

void KeyBatch::hash_objects(size_t first, size_t count, bloomkit::Hash128* out) const {
    // Called with the GIL held. The objects were validated when the batch
    // was built; a list changed since by another thread is re-checked here
    // (its length, and each key again by canonical_key).
    const bool is_list = !object_array_ && PyList_Check(owner_.ptr());
    auto check_size = [&](size_t end) {
        if (is_list && end > static_cast<size_t>(PyList_GET_SIZE(owner_.ptr())))
            throw py::value_error("the list of keys changed size while it was being inserted");
    };
    check_size(first + count);
    // Plain keys are hashed in place, on two threads for a long block
    // (gil_split.hpp); the others are marked and hashed afterwards, in
    // order, by canonical_key() on this thread.
    plain_.assign(count, 1);
    size_t others[2] = {0, 0};
    split_under_gil(count, [&](size_t begin, size_t end, int half) {
        for (size_t j = begin; j < end; ++j) {
            if (j + kObjectPrefetch < end) prefetch_object(object_at(first + j + kObjectPrefetch));
            const uint8_t* data;
            size_t size;
            if (plain_key_bytes(object_at(first + j), data, size)) {
                out[j] = hashing_.bytes(data, size);
            } else {
                plain_[j] = 0;
                ++others[half];
            }
        }
    });
    if (others[0] + others[1] == 0) return;
    for (size_t j = 0; j < count; ++j) {
        if (plain_[j]) continue;
        check_size(first + j + 1);  // canonical_key() of an earlier key may have run Python code
        py::object key = py::reinterpret_borrow<py::object>(object_at(first + j));
        out[j] = canonical_key(key, static_cast<Py_ssize_t>(first + j)).hash(hashing_);
    }
}

bloomkit::BlockDigestKeys KeyBatch::object_keys() const {
    // The core calls this from a section running without the GIL (holding
    // the filter's lock); each block takes the GIL back to read its objects.
    // No thread waits for that lock while holding the GIL (guard.hpp), so
    // this cannot deadlock. Python errors become C++ exceptions that carry
    // only a message, safe to unwind without the GIL.
    return bloomkit::BlockDigestKeys(
        count_,
        [this](size_t first, size_t count, uint32_t, Hash128* out) {
            py::gil_scoped_acquire gil;
            try {
                hash_objects(first, count, out);
            } catch (py::error_already_set& e) {
                const bool type_error = e.matches(PyExc_TypeError);
                const std::string message = e.what();
                if (type_error) throw py::type_error(message);
                throw py::value_error(message);
            }
        },
        kObjectBlock);
}

void KeyBatch::from_objects(py::handle sequence) {
    // Lists and tuples are walked in place; any other iterable is first
    // collected into a tuple. Each item is held by a strong reference while
    // it is converted (a conversion may run Python code, e.g. __index__,
    // which could shrink a list), and the size is re-read every step.
    py::object items;
#if defined(Py_GIL_DISABLED)
    // Free-threaded CPython: another thread may change the list at any
    // moment, not only while Python code runs here, and a borrowed item
    // pointer could then be freed under the batch. A tuple copy (taken
    // under the list's own lock, PyList_AsTuple) is the batch's keys: the
    // list as it was at the call.
    if (PyList_Check(sequence.ptr())) {
        items = py::reinterpret_steal<py::object>(PyList_AsTuple(sequence.ptr()));
        if (!items) throw py::error_already_set();
    } else if (PyTuple_Check(sequence.ptr())) {
#else
    if (PyList_Check(sequence.ptr()) || PyTuple_Check(sequence.ptr())) {
#endif
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
    owner_ = items;
    object_array_ = false;
    PyObject* raw = items.ptr();
    const bool is_list = PyList_Check(raw);
    // A list can shrink during validation (a key's __index__ may run
    // Python code): validate up to its length at the start, re-read below.
    const Py_ssize_t n = is_list ? PyList_GET_SIZE(raw) : PyTuple_GET_SIZE(raw);
    auto item = [&](Py_ssize_t i) -> PyObject* {
        if (is_list && i >= PyList_GET_SIZE(raw))
            throw py::value_error("the list of keys changed size while it was read");
        return is_list ? PyList_GET_ITEM(raw, i) : PyTuple_GET_ITEM(raw, i);
    };
    validate_objects(n, item);
}

void KeyBatch::from_object_array(py::array array) {
    // NumPy object arrays hold PyObject pointers (NULL reads as None); the
    // array is kept alive by owner_ for the whole batch.
#if defined(Py_GIL_DISABLED)
    // Free-threaded CPython: an item assigned by another thread meanwhile
    // would free the object read here; its keys are a tuple copy instead
    // (as a list's, from_objects).
    py::object copy = py::reinterpret_steal<py::object>(PySequence_Tuple(array.ptr()));
    if (!copy) throw py::error_already_set();
    return from_objects(copy);
#endif
    owner_ = array;
    object_array_ = true;
    base_ = static_cast<const uint8_t*>(array.data());
    stride_ = static_cast<ptrdiff_t>(array.strides(0));
    validate_objects(array.shape(0), [&](Py_ssize_t i) { return object_at(static_cast<size_t>(i)); });
}

// ------------------------------------------------------------------- RowBatch

RowBatch::RowBatch(py::list columns, py::list names) : columns_(std::move(columns)), names_(std::move(names)) {
    if (columns_.size() == 0) throw py::value_error("a RowBatch needs at least one column");
    if (names_.size() != columns_.size()) throw py::value_error("RowBatch needs one name per column");
}

void KeyBatch::from_rows(const RowBatch& rows) {
    const py::list& columns = rows.columns();
    for (size_t c = 0; c < columns.size(); ++c) {
        const std::string where = "column " + rows.name(c) + ": ";
        if (py::isinstance<RowBatch>(columns[c])) throw py::type_error(where + "a RowBatch cannot be a column");
        try {
            columns_.push_back(std::unique_ptr<KeyBatch>(new KeyBatch(columns[c], hashing_)));
        } catch (py::error_already_set& e) {
            const bool type_error = e.matches(PyExc_TypeError);
            const std::string message = where + e.what();
            if (type_error) throw py::type_error(message);
            throw py::value_error(message);
        } catch (const py::type_error& e) {
            throw py::type_error(where + e.what());
        } catch (const py::value_error& e) {
            throw py::value_error(where + e.what());
        }
        if (columns_.back()->size() != columns_.front()->size())
            throw py::value_error(where + "has " + std::to_string(columns_.back()->size()) + " rows, column " +
                                  rows.name(0) + " has " + std::to_string(columns_.front()->size()));
    }
    count_ = columns_.front()->size();
    kind_ = Kind::Rows;
}

void KeyBatch::visit_erased(void (*call)(void*, const bloomkit::ErasedKeys&), void* context) const {
    visit_concrete([&](const auto& source) { call(context, bloomkit::ErasedKeys(source)); });
}

bloomkit::RowKeys KeyBatch::row_keys() const {
    std::vector<std::unique_ptr<bloomkit::ColumnDigests>> sources;
    sources.reserve(columns_.size());
    for (const auto& column : columns_)
        column->visit_concrete([&](const auto& keys) {
            // from_rows() refuses a RowBatch as a column; RowKeys is move-only.
            if constexpr (!std::is_same<std::decay_t<decltype(keys)>, bloomkit::RowKeys>::value)
                sources.push_back(bloomkit::make_column(keys));
        });
    return bloomkit::RowKeys(std::move(sources), &hashing_);
}

// --------------------------------------------------------------- ChunkedBatch

ChunkedBatch::ChunkedBatch(py::list chunks) : chunks_(std::move(chunks)) {
    for (const auto chunk : chunks_)
        if (py::isinstance<RowBatch>(chunk) || py::isinstance<ChunkedBatch>(chunk))
            throw py::type_error("a ChunkedBatch chunk must be an OffsetBatch, a ViewBatch or an array");
}

size_t ChunkedBatch::size() const {
    size_t total = 0;
    for (const auto chunk : chunks_) total += py::len(chunk);
    return total;
}

namespace {

// A chunk's error with its key index moved from the chunk to the whole
// column ("key at index 3" of a chunk starting at row 1000 is key 1003).
std::string in_column(const std::string& message, size_t start) {
    static const std::string kPrefix = "key at index ";
    if (message.compare(0, kPrefix.size(), kPrefix) != 0) return message;
    size_t end = kPrefix.size();
    while (end < message.size() && message[end] >= '0' && message[end] <= '9') ++end;
    if (end == kPrefix.size()) return message;
    const size_t index = std::stoull(message.substr(kPrefix.size(), end - kPrefix.size()));
    return kPrefix + std::to_string(index + start) + message.substr(end);
}

}  // namespace

void KeyBatch::from_chunks(const ChunkedBatch& chunked) {
    const py::list& chunks = chunked.chunks();
    chunk_starts_.reserve(chunks.size() + 1);
    size_t start = 0;
    for (const auto chunk : chunks) {
        if (py::isinstance<RowBatch>(chunk) || py::isinstance<ChunkedBatch>(chunk))
            throw py::type_error("a ChunkedBatch chunk must be an OffsetBatch, a ViewBatch or an array");
        // Every chunk is validated here, before the batch is used: a bad key
        // in any chunk leaves the filter as it was.
        try {
            columns_.push_back(std::unique_ptr<KeyBatch>(new KeyBatch(chunk, hashing_)));
        } catch (py::error_already_set& e) {
            const bool type_error = e.matches(PyExc_TypeError);
            const std::string message = in_column(e.what(), start);
            if (type_error) throw py::type_error(message);
            throw py::value_error(message);
        } catch (const py::type_error& e) {
            throw py::type_error(in_column(e.what(), start));
        } catch (const py::value_error& e) {
            throw py::value_error(in_column(e.what(), start));
        }
        chunk_starts_.push_back(start);
        start += columns_.back()->size();
    }
    chunk_starts_.push_back(start);
    count_ = start;
    kind_ = Kind::Chunks;
}

bloomkit::BlockDigestKeys KeyBatch::chunk_keys() const {
    // One source over every chunk: each block of digests is filled chunk by
    // chunk through the chunk's own source (its fast walk, and its keyed
    // hashing: visit() wraps it), so the chunks are read in place, in order,
    // with one block of digests as working memory. A source of this kind
    // stays on the calling thread (parallel.hpp, reads_concurrently).
    return bloomkit::BlockDigestKeys(count_, [this](size_t first, size_t count, uint32_t seed, Hash128* out) {
        size_t c = static_cast<size_t>(std::upper_bound(chunk_starts_.begin(), chunk_starts_.end(), first) -
                                       chunk_starts_.begin()) -
                   1;
        while (count > 0) {
            const size_t local = first - chunk_starts_[c];
            const size_t n = std::min(count, chunk_starts_[c + 1] - first);
            columns_[c]->visit([&](const auto& keys) {
                if constexpr (!std::is_same<std::decay_t<decltype(keys)>, bloomkit::RowKeys>::value)
                    bloomkit::hash_range(keys, local, n, seed, out);
            });
            first += n;
            count -= n;
            out += n;
            ++c;
        }
    });
}

}  // namespace bloomkit_py
