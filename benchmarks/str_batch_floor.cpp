// The pieces of a str-list batch insert, timed one at a time by
// benchmarks/str_batch_floor.py (which compiles this file against the
// repository's headers). Each stage does strictly more than the previous
// one, so the differences are what each piece costs:
//
//   walk      list walk + type/ASCII check + length + data pointer
//   read      walk + read every data byte (8-byte words, xor-folded)
//   incref    walk + Py_INCREF/Py_DECREF of every item (a strong reference)
//   murmur    walk + MurmurHash3_x64_128 of the data
//   probe     murmur + split-block insert, one key after the other
//   batched   murmur into 256-digest chunks, prefetch 8 ahead, insert
//
// Only compact ASCII str items are accepted (the URL case); anything else
// raises TypeError. Not part of bloomkit: a measuring tool.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/hash.hpp>

#include <cstring>
#include <memory>

namespace {

using bloomkit::Hash128;

struct Span {
    const uint8_t* data;
    size_t size;
};

// The compact ASCII data of `obj`, or {nullptr, 0} for anything else.
inline Span ascii_span(PyObject* obj) {
    if (!PyUnicode_CheckExact(obj) || !PyUnicode_IS_COMPACT_ASCII(obj)) return {nullptr, 0};
    return {static_cast<const uint8_t*>(PyUnicode_DATA(obj)), static_cast<size_t>(PyUnicode_GET_LENGTH(obj))};
}

inline void prefetch_object(PyObject* obj) {
    __builtin_prefetch(obj);
    __builtin_prefetch(reinterpret_cast<const char*>(obj) + 64);
}

constexpr Py_ssize_t kAhead = 8;

// Calls f(span) for every item of the list (prefetching kAhead items ahead);
// false with TypeError set for a non-ASCII or non-str item.
template <class F>
bool walk(PyObject* list, F&& f) {
    const Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (i + kAhead < n) prefetch_object(PyList_GET_ITEM(list, i + kAhead));
        PyObject* item = PyList_GET_ITEM(list, i);
        const Span s = ascii_span(item);
        if (s.data == nullptr) {
            PyErr_SetString(PyExc_TypeError, "str_batch_floor takes lists of ASCII str only");
            return false;
        }
        f(item, s);
    }
    return true;
}

std::unique_ptr<bloomkit::BloomFilter> make_filter(unsigned long long bits, unsigned int k) {
    bloomkit::BloomGeometry g{bits, k, 0, 1000, 0.01, bloomkit::Layout::SplitBlock};
    return std::unique_ptr<bloomkit::BloomFilter>(new bloomkit::BloomFilter(g));
}

PyObject* run_stage(PyObject*, PyObject* args) {
    PyObject* list;
    const char* stage;
    unsigned long long bits = 0;
    unsigned int k = 0;
    if (!PyArg_ParseTuple(args, "O!sKI", &PyList_Type, &list, &stage, &bits, &k)) return nullptr;
    uint64_t sink = 0;
    bool ok = true;
    const std::string name(stage);
    if (name == "walk") {
        ok = walk(list, [&](PyObject*, Span s) { sink += s.size + reinterpret_cast<uintptr_t>(s.data); });
    } else if (name == "read") {
        ok = walk(list, [&](PyObject*, Span s) {
            uint64_t x = 0;
            size_t i = 0;
            for (; i + 8 <= s.size; i += 8) x ^= bloomkit::detail::load_le64(s.data + i);
            for (; i < s.size; ++i) x ^= s.data[i];
            sink += x;
        });
    } else if (name == "incref") {
        ok = walk(list, [&](PyObject* item, Span s) {
            Py_INCREF(item);
            sink += s.size;
            Py_DECREF(item);
        });
    } else if (name == "murmur") {
        ok = walk(list, [&](PyObject*, Span s) { sink += bloomkit::murmur3_x64_128(s.data, s.size, 0).h1; });
    } else if (name == "probe") {
        auto filter = make_filter(bits, k);
        ok = walk(list, [&](PyObject*, Span s) { sink += filter->add(bloomkit::murmur3_x64_128(s.data, s.size, 0)); });
    } else if (name == "batched") {
        auto filter = make_filter(bits, k);
        const Py_ssize_t n = PyList_GET_SIZE(list);
        std::vector<Span> spans;
        spans.reserve(static_cast<size_t>(n));
        ok = walk(list, [&](PyObject*, Span s) { spans.push_back(s); });
        struct SpanKeys {
            const std::vector<Span>& spans;
            size_t size() const { return spans.size(); }
            Hash128 hash(size_t i, uint32_t seed) const {
                return bloomkit::murmur3_x64_128(spans[i].data, spans[i].size, seed);
            }
        };
        if (ok) filter->add_many(SpanKeys{spans}, nullptr);
        sink += filter->set_bits();
    } else {
        PyErr_SetString(PyExc_ValueError, "unknown stage");
        return nullptr;
    }
    if (!ok) return nullptr;
    return PyLong_FromUnsignedLongLong(sink);
}

PyMethodDef kMethods[] = {{"run_stage", run_stage, METH_VARARGS, "run_stage(list, stage, num_bits, num_hashes)"},
                          {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "str_batch_floor_ext", nullptr, -1, kMethods};

}  // namespace

PyMODINIT_FUNC PyInit_str_batch_floor_ext() { return PyModule_Create(&kModule); }
