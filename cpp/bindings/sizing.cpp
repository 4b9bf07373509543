// bloomkit._core sizing functions (cpp/include/bloomkit/sizing.hpp), for the
// thin Python wrapper python/bloomkit/calc.py.
#include <bloomkit/sizing.hpp>

#include "common.hpp"

#include <pybind11/pybind11.h>

#include <iterator>
#include <string>
#include <tuple>

namespace bloomkit_py {

namespace py = pybind11;
using bloomkit::Layout;

void bind_sizing(py::module_& m) {
    auto layout_of = [](const std::string& name) { return bloomkit::layout_from_name(name); };

    m.def(
        "layout_size",
        [=](const std::string& layout, uint64_t capacity, double error_rate) {
            const bloomkit::BloomSize s = bloomkit::layout_size(layout_of(layout), capacity, error_rate);
            return std::make_tuple(s.num_bits, s.num_hashes, s.error_rate);
        },
        py::arg("layout"), py::arg("capacity"), py::arg("error_rate"),
        "(num_bits, num_hashes, predicted error_rate) of a Bloom filter of `layout`.");
    m.def(
        "classic_size_with_hashes",
        [](uint64_t capacity, double error_rate, uint32_t num_hashes) {
            const bloomkit::BloomSize s = bloomkit::classic_size_with_hashes(capacity, error_rate, num_hashes);
            return std::make_tuple(s.num_bits, s.num_hashes, s.error_rate);
        },
        py::arg("capacity"), py::arg("error_rate"), py::arg("num_hashes"),
        "(num_bits, num_hashes, predicted error_rate) of a classic filter with `num_hashes` fixed.");
    m.def(
        "rotating_generation_size",
        [](uint64_t capacity, double error_rate, double rotate_at) {
            const bloomkit::BloomSize s = bloomkit::rotating_generation_size(capacity, error_rate, rotate_at);
            return std::make_tuple(s.num_bits, s.num_hashes, s.error_rate);
        },
        py::arg("capacity"), py::arg("error_rate"), py::arg("rotate_at"),
        "(num_bits, num_hashes, error bound at rotation) of a generation rotating at `rotate_at` of its bits set.");
    m.def(
        "check_layout_overhead",
        [=](const std::string& layout, uint64_t capacity, double error_rate, uint64_t num_bits) {
            bloomkit::check_layout_overhead(layout_of(layout), capacity, error_rate, num_bits);
        },
        py::arg("layout"), py::arg("capacity"), py::arg("error_rate"), py::arg("num_bits"),
        "ValueError when `num_bits` of a blocked layout exceed LIMITS['max_layout_overhead'] times the classic size.");
    m.def(
        "default_layout_size",
        [](uint64_t capacity, double error_rate) {
            const bloomkit::LayoutChoice c = bloomkit::default_layout_size(capacity, error_rate);
            return std::make_tuple(std::string(bloomkit::layout_name(c.layout)), c.size.num_bits, c.size.num_hashes,
                                   c.size.error_rate);
        },
        py::arg("capacity"), py::arg("error_rate"),
        "(layout, num_bits, num_hashes, predicted error_rate) of the layout a filter gets when none is named.");
    m.def(
        "layout_false_positive_rate",
        [=](const std::string& layout, double num_bits, double num_items, uint32_t num_hashes) {
            return bloomkit::layout_false_positive_rate(layout_of(layout), num_bits, num_items, num_hashes);
        },
        py::arg("layout"), py::arg("num_bits"), py::arg("num_items"), py::arg("num_hashes"));
    m.def(
        "layout_block_bits", [=](const std::string& layout) { return bloomkit::layout_block_bits(layout_of(layout)); },
        py::arg("layout"));
    m.def("classic_capacity", &bloomkit::classic_capacity, py::arg("num_bits"), py::arg("error_rate"));
    m.def(
        "cuckoo_size",
        [](uint64_t capacity, double error_rate, unsigned bucket_size, unsigned fingerprint_bits, bool auto_grow) {
            const bloomkit::CuckooSize s =
                bloomkit::cuckoo_size(capacity, error_rate, bucket_size, fingerprint_bits, auto_grow);
            return std::make_tuple(s.num_buckets, s.fingerprint_bits, s.nbytes, s.error_rate);
        },
        py::arg("capacity"), py::arg("error_rate"), py::arg("bucket_size"), py::arg("fingerprint_bits"),
        py::arg("auto_grow"),
        "(num_buckets, fingerprint_bits, nbytes, bound); error_rate 0 = none, fingerprint_bits 0 = derive.");
    m.def("cuckoo_max_capacity", &bloomkit::cuckoo_max_capacity, py::arg("bucket_size"));
    m.def("cuckoo_num_buckets", &bloomkit::cuckoo_num_buckets, py::arg("capacity"), py::arg("bucket_size"));
    m.def("cuckoo_stage_false_positive_rate", &bloomkit::cuckoo_stage_false_positive_rate, py::arg("fingerprint_bits"),
          py::arg("stage"), py::arg("bucket_size"), py::arg("load_factor"));

    // The facts the Python layer checks arguments against, stated once here
    // (sizing.hpp) and imported from _core rather than re-stated.
    py::tuple counter_widths(std::size(bloomkit::kCounterWidths));
    for (size_t i = 0; i < std::size(bloomkit::kCounterWidths); ++i) counter_widths[i] = bloomkit::kCounterWidths[i];
    m.attr("MAX_HASHES") = bloomkit::kMaxHashes;
    m.attr("COUNTER_WIDTHS") = counter_widths;
    m.attr("DEFAULT_COUNTER_BITS") = bloomkit::kDefaultCounterBits;

    py::dict limits;
    limits["max_capacity"] = bloomkit::kMaxCapacity;
    limits["capacity_check_interval"] = kCapacityCheckInterval;
    limits["max_hashes"] = bloomkit::kMaxHashes;
    limits["split_block_hashes"] = bloomkit::kSplitBlockHashes;
    limits["default_layout_memory_bound"] = bloomkit::kDefaultLayoutMemoryBound;
    limits["counter_widths"] = counter_widths;
    limits["max_layout_overhead"] = bloomkit::kMaxLayoutOverhead;
    limits["max_scalable_slices"] = bloomkit::kMaxScalableSlices;
    limits["cuckoo_min_bucket_size"] = bloomkit::kCuckooMinBucketSize;
    limits["cuckoo_max_bucket_size"] = bloomkit::kCuckooMaxBucketSize;
    limits["cuckoo_max_buckets"] = bloomkit::kCuckooMaxBuckets;
    limits["cuckoo_min_fingerprint_bits"] = bloomkit::kCuckooMinFingerprintBits;
    limits["cuckoo_max_fingerprint_bits"] = bloomkit::kCuckooMaxFingerprintBits;
    py::dict loads;
    for (unsigned b = bloomkit::kCuckooMinBucketSize; b <= bloomkit::kCuckooMaxBucketSize; ++b) {
        const bloomkit::CuckooLoad l = bloomkit::cuckoo_sizing_load(b);
        loads[py::int_(b)] = py::make_tuple(l.load, l.spread);
    }
    limits["cuckoo_sizing_load"] = loads;
    py::list layouts;
    for (uint32_t i = 0; i < bloomkit::kNumLayouts; ++i) layouts.append(bloomkit::layout_name(static_cast<Layout>(i)));
    limits["layouts"] = py::tuple(layouts);
    m.attr("LIMITS") = limits;
    m.attr("PORTABLE_BUILD") = bloomkit::platform::kPortable;
}

}  // namespace bloomkit_py
