// bloomkit.load(path) of a BloomFilter file with one copy of the filter in
// memory, not two: the file is read once into a 64-byte aligned block of
// its declared length, validated there (parse_frame: lengths, padding,
// checksum, parameters), and the filter's bits are the payload inside that
// block (WordStorage::adopt). Other types, and version 1 files (payload
// not 64-byte aligned), are read into a buffer and copied (FilterBase.load).
#include <bloomkit/bloom.hpp>
#include <bloomkit/memory.hpp>
#include <bloomkit/storage.hpp>

#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "common.hpp"

namespace bloomkit_py {

using bloomkit::BloomFilter;

namespace {

// Reads `length` bytes from the start of `fd` into `out` (no GIL); false
// and errno set on a read error, false with errno 0 on a short file.
bool read_all(int fd, uint8_t* out, uint64_t length) {
    uint64_t done = 0;
    while (done < length) {
        const uint64_t step = length - done < (uint64_t(1) << 30) ? length - done : (uint64_t(1) << 30);
        const ssize_t n = ::pread(fd, out + done, static_cast<size_t>(step), static_cast<off_t>(done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (n == 0) {
            errno = 0;
            return false;
        }
        done += static_cast<uint64_t>(n);
    }
    return true;
}

BloomFilter bloom_from_block(const std::shared_ptr<void>& block, uint64_t length) {
    const auto* data = static_cast<const uint8_t*>(block.get());
    const bloomkit::Frame frame = bloomkit::parse_frame(data, static_cast<size_t>(length), bloomkit::FilterType::Bloom);
    bool little_endian = true;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    little_endian = false;
#endif
    if (!little_endian || reinterpret_cast<uintptr_t>(frame.payload) % bloomkit::kPayloadAlignment != 0)
        return BloomFilter::deserialize(data, static_cast<size_t>(length));  // version 1: copy
    return BloomFilter::in_place(
        frame, [&](uint64_t* words, uint64_t count) { return bloomkit::WordStorage::adopt(words, count, block); });
}

}  // namespace

void bind_lean_load(py::class_<Guarded<BloomFilter>>& cls) {
    using G = Guarded<BloomFilter>;
    // `fd` is an open file whose 24-byte header the caller has validated
    // and whose size is `length` (bloomkit/_io.py).
    cls.def(py::init([](int fd, uint64_t length, py::handle key) {
                const std::optional<bloomkit::SipKey> master = master_key(key);
                bloomkit::check_allocation(length, 1, "filter file buffer");
                const uint64_t rounded =
                    (length + bloomkit::kCacheLine - 1) / bloomkit::kCacheLine * bloomkit::kCacheLine;
                std::shared_ptr<void> block(
                    bloomkit::detail::aligned_allocate(static_cast<size_t>(rounded), bloomkit::kCacheLine),
                    bloomkit::detail::aligned_free);
                int error = 0;
                std::unique_ptr<G> filter(AccessGuard::without_gil([&]() -> G* {
                    if (!read_all(fd, static_cast<uint8_t*>(block.get()), length)) {
                        error = errno == 0 ? -1 : errno;
                        return nullptr;
                    }
                    return new G(bloom_from_block(block, length));
                }));
                if (error > 0) {
                    errno = error;
                    PyErr_SetFromErrno(PyExc_OSError);
                    throw py::error_already_set();
                }
                if (error < 0) throw py::value_error("truncated data: the file is shorter than its header declares");
                apply_frame_key(*filter, static_cast<const uint8_t*>(block.get()), static_cast<size_t>(length), master);
                return filter.release();
            }),
            py::arg("fd"), py::arg("length"), py::kw_only(), py::arg("key") = py::none());
}

}  // namespace bloomkit_py
