// Python keys -> core keys. This is the one key-normalisation path of
// docs/DESIGN.md ("Keys: one meaning everywhere"): every filter's scalar and
// batch entry points go through hash_key() or KeyBatch.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <bloomkit/erased_keys.hpp>
#include <bloomkit/hash.hpp>
#include <bloomkit/keys.hpp>
#include <bloomkit/row_keys.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace bloomkit_py {

namespace py = pybind11;
using bloomkit::Hash128;

// A single key's canonical form: a byte span, or an integer whose canonical
// bytes are its 8-byte little-endian encoding. The span points into the
// Python object and is valid while it is alive and the GIL is held; for a
// memoryview it points into a buffer acquired through the buffer protocol
// and held by this object (a released memoryview is refused, and the
// exporter cannot free or resize the memory while the key holds it).
class CanonicalKey {
  public:
    bool is_integer = false;
    uint64_t integer = 0;
    const uint8_t* data = nullptr;
    size_t size = 0;

    CanonicalKey() = default;
    CanonicalKey(CanonicalKey&& other) noexcept { *this = std::move(other); }
    CanonicalKey& operator=(CanonicalKey&& other) noexcept {
        if (this != &other) {
            release();
            is_integer = other.is_integer;
            integer = other.integer;
            data = other.data;
            size = other.size;
            view_ = other.view_;
            holds_view_ = other.holds_view_;
            other.holds_view_ = false;
        }
        return *this;
    }
    CanonicalKey(const CanonicalKey&) = delete;
    CanonicalKey& operator=(const CanonicalKey&) = delete;
    ~CanonicalKey() { release(); }

    // Acquires `obj`'s buffer (C-contiguous, read-only access) and points
    // the key at it; false with a Python error set when it cannot.
    bool hold_buffer(PyObject* obj) {
        if (PyObject_GetBuffer(obj, &view_, PyBUF_FULL_RO) != 0) return false;
        holds_view_ = true;
        data = static_cast<const uint8_t*>(view_.buf);
        size = static_cast<size_t>(view_.len);
        return true;
    }
    bool buffer_is_contiguous() const { return !holds_view_ || PyBuffer_IsContiguous(&view_, 'C'); }

    Hash128 hash(const bloomkit::KeyHashing& hashing) const {
        return is_integer ? hashing.integer(integer) : hashing.bytes(data, size);
    }

  private:
    void release() {
        if (holds_view_) PyBuffer_Release(&view_);
        holds_view_ = false;
    }
    Py_buffer view_{};
    bool holds_view_ = false;
};

// Converts one Python key; throws TypeError / ValueError naming the key's
// type (and `index`, when it is >= 0, for keys inside a batch).
CanonicalKey canonical_key(py::handle key, Py_ssize_t index = -1);

// The digest of one Python key, under a filter's hashing or a bare seed.
Hash128 hash_key(py::handle key, const bloomkit::KeyHashing& hashing);
Hash128 hash_key(py::handle key, uint32_t seed);

// The canonical bytes of one key, for bloomkit.canonical_bytes().
py::bytes canonical_bytes(py::handle key);

// Keys given to Python as an Arrow-style pair of buffers (built by the
// Python layer from pyarrow arrays): `data` bytes and count+1 `offsets`.
//
// The data buffer is acquired through the buffer protocol and held for the
// object's lifetime, so its exporter can neither free nor resize it. The
// offsets are copied while they are checked (monotone, inside the data):
// batches read them later without the GIL, when another thread could have
// rewritten a caller's offsets array; the copy is what was validated.
class OffsetBatch {
  public:
    OffsetBatch(py::buffer data, py::buffer offsets);
    size_t size() const { return count_; }
    template <class F>
    void visit(F&& f) const {
        if (wide_)
            f(bloomkit::OffsetKeys<int64_t>(data_, data_size_, static_cast<const int64_t*>(offsets_), count_));
        else
            f(bloomkit::OffsetKeys<int32_t>(data_, data_size_, static_cast<const int32_t*>(offsets_), count_));
    }

  private:
    // Both Py_buffers are held (exported) for the batch's life, so neither
    // can be resized or freed under it; the offsets are read in place,
    // clamped per key (OffsetKeys), not copied.
    py::buffer_info data_view_;
    py::buffer_info offsets_view_;
    const uint8_t* data_ = nullptr;
    uint64_t data_size_ = 0;
    const void* offsets_ = nullptr;
    size_t count_ = 0;
    bool wide_ = false;
};

// Keys given as Arrow's BinaryView layout (polars and pyarrow string_view
// columns): the 16-byte views and the data buffers they point into. The
// constructor checks every view against the buffers.
class ViewBatch {
  public:
    ViewBatch(py::buffer views, py::list buffers);
    size_t size() const { return count_; }
    bloomkit::ViewKeys keys() const {
        return bloomkit::ViewKeys(views_, count_, pointers_.data(), sizes_.data(), pointers_.size());
    }

  private:
    // Held exports (not just references): a bytearray cannot be resized or
    // freed under a held buffer, so the pointers stay valid (as OffsetBatch).
    py::buffer_info views_view_;
    std::vector<py::buffer_info> data_views_;
    std::vector<const uint8_t*> pointers_;
    std::vector<uint64_t> sizes_;
    const uint8_t* views_ = nullptr;
    size_t count_ = 0;
};

// Several key columns of equal length whose rows are the keys (row_keys.hpp),
// built by the Python layer from a DataFrame's columns. `names` label the
// columns in error messages.
class RowBatch {
  public:
    RowBatch(py::list columns, py::list names);
    const py::list& columns() const { return columns_; }
    std::string name(size_t i) const { return py::str(names_[i]); }

  private:
    py::list columns_;
    py::list names_;
};

// One column given as several batches (the chunks of a pyarrow ChunkedArray,
// a polars Series or an Arrow stream), read in place: a KeyBatch over it
// validates every chunk before any filter changes and hashes the chunks in
// order as one batch of size() keys, so an all-or-nothing call and a key's
// index span the whole column. `chunks` are OffsetBatch / ViewBatch / NumPy
// arrays (not RowBatch or ChunkedBatch).
class ChunkedBatch {
  public:
    explicit ChunkedBatch(py::list chunks);
    const py::list& chunks() const { return chunks_; }
    size_t size() const;

  private:
    py::list chunks_;
};

// A validated batch of keys, ready to be used without the GIL. Built with
// the GIL held for a filter's hashing (its seed, and its key if keyed); every key is checked here, so a batch
// that constructs holds only valid keys and a filter can apply it without
// failing half-way. Arrays and Arrow buffers are read in place (and hashed
// later, without the GIL). Python objects (lists, tuples, object arrays,
// iterables) are validated when the batch is built; up to 2^20 plain keys
// (ASCII str, bytes) are hashed in that same walk and kept as digests, and
// longer batches are hashed a block at a time (BlockDigestKeys) with the
// GIL taken back for each block, so a batch of n objects holds at most
// max(2^20, block) digests, not O(n).
class KeyBatch {
  public:
    KeyBatch(py::handle keys, const bloomkit::KeyHashing& hashing);
    KeyBatch(const KeyBatch&) = delete;
    KeyBatch& operator=(const KeyBatch&) = delete;

    size_t size() const { return count_; }

    // Calls f(key_source) with a core key source; for a keyed filter,
    // sources read in place are wrapped once per batch
    // (KeyHashing::visit_source) and Python objects are hashed keyed. Only
    // an unkeyed 64-bit integer array reaches f as its own type (the
    // two-thread insert hashes it straight into its ring, parallel.hpp);
    // every other source as an ErasedKeys built in keys.cpp, so each
    // filter's batch loops are compiled for two source types, not twenty,
    // and the sources' own hashing loops once, in keys.cpp
    // (bloomkit/erased_keys.hpp, docs/decisions.md "One source build").
    template <class F>
    void visit(F&& f) const {
        using Call = std::remove_reference_t<F>;
        if ((kind_ == Kind::Int64 || kind_ == Kind::UInt64) && !hashing_.keyed()) return f(ints<uint64_t>());
        visit_erased([](void* call, const bloomkit::ErasedKeys& keys) { (*static_cast<Call*>(call))(keys); },
                     const_cast<void*>(static_cast<const void*>(&f)));
    }

  private:
    // visit() of every source but an unkeyed 64-bit integer array:
    // call(context, keys) with the source erased.
    void visit_erased(void (*call)(void*, const bloomkit::ErasedKeys&), void* context) const;

    // Calls f(key_source) with every source as its own type (keys.cpp
    // only): what visit_erased erases, and what a RowKeys column keeps
    // (ErasedKeys only views a source that lives for the call).
    template <class F>
    void visit_concrete(F&& f) const {
        auto pass = [&](auto keys) { hashing_.visit_source(std::move(keys), f); };
        switch (kind_) {
            case Kind::Int8: return pass(ints<int8_t>());
            case Kind::Int16: return pass(ints<int16_t>());
            case Kind::Int32: return pass(ints<int32_t>());
            // An int64's key is its 8 bytes (two's complement), as a uint64's:
            // one source type for both.
            case Kind::Int64: return pass(ints<uint64_t>());
            case Kind::UInt8: return pass(ints<uint8_t>());
            case Kind::UInt16: return pass(ints<uint16_t>());
            case Kind::UInt32: return pass(ints<uint32_t>());
            case Kind::UInt64: return pass(ints<uint64_t>());
            case Kind::FixedBytes: return pass(bloomkit::FixedWidthKeys(base_, count_, stride_, itemsize_));
            case Kind::RawBytes:
                return pass(bloomkit::FixedWidthKeys(base_, count_, stride_, itemsize_, /*strip_trailing_nul=*/false));
            case Kind::FixedUtf32: return pass(bloomkit::Utf32Keys(base_, count_, stride_, itemsize_ / 4));
            case Kind::Float32: return pass(bloomkit::FloatKeys<float>(base_, count_, stride_));
            case Kind::Float64: return pass(bloomkit::FloatKeys<double>(base_, count_, stride_));
            case Kind::Nanoseconds: return pass(bloomkit::NanosecondKeys(base_, count_, stride_, nanos_per_unit_));
            case Kind::Digests: return f(bloomkit::DigestKeys(digests_, hashing_.seed()));
            case Kind::Objects: return f(object_keys());
            case Kind::Offsets: return offsets_->visit(pass);
            case Kind::Rows: return f(row_keys());
            case Kind::Views: return pass(views_->keys());
            case Kind::Chunks: return f(chunk_keys());
        }
    }

    enum class Kind {
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Float32,
        Float64,
        Nanoseconds,
        FixedBytes,
        RawBytes,
        FixedUtf32,
        Digests,
        Objects,
        Offsets,
        Views,
        Rows,
        Chunks
    };

    template <class Int>
    bloomkit::IntegerKeys<Int> ints() const {
        return bloomkit::IntegerKeys<Int>(base_, count_, stride_);
    }

    void from_array(py::array array);
    void from_byte_rows(py::array array);
    void warn_if_binary() const;
    void from_datetime_array(py::array array);
    void from_objects(py::handle sequence);
    void from_object_array(py::array array);
    void from_rows(const RowBatch& rows);
    void from_chunks(const ChunkedBatch& chunked);
    // Validates objects [0, count) read by item(i); keeps them for block hashing.
    template <class Item>
    void validate_objects(Py_ssize_t count, Item&& item);
    PyObject* object_at(size_t i) const;
    // Index of the first object of [0, count) that is not a plain key
    // (exact ASCII str or bytes, read in place), or count; with `digests`,
    // also writes the digest of every plain key before it.
    size_t first_non_plain(size_t count, Hash128* digests) const;
    void hash_objects(size_t first, size_t count, bloomkit::Hash128* out) const;
    bloomkit::BlockDigestKeys object_keys() const;
    bloomkit::RowKeys row_keys() const;
    bloomkit::BlockDigestKeys chunk_keys() const;

    bloomkit::KeyHashing hashing_;
    Kind kind_ = Kind::Digests;
    size_t count_ = 0;
    // Array-backed batches.
    py::object owner_;  // keeps the array / sequence / buffers alive
    const uint8_t* base_ = nullptr;
    ptrdiff_t stride_ = 0;
    size_t itemsize_ = 0;
    int64_t nanos_per_unit_ = 1;  // datetime64 / timedelta64
    // Object batches: the list, tuple or object array (owner_) walked again
    // block by block; or, when some key needs Python code to convert (a
    // NumPy scalar's __index__, a mutable buffer), one digest per key.
    bool object_array_ = false;
    std::vector<Hash128> digests_;
    mutable std::vector<uint8_t> plain_;  // hash_objects(): 1 = a plain key, hashed in place
    const OffsetBatch* offsets_ = nullptr;
    const ViewBatch* views_ = nullptr;
    std::vector<std::unique_ptr<KeyBatch>> columns_;  // Rows; Chunks: one per chunk
    std::vector<size_t> chunk_starts_;                // Chunks: index of each chunk's first key, then count_
};

}  // namespace bloomkit_py
