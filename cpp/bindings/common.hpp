// The Python surface every filter type shares, bound once for any core type.
//
// A core type Core provides: seed(), add(Hash128) -> bool,
// contains(Hash128) -> bool, add_many(keys, uint8_t*), contains_many(keys,
// uint8_t*), clear(), nbytes(), serialize(), static deserialize(data, len)
// and operator==. The Python classes in python/bloomkit subclass the class
// bound here, so single-key calls reach C++ with no Python frame in between.
#pragma once

#include <bloomkit/bloom.hpp>
#include <bloomkit/format.hpp>
#include <bloomkit/frame_reader.hpp>
#include <bloomkit/parallel.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#if defined(_WIN32)
#include <io.h>  // _write
#else
#include <unistd.h>  // write
#endif

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fast_methods.hpp"
#include "gil_split.hpp"
#include "guard.hpp"
#include "keys.hpp"

namespace bloomkit_py {

namespace py = pybind11;

// A read-only contiguous view of any bytes-like object, released on scope exit.
class ByteBuffer {
  public:
    explicit ByteBuffer(py::handle obj) {
        if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            throw py::type_error("expected a bytes-like object, got '" +
                                 std::string(py::str(py::type::handle_of(obj).attr("__qualname__"))) + "'");
        }
    }
    ~ByteBuffer() { PyBuffer_Release(&view_); }
    ByteBuffer(const ByteBuffer&) = delete;
    ByteBuffer& operator=(const ByteBuffer&) = delete;
    const uint8_t* data() const { return static_cast<const uint8_t*>(view_.buf); }
    size_t size() const { return static_cast<size_t>(view_.len); }

  private:
    Py_buffer view_{};
};

inline py::array_t<bool> new_bool_array(size_t count) { return py::array_t<bool>(static_cast<py::ssize_t>(count)); }

inline uint8_t* bool_data(py::array_t<bool>& array) { return reinterpret_cast<uint8_t*>(array.mutable_data()); }

// (file, row group / stripe) pairs, as a lake-file walk finds them, as an
// (n, 2) uint64 array.
inline py::array_t<uint64_t> pairs_array(const std::vector<std::pair<uint64_t, uint64_t>>& pairs) {
    py::array_t<uint64_t> out({static_cast<py::ssize_t>(pairs.size()), static_cast<py::ssize_t>(2)});
    uint64_t* data = out.mutable_data();
    for (size_t i = 0; i < pairs.size(); ++i) {
        data[2 * i] = pairs[i].first;
        data[2 * i + 1] = pairs[i].second;
    }
    return out;
}

inline py::bytes to_py_bytes(const std::vector<uint8_t>& data) {
    return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
}

// A keyed filter used without its key, with the wrong key, or an unkeyed
// one given a key (bloomkit.SecretKeyError, a ValueError).
class SecretKeyError : public std::invalid_argument {
  public:
    explicit SecretKeyError(const std::string& what) : std::invalid_argument(what) {}
};

// The 128-bit master key the Python layer derives from secret_key
// (bloomkit/_keyed.py), or none.
inline std::optional<bloomkit::SipKey> master_key(py::handle key) {
    if (key.is_none()) return std::nullopt;
    ByteBuffer buffer(key);
    if (buffer.size() != 16)
        throw py::value_error("the derived key must be 16 bytes, got " + std::to_string(buffer.size()));
    return bloomkit::SipKey::from_bytes(buffer.data());
}

// Checks a loaded frame's key check against the caller's key and makes
// `filter` keyed with it.
template <class G>
void apply_frame_key(G& filter, const bloomkit::FrameInfo& frame, const std::optional<bloomkit::SipKey>& key) {
    if (frame.keyed && !key)
        throw SecretKeyError("this filter was built with a secret_key; pass the same secret_key to load it");
    if (!frame.keyed && key) throw SecretKeyError("this filter was built without a secret_key; load it without one");
    if (!frame.keyed) return;
    const bloomkit::Hash128 expected = bloomkit::KeyHashing::key_check(*key);
    if (expected.h1 != frame.key_check.h1 || expected.h2 != frame.key_check.h2)
        throw SecretKeyError("wrong secret_key: it does not match the key this filter was built with");
    filter.set_secret(*key);
}

// The filter whose frame `source` holds, read without the GIL straight
// into its own storage (bloomkit/frame_reader.hpp), then keyed with `key`
// as its frame requires. The one load path of every type, from bytes or
// from a file.
template <class Core>
Guarded<Core>* read_guarded(bloomkit::ByteSource& source, py::handle key,
                            bloomkit::Checksum checksum = bloomkit::Checksum::Verify) {
    const std::optional<bloomkit::SipKey> master = master_key(key);
    bloomkit::FrameInfo info;
    std::unique_ptr<Guarded<Core>> filter(AccessGuard::without_gil(
        [&] { return new Guarded<Core>(bloomkit::read_frame<Core>(source, &info, checksum)); }));
    apply_frame_key(*filter, info, master);
    return filter.release();
}

// Keyed filters combine only with filters of the same key (compared by key
// check, which identifies the key without revealing it).
inline void check_same_key(const bloomkit::KeyHashing& a, const bloomkit::KeyHashing& b, const char* operation) {
    if (a.keyed() != b.keyed())
        throw SecretKeyError(std::string(operation) + " needs both filters keyed with the same secret_key, or neither");
    if (a.keyed()) {
        const bloomkit::Hash128 x = a.key_check(), y = b.key_check();
        if (x.h1 != y.h1 || x.h2 != y.h2)
            throw SecretKeyError(std::string(operation) + " needs filters with the same secret_key");
    }
}

// Whether two filters hash keys alike (equality: a keyed and an unkeyed
// filter, or two keys, are never equal).
inline bool same_hashing(const bloomkit::KeyHashing& a, const bloomkit::KeyHashing& b) {
    if (a.keyed() != b.keyed()) return false;
    if (!a.keyed()) return true;
    const bloomkit::Hash128 x = a.key_check(), y = b.key_check();
    return x.h1 == y.h1 && x.h2 == y.h2;
}

// Serializes `core` into `sink` as a keyed frame when `hashing` is keyed.
template <class Core>
void serialize_keyed(const Core& core, const bloomkit::KeyHashing& hashing, bloomkit::FrameSink& sink) {
    const bloomkit::Hash128 check = hashing.keyed() ? hashing.key_check() : bloomkit::Hash128{0, 0};
    sink.key_check = hashing.keyed() ? &check : nullptr;
    core.serialize_to(sink);
    sink.key_check = nullptr;
}

// Writes into a preallocated buffer of known size; refuses to overflow it.
class SpanSink : public bloomkit::FrameSink {
  public:
    SpanSink(uint8_t* data, size_t size) : data_(data), size_(size) {}
    void write(const uint8_t* data, size_t len) override {
        if (overflow_ || len > size_ - used_) {
            overflow_ = true;
            return;
        }
        std::memcpy(data_ + used_, data, len);
        used_ += len;
    }
    bool filled_exactly() const { return !overflow_ && used_ == size_; }

  private:
    uint8_t* data_;
    size_t size_;
    size_t used_ = 0;
    bool overflow_ = false;
};

// Writes to a file descriptor (all of it, retrying short writes and EINTR);
// after an error it stops and keeps errno for the caller.
class FdSink : public bloomkit::FrameSink {
  public:
    explicit FdSink(int fd) : fd_(fd) {}
    void write(const uint8_t* data, size_t len) override {
        while (error_ == 0 && len > 0) {
            const size_t chunk = len < (size_t(1) << 30) ? len : (size_t(1) << 30);
#if defined(_WIN32)
            const int n = ::_write(fd_, data, static_cast<unsigned>(chunk));
#else
            const ssize_t n = ::write(fd_, data, chunk);
#endif
            if (n < 0) {
                if (errno != EINTR) error_ = errno;
                continue;
            }
            data += n;
            len -= static_cast<size_t>(n);
        }
    }
    int error() const { return error_; }

  private:
    int fd_;
    int error_ = 0;
};

// The frame as a bytes object, written straight into it: the frame is
// sized by a dry run, the bytes object allocated with the GIL, then filled
// under the read lock without it. A grown filter (another thread added a
// slice or stage in between) changes the size; then it is done again.
template <class Core>
py::bytes frame_to_bytes(Guarded<Core>& self) {
    for (;;) {
        const uint64_t size = self.guard.read([&] {
            bloomkit::CountingSink counter;
            serialize_keyed(self.core, self.hashing, counter);
            return counter.count();
        });
        PyObject* raw = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
        if (raw == nullptr) throw py::error_already_set();
        py::bytes out = py::reinterpret_steal<py::bytes>(raw);
        auto* data = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(raw));
        const bool complete = self.guard.released_read([&] {
            SpanSink sink(data, size);
            serialize_keyed(self.core, self.hashing, sink);
            return sink.filled_exactly();
        });
        if (complete) return out;
    }
}

// --- zero-copy pickling (PEP 574) ---

// Records a frame as pieces instead of copying it: the small writes (header,
// params, padding, stage headers, checksum) as bytes, each large block (the
// ByteWriter passes bit arrays and tables through unbuffered) as a pointer
// into the filter's own memory. The checksum is still computed over every
// byte on the way, so the pieces concatenate to exactly to_bytes().
class PartsSink : public bloomkit::FrameSink {
  public:
    struct Part {
        std::string bytes;              // a small piece, or
        const uint8_t* data = nullptr;  // a view of filter memory
        size_t len = 0;
    };
    // Blocks this large are referenced, smaller ones copied: only the
    // payload arrays reach it (ByteWriter's buffer is 64 KiB).
    static constexpr size_t kViewAtLeast = size_t(1) << 16;

    void write(const uint8_t* data, size_t len) override {
        if (len >= kViewAtLeast) {
            parts_.push_back(Part{std::string(), data, len});
            return;
        }
        if (parts_.empty() || parts_.back().data != nullptr) parts_.emplace_back();
        parts_.back().bytes.append(reinterpret_cast<const char*>(data), len);
    }
    const std::vector<Part>& parts() const { return parts_; }

  private:
    std::vector<Part> parts_;
};

// One count in a filter's Guarded::frame_views for as long as it lives.
class FrameViewCount {
  public:
    explicit FrameViewCount(std::atomic<uint32_t>& views) : views_(&views) { ++*views_; }
    FrameViewCount(const FrameViewCount& other) : FrameViewCount(*other.views_) {}
    FrameViewCount& operator=(const FrameViewCount&) = delete;
    ~FrameViewCount() { --*views_; }

  private:
    std::atomic<uint32_t>* views_;
};

// A read-only buffer over part of a filter's memory that keeps the filter
// object alive (and so the counter it is counted in) and, for a
// copy-on-write core, the arrays handed off to its views (guard.hpp,
// HandsOffArrays); what the pickle's PickleBuffer wraps.
struct FrameView {
    py::object owner;
    const uint8_t* data;
    size_t len;
    FrameViewCount counted;
    std::shared_ptr<void> keeper;
};

// Cores whose clear() frees part of their memory (the later stages of a
// chain) declare `static constexpr bool kClearFreesStorage = true`. Their
// clear() is refused while views of that memory exist, as a bytearray
// refuses to resize while a memoryview of it exists: the alternative is a
// pickle buffer reading freed memory.
template <class Core, class = void>
struct ClearFreesStorage : std::false_type {};
template <class Core>
struct ClearFreesStorage<Core, std::void_t<decltype(Core::kClearFreesStorage)>>
    : std::integral_constant<bool, Core::kClearFreesStorage> {};

// --- protocol 5 pickles of a filter that may be written meanwhile ---
//
// A pickle's views of the filter's arrays (the "live" parts) are read after
// the frame's checksum was computed: by the pickler, or by whoever consumes
// the out-of-band buffers. A writer in between changes them, and then the
// frame's checksum no longer matches sound bits. So such a pickle carries,
// besides the pieces, the indices of its live parts and the *fixed-parts
// check*: MurmurHash3_x64_128 (h1, the frame checksum's seed) of every other
// part in order — header, params, padding, stage headers, the frame's
// checksum — all copied when the filter was reduced, so they cannot change.
// The loader verifies that check and reads the frame with every check but
// the frame's checksum (docs/RELIABILITY.md, docs/decisions.md).

// The live part indices of a pickle: strictly increasing, and never the
// first part (the header) nor the last (the frame's checksum), which the
// fixed-parts check always covers.
inline std::vector<size_t> live_part_indices(py::handle live, size_t part_count) {
    std::vector<size_t> indices;
    for (py::handle item : py::iter(live)) {
        const auto index = item.cast<long long>();
        if (index < 1 || static_cast<unsigned long long>(index) + 1 >= part_count ||
            (!indices.empty() && static_cast<size_t>(index) <= indices.back()))
            throw py::value_error("live parts must be increasing indices of pieces between the frame's first and last");
        indices.push_back(static_cast<size_t>(index));
    }
    return indices;
}

inline uint64_t fixed_parts_check(const std::vector<std::unique_ptr<ByteBuffer>>& parts,
                                  const std::vector<size_t>& live) {
    bloomkit::Murmur3Stream hash(bloomkit::kChecksumSeed);
    size_t next_live = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (next_live < live.size() && live[next_live] == i) {
            ++next_live;
            continue;
        }
        hash.update(parts[i]->data(), parts[i]->size());
    }
    return hash.digest().h1;
}

inline std::vector<std::unique_ptr<ByteBuffer>> part_buffers(py::handle parts) {
    std::vector<std::unique_ptr<ByteBuffer>> buffers;
    for (py::handle part : py::iter(parts)) buffers.push_back(std::make_unique<ByteBuffer>(part));
    return buffers;
}

inline void bind_frame_view(py::module_& m) {
    py::class_<FrameView>(m, "_FrameView", py::buffer_protocol())
        .def_buffer([](FrameView& v) {
            return py::buffer_info(const_cast<uint8_t*>(v.data), 1, py::format_descriptor<uint8_t>::format(), 1,
                                   {static_cast<py::ssize_t>(v.len)}, {py::ssize_t(1)}, /*readonly=*/true);
        })
        .def("__len__", [](const FrameView& v) { return v.len; });
    m.def(
        "_fixed_parts_check",
        [](py::sequence parts, py::handle live) {
            const auto buffers = part_buffers(parts);
            return fixed_parts_check(buffers, live_part_indices(live, buffers.size()));
        },
        py::arg("parts"), py::arg("live"),
        "The check a protocol 5 pickle carries for the parts of a frame not listed in `live` (common.hpp).");
}

// A frame given as several buffers (the pieces of _frame_parts()), read in
// order as one: loading a pickle with out-of-band buffers copies each byte
// once, straight into the new filter.
class PartsSource : public bloomkit::ByteSource {
  public:
    explicit PartsSource(const std::vector<std::unique_ptr<ByteBuffer>>& parts) : parts_(parts) {}
    size_t read_some(uint8_t* out, size_t len) override {
        while (index_ < parts_.size() && offset_ == parts_[index_]->size()) {
            ++index_;
            offset_ = 0;
        }
        if (index_ == parts_.size()) return 0;
        const ByteBuffer& part = *parts_[index_];
        const size_t n = std::min(len, part.size() - offset_);
        std::memcpy(out, part.data() + offset_, n);
        offset_ += n;
        return n;
    }
    bool known_size(uint64_t& size) const override {
        size = 0;
        for (const auto& part : parts_) size += part->size();
        return true;
    }

  private:
    const std::vector<std::unique_ptr<ByteBuffer>>& parts_;
    size_t index_ = 0;
    size_t offset_ = 0;
};

template <class Core>
py::object common_add(Guarded<Core>& self, py::handle key) {
    const Hash128 h = hash_key(key, self.hashing);
    return py::bool_(self.write([&] { return self.core.add(h); }));
}

// Every this many single-key adds, `add` calls the Python method
// self._check_capacity(1) (bloomkit/_capacity.py), which warns once when the
// filter has gone over capacity. Batches are checked after each call in
// Python; this keeps the per-key cost of `add` to a counter increment.
constexpr uint32_t kCapacityCheckInterval = 65536;

template <class Core>
PyObject* checked_add(PyObject* self, PyObject* key) {
    try {
        Guarded<Core>& guarded = self_object<Guarded<Core>>(self);
        py::object result = common_add(guarded, key);
        if (++guarded.unchecked_adds >= kCapacityCheckInterval) {
            guarded.unchecked_adds = 0;
            if (PyObject_HasAttrString(self, "_check_capacity")) py::handle(self).attr("_check_capacity")(1);
        }
        return result.release().ptr();
    } catch (...) {
        py::detail::try_translate_exceptions();
        return nullptr;
    }
}

template <class Core>
bool common_contains(Guarded<Core>& self, py::handle key) {
    const Hash128 h = hash_key(key, self.hashing);
    return self.guard.read([&] { return self.core.contains(h); });
}

template <class Core>
py::object common_contains_object(Guarded<Core>& self, py::handle key) {
    return py::bool_(common_contains(self, key));
}

// A batch on `threads` threads (bloomkit/parallel.hpp). Lookups of sources
// two threads may read are split by halves of the batch, for every type;
// only the Bloom filter splits inserts (by halves of its blocks).
template <class Core, class Keys>
void add_many_on(Core& core, const Keys& keys, uint8_t* was_present, unsigned threads) {
    if constexpr (std::is_same<Core, bloomkit::BloomFilter>::value)
        core.add_many(keys, was_present, threads);
    else
        core.add_many(keys, was_present);
}

template <class Core, class Keys>
void contains_many_on(const Core& core, const Keys& keys, uint8_t* present, unsigned threads) {
    const bool split =
        threads >= 2 && bloomkit::lookup_halves_on_two_threads(
                            keys, present, [&](const auto& range, uint8_t* out) { core.contains_many(range, out); });
    if (!split) core.contains_many(keys, present);
}

// The surface of every type, frozen ones (binary fuse) included: loading,
// copying, lookups, serialization, equality. bind_common adds the inserts.
template <class Core>
void bind_readable(py::class_<Guarded<Core>>& cls) {
    using G = Guarded<Core>;

    // Copy construction (copy()) and construction from a serialized frame
    // (from_bytes / unpickling) or from an open file (load). The copy
    // overload comes first: the frame overload accepts any object and
    // reports non-buffers itself. `key` is a keyed filter's 16-byte master
    // key (bloomkit/_keyed.py); a frame's key check must match it
    // (apply_frame_key). Both loads copy the frame once, into the filter.
    cls.def(py::init([](G& other) {
                return other.guard.read([&] {
                    auto* copy = new G(other.core);
                    copy->hashing = other.hashing;
                    return copy;
                });
            }),
            py::arg("other"));
    cls.def(py::init([](py::handle frame, py::handle key) {
                ByteBuffer buffer(frame);
                bloomkit::SpanSource source(buffer.data(), buffer.size());
                return read_guarded<Core>(source, key);
            }),
            py::arg("frame"), py::kw_only(), py::arg("key") = py::none());
    // `parts` (keyword-only): the frame as a sequence of buffers, as
    // _frame_parts() gives it and a protocol 5 pickle carries it. With
    // `live` (indices into parts) and `check` (their fixed-parts check,
    // above), the live parts are exempt from the frame's checksum: `check`
    // must match the other parts, and every other check of a load runs.
    cls.def(py::init([](py::sequence parts, py::handle key, py::handle live, py::handle check) {
                const auto buffers = part_buffers(parts);
                auto checksum = bloomkit::Checksum::Verify;
                if (!live.is_none()) {
                    const std::vector<size_t> indices = live_part_indices(live, buffers.size());
                    if (check.is_none()) throw py::value_error("live parts need the check of the fixed parts (check=)");
                    // The same words as any frame whose checksum fails: a
                    // fixed part differs from what was pickled.
                    if (check.cast<uint64_t>() != fixed_parts_check(buffers, indices))
                        throw bloomkit::checksum_mismatch(bloomkit::FrameHeader{});
                    if (!indices.empty()) checksum = bloomkit::Checksum::Skip;
                }
                PartsSource source(buffers);
                return read_guarded<Core>(source, key, checksum);
            }),
            py::kw_only(), py::arg("parts"), py::arg("key") = py::none(), py::arg("live") = py::none(),
            py::arg("check") = py::none());
    // `fd` (keyword-only, so no other argument is ever taken for one) is an
    // open file whose header the caller has validated (bloomkit/_io.py); a
    // regular file is read from offset 0, anything else from where it is.
    cls.def(py::init([](int fd, py::handle key) {
                bloomkit::FdSource source(fd);
                return read_guarded<Core>(source, key);
            }),
            py::kw_only(), py::arg("fd"), py::arg("key") = py::none());
    cls.def(
        "_set_key",
        [](G& self, py::handle key) {
            const std::optional<bloomkit::SipKey> master = master_key(key);
            if (master) self.set_secret(*master);
        },
        py::arg("key"), "Make a new, empty filter keyed (construction only: bloomkit/_keyed.py).");
    cls.def_property_readonly(
        "keyed", [](G& self) { return self.hashing.keyed(); }, "True if built with a secret_key.");

    def_meth_o(cls, "contains", meth_o<G, &common_contains_object<Core>>,
               "contains($self, key, /)\n--\n\nTrue if key is (probably) in the filter.");
    def_sq_contains(cls, sq_contains<G, &common_contains<Core>>);

    cls.def(
        "_contains_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.hashing);
            auto result = new_bool_array(batch.size());
            uint8_t* out = bool_data(result);
            const unsigned threads = threads_for_batch(batch.size());
            self.guard.released_read(
                [&] { batch.visit([&](const auto& source) { contains_many_on(self.core, source, out, threads); }); });
            return result;
        },
        py::arg("keys"));

    cls.def(
        "to_bytes", [](G& self) { return frame_to_bytes(self); },
        "The filter in the bloomkit binary format (docs/FORMAT.md).");
    cls.def(
        "_write_frame",
        [](G& self, int fd) {
            int error = 0;
            self.guard.released_read([&] {
                FdSink sink(fd);
                serialize_keyed(self.core, self.hashing, sink);
                error = sink.error();
            });
            if (error != 0) {
                errno = error;
                PyErr_SetFromErrno(PyExc_OSError);
                throw py::error_already_set();
            }
        },
        py::arg("fd"), "Stream the frame to an open file descriptor (no copy of the filter in memory).");
    // The frame as pieces whose concatenation is to_bytes(): bytes for the
    // small ones, a _FrameView of the filter's memory (no copy) for each
    // large block. Only for cores whose storage never moves while the object
    // lives (the Python layer decides; docs/RELIABILITY.md); a core whose
    // clear() frees memory refuses it while the views exist (above). The
    // call counts itself first, so a clear() between recording the pointers
    // and counting the views is refused too.
    // Whether views of this type's arrays are copy-on-write snapshots
    // (guard.hpp), so its protocol 5 pickle verifies the frame's checksum.
    cls.attr("_views_are_snapshots") = py::bool_(HandsOffArrays<Core>::value);
    cls.def("_frame_parts", [](py::object self_obj) {
        G& self = self_obj.cast<G&>();
        const FrameViewCount recording(self.frame_views);
        PartsSink sink;
        std::shared_ptr<void> keeper;
        self.guard.released_read([&] {
            keeper = self.view_keeper();
            serialize_keyed(self.core, self.hashing, sink);
        });
        py::list out;
        for (const PartsSink::Part& part : sink.parts()) {
            if (part.data == nullptr)
                out.append(py::bytes(part.bytes));
            else
                out.append(
                    py::cast(FrameView{self_obj, part.data, part.len, FrameViewCount(self.frame_views), keeper}));
        }
        return py::tuple(out);
    });
    cls.def("_equals", [](G& self, G& other) {
        if (!same_hashing(self.hashing, other.hashing)) return false;
        return read_pair(self.guard, other.guard, [&] { return self.core == other.core; });
    });
    cls.def_property_readonly(
        "seed", [](G& self) { return self.core.seed(); }, "Hash seed (0 <= seed < 2**32).");
    // Read under the guard: a grown scalable or cuckoo filter changes size.
    cls.def_property_readonly(
        "nbytes", [](G& self) { return self.guard.read([&] { return self.core.nbytes(); }); },
        "Bytes of filter storage (bits or counters), excluding object overhead.");
}

// The common surface of a type that takes keys after construction.
template <class Core>
void bind_common(py::class_<Guarded<Core>>& cls) {
    using G = Guarded<Core>;
    bind_readable<Core>(cls);
    def_meth_o(cls, "add", checked_add<Core>,
               "add($self, key, /)\n--\n\nInsert key; return True if it was (probably) present before.");
    cls.def(
        "_add_many",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.hashing);
            auto result = new_bool_array(batch.size());
            uint8_t* out = bool_data(result);
            const unsigned threads = threads_for_batch(batch.size());
            self.released_write(
                [&] { batch.visit([&](const auto& source) { add_many_on(self.core, source, out, threads); }); });
            return result;
        },
        py::arg("keys"));
    cls.def(
        "_update",
        [](G& self, py::handle keys) {
            KeyBatch batch(keys, self.hashing);
            const unsigned threads = threads_for_batch(batch.size());
            self.released_write(
                [&] { batch.visit([&](const auto& source) { add_many_on(self.core, source, nullptr, threads); }); });
        },
        py::arg("keys"));
    cls.def(
        "clear",
        [](G& self) {
            // Checked under the filter's lock: _frame_parts() counts itself
            // before it takes the lock to record its pointers. A
            // copy-on-write core has handed its arrays to the views by now.
            const bool refused = self.write([&] {
                if (ClearFreesStorage<Core>::value && !HandsOffArrays<Core>::value && self.frame_views.load() != 0)
                    return true;
                self.core.clear();
                return false;
            });
            if (refused)
                throw py::buffer_error(
                    "cannot clear this filter while buffers of a protocol 5 pickle view its memory (clear() frees "
                    "its grown stages); release those buffers first");
        },
        "Remove every key.");
}

}  // namespace bloomkit_py
