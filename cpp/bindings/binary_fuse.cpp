// BinaryFuseFilter bindings: the key hashes a build collects
// (BinaryFuseKeys), the frozen filter built from them with the GIL released,
// its read-only surface (bind_readable) and the filter over a mapped file.
#include <bloomkit/binary_fuse.hpp>
#include <bloomkit/mapped_file.hpp>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common.hpp"

namespace bloomkit_py {

using bloomkit::BinaryFuseFilter;

// The 64-bit hashes of every key given so far, under one KeyHashing: what
// BinaryFuseFilter.build and freeze collect batch by batch (8 bytes per key).
struct BinaryFuseKeys {
    BinaryFuseKeys(uint32_t seed, const std::optional<bloomkit::SipKey>& key)
        : hashing(key ? bloomkit::KeyHashing(seed, *key) : bloomkit::KeyHashing(seed)), secret(key) {}
    bloomkit::KeyHashing hashing;
    std::optional<bloomkit::SipKey> secret;
    std::vector<uint64_t> hashes;
};

void bind_binary_fuse(py::module_& m) {
    py::class_<BinaryFuseKeys>(m, "BinaryFuseKeys", "Key hashes collected for BinaryFuseFilter.build.")
        .def(py::init([](uint32_t seed, py::handle key) { return new BinaryFuseKeys(seed, master_key(key)); }),
             py::arg("seed"), py::kw_only(), py::arg("key") = py::none())
        .def(
            "_add",
            [](BinaryFuseKeys& self, py::handle keys) {
                KeyBatch batch(keys, self.hashing);
                const uint64_t total = uint64_t(self.hashes.size()) + batch.size();
                bloomkit::require_binary_fuse_keys(total);
                bloomkit::check_allocation(total, sizeof(uint64_t), "binary fuse key hash array");
                AccessGuard::without_gil([&] {
                    batch.visit([&](const auto& source) {
                        BinaryFuseFilter::append_hashes(source, self.hashing.seed(), self.hashes);
                    });
                });
            },
            py::arg("keys"))
        .def("__len__", [](const BinaryFuseKeys& self) { return self.hashes.size(); });

    using G = Guarded<BinaryFuseFilter>;
    py::class_<G> cls(m, "BinaryFuseCore", "C++ core of bloomkit.BinaryFuseFilter; use that class instead.");
    // Builds from the collected hashes, which it consumes (they are
    // reordered and deduplicated in place, then freed).
    cls.def(py::init([](BinaryFuseKeys& keys, uint32_t fingerprint_bits) {
                std::vector<uint64_t> hashes = std::move(keys.hashes);
                keys.hashes = std::vector<uint64_t>();
                auto* filter = AccessGuard::without_gil(
                    [&] { return new G(BinaryFuseFilter::build(hashes, fingerprint_bits, keys.hashing.seed())); });
                if (keys.secret) filter->set_secret(*keys.secret);
                return filter;
            }),
            py::arg("keys"), py::arg("fingerprint_bits"));
    bind_readable<BinaryFuseFilter>(cls);

    // The filter over a file's payload in place (read-only mapping); the
    // mapping lives as long as the filter. Keyed frames need their key.
    cls.def(py::init([](std::shared_ptr<bloomkit::MappedFile> file, bool verify, py::handle key) {
                const std::optional<bloomkit::SipKey> master = master_key(key);
                bloomkit::FrameInfo info;
                std::unique_ptr<G> filter(AccessGuard::without_gil([&] {
                    return new G(bloomkit::map_binary_fuse(
                        file, verify ? bloomkit::Checksum::Verify : bloomkit::Checksum::Skip, &info));
                }));
                apply_frame_key(*filter, info, master);
                return filter.release();
            }),
            py::arg("file"), py::arg("verify"), py::kw_only(), py::arg("key") = py::none());

    cls.def(
        "__len__", [](G& self) { return self.core.size(); },
        "Distinct keys stored (keys whose 64-bit hashes are equal count once).");
    cls.def_property_readonly("fingerprint_bits", [](G& self) { return self.core.params().fingerprint_bits; });
    cls.def_property_readonly("segment_length", [](G& self) { return self.core.params().shape.segment_length; });
    cls.def_property_readonly("segment_count", [](G& self) { return self.core.params().shape.segment_count; });
    cls.def_property_readonly("array_length", [](G& self) { return self.core.params().array_length(); });
    cls.def_property_readonly("build_seed", [](G& self) { return self.core.params().build_seed; });
    cls.def_property_readonly("mapped", [](G& self) { return !self.core.words().owned(); });
}

}  // namespace bloomkit_py
