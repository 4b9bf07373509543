// File-backed filters: a saved frame (docs/FORMAT.md) mapped into memory,
// its payload used in place as the filter's bits (no copy).
//
//   "r"   read-only, shared mapping: pages are read from the page cache on
//         first touch, so opening costs O(1) and memory grows only by the
//         pages that lookups touch; every process mapping the file shares
//         those pages. Writes are refused (ReadOnlyError) before they happen.
//   "r+"  writable, MAP_SHARED: every process that maps the file sees (and
//         writes) the same pages, so each word is written with an atomic OR
//         (StorageAccess::Shared, layouts.hpp AtomicOr): no lost bits.
//         Exact test-and-set answers across processes need lock_writers()
//         (writer_lock.hpp): each add, and each chunk of a batch, under an
//         exclusive lock on the file.
//   "w+"  creates the file: header, params and padding are written, the file
//         is extended with ftruncate (sparse: the payload is all zero and
//         takes no disk space until written), then mapped as "r+".
//
// Mapping relies on the format v2 payload offset being a multiple of 64
// (format.hpp): a mapping starts on a page boundary, so the payload words
// are 64-byte aligned, as aligned atomics and cache-line blocks need.
// Version 1 files (payload at offset 56) are refused; re-save them.
//
// Validation when a file is opened: the 24-byte header first
// (declared_frame_length, before mapping anything), the file size against
// it, then the same parse_frame() and read_params() as any load. The
// checksum is verified only on request (Checksum::Verify): it reads every
// byte, which would make opening a 10 GB filter take seconds and pull all
// of it into memory (docs/decisions.md). flush() rewrites the checksum over
// the current content, so a file is checksum-consistent after flush() or
// close() while no other process writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "bloom.hpp"
#include "format.hpp"
#include "storage.hpp"
#include "writer_lock.hpp"

#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#endif

namespace bloomkit {

enum class MapMode { Read, ReadWrite, Create };

inline MapMode map_mode_from_name(const std::string& mode) {
    if (mode == "r") return MapMode::Read;
    if (mode == "r+") return MapMode::ReadWrite;
    if (mode == "w+") return MapMode::Create;
    throw std::invalid_argument("mode must be 'r', 'r+' or 'w+', got '" + mode + "'");
}

// A whole-file mapping, unmapped on destruction. Shared (std::shared_ptr)
// by the filter's WordStorage, so it lives exactly as long as its last user.
// The file descriptor is the caller's (Python opens the file, so open errors
// are the usual OSErrors) and is not needed once the mapping exists.
class MappedFile {
  public:
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

#if defined(_WIN32)
    static std::shared_ptr<MappedFile> open(int, const std::string&, MapMode) {
        throw std::runtime_error("file-backed filters are not supported on Windows yet");
    }
    static std::shared_ptr<MappedFile> create(int, const std::string&, const std::vector<uint8_t>&, uint64_t) {
        throw std::runtime_error("file-backed filters are not supported on Windows yet");
    }
    void flush() {}
#else
    // Maps the frame file open at `fd` (opened for reading, and for writing
    // unless mode is Read); the header is checked before mapping. `path`
    // names the file in messages.
    static std::shared_ptr<MappedFile> open(int fd, const std::string& path, MapMode mode) {
        const bool writable = mode != MapMode::Read;
        std::shared_ptr<MappedFile> file(new MappedFile(path, writable));
        file->fd_ = fd;
        struct stat info;
        if (::fstat(file->fd_, &info) != 0) file->fail("cannot stat");
        if (!S_ISREG(info.st_mode))
            throw std::invalid_argument(path + ": not a regular file; only files can be mapped");
        uint8_t header[kHeaderSize];
        const ssize_t got = ::pread(file->fd_, header, sizeof header, 0);
        if (got < 0) file->fail("cannot read");
        const uint64_t declared = declared_frame_length(header, static_cast<size_t>(got));
        if (declared != static_cast<uint64_t>(info.st_size))
            throw FormatError(path + ": the header declares a " + std::to_string(declared) +
                              "-byte filter but the file has " + std::to_string(info.st_size) +
                              " bytes (truncated or extended data)");
        file->map(declared);
        file->fd_ = -1;
        return file;
    }

    // Fills the empty file open read-write at `fd` with `prefix` (header,
    // params, padding) followed by zeros up to `total` bytes, and maps it.
    static std::shared_ptr<MappedFile> create(int fd, const std::string& path, const std::vector<uint8_t>& prefix,
                                              uint64_t total) {
        std::shared_ptr<MappedFile> file(new MappedFile(path, true));
        file->fd_ = fd;
        size_t done = 0;
        while (done < prefix.size()) {
            const ssize_t n = ::write(file->fd_, prefix.data() + done, prefix.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) file->fail("cannot write");
            done += static_cast<size_t>(n);
        }
        if (total > static_cast<uint64_t>(~off_t(0) & ~(off_t(1) << (sizeof(off_t) * 8 - 1))))
            throw std::invalid_argument(path + ": a " + std::to_string(total) + "-byte file is too large");
        if (::ftruncate(file->fd_, static_cast<off_t>(total)) != 0) file->fail("cannot extend");
        file->map(total);
        file->fd_ = -1;
        return file;
    }

    // Writes the checksum of the current content and flushes the mapping
    // to the file (msync). Reads the whole mapping.
    void flush() {
        if (!writable_) return;
        const uint64_t value = frame_checksum(data_, size_ - kChecksumSize);
        for (size_t i = 0; i < kChecksumSize; ++i)
            data_[size_ - kChecksumSize + i] = static_cast<uint8_t>(value >> (8 * i));
        if (::msync(data_, size_, MS_SYNC) != 0) fail("cannot flush");
    }

    ~MappedFile() {
        if (data_ != nullptr) ::munmap(data_, size_);
    }
#endif

    uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    bool writable() const { return writable_; }

    // Serialises this process's writes with every other writer that locks
    // the file (exact test-and-set); `fd` is the file, open read-write. Call
    // before map_bloom(). A read-only mapping has no writers to serialise.
    void lock_writers(int fd) {
#if !defined(_WIN32)
        if (writable_ && !writer_lock_) writer_lock_.reset(new FileWriterLock(fd, path_));
#else
        (void)fd;
#endif
    }
    WriterLock* writer_lock() const { return writer_lock_.get(); }
    StorageAccess access() const { return writable_ ? StorageAccess::Shared : StorageAccess::ReadOnly; }

  private:
    MappedFile(std::string path, bool writable) : path_(std::move(path)), writable_(writable) {}

#if !defined(_WIN32)
    [[noreturn]] void fail(const char* what) const {
        throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path_);
    }

    void map(uint64_t length) {
        if (length > static_cast<uint64_t>(SIZE_MAX))
            throw std::invalid_argument(path_ + ": the filter is larger than this process can map");
        const int protection = writable_ ? PROT_READ | PROT_WRITE : PROT_READ;
        void* p = ::mmap(nullptr, static_cast<size_t>(length), protection, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) fail("cannot map");
        data_ = static_cast<uint8_t*>(p);
        size_ = static_cast<size_t>(length);
#if defined(MADV_RANDOM)
        // Lookups touch pages at random: no readahead, and (Linux) no
        // fault-around, so a lookup maps the page it reads and no more.
        (void)::madvise(p, size_, MADV_RANDOM);
#endif
    }
#endif

    std::string path_;
    bool writable_;
    int fd_ = -1;  // the caller's, used only while mapping
#if !defined(_WIN32)
    std::unique_ptr<FileWriterLock> writer_lock_;
#else
    std::unique_ptr<WriterLock> writer_lock_;
#endif
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

// A BloomFilter whose bits are the payload of `file`, in place. Every length
// and parameter is validated as for load(); the checksum only on request.
inline BloomFilter map_bloom(const std::shared_ptr<MappedFile>& file, Checksum checksum) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    throw std::runtime_error("file-backed filters need a little-endian host (the payload is little-endian words)");
#endif
    const Frame frame = parse_frame(file->data(), static_cast<size_t>(file->size()), FilterType::Bloom, checksum);
    // Keys are hashed by the bindings, which map no keyed filters: mapped
    // without its key, a keyed filter would answer every query wrongly.
    if (frame.keyed)
        throw FormatError(
            "the file holds a keyed filter (built with secret_key=), which cannot be opened as a "
            "file-backed filter; use bloomkit.load(path, secret_key=...)");
    if (reinterpret_cast<uintptr_t>(frame.payload) % kPayloadAlignment != 0)
        throw FormatError("the payload is not 64-byte aligned (a format version " + std::to_string(frame.version) +
                          " file); load() it and save() it again to map it");
    // The mapping is writable exactly when access is Shared; BloomFilter
    // refuses every write to ReadOnly storage before it happens.
    return BloomFilter::in_place(frame, [&](uint64_t* words, uint64_t count) {
        return WordStorage::borrow(words, count, file, file->access(), file->writer_lock());
    });
}

// A new file for an empty BloomFilter of `geometry` at `path`: the frame
// prefix is written and the file sized (sparse), then mapped writable;
// map_bloom() makes the filter. Nothing of the size of the filter is
// allocated or written. The checksum is written by the first flush().
inline std::shared_ptr<MappedFile> create_bloom_file(int fd, const std::string& path, const BloomGeometry& geometry) {
    geometry.validate();
    std::vector<uint8_t> params;
    {
        ByteWriter w(params);
        BloomFilter::write_params(w, geometry);
    }
    std::vector<uint8_t> prefix;
    const uint64_t payload = BloomFilter::payload_length(geometry);
    {
        ByteWriter w(prefix);
        write_frame_prefix(w, FilterType::Bloom, params, payload);
    }
    return MappedFile::create(fd, path, prefix, prefix.size() + payload + kChecksumSize);
}

}  // namespace bloomkit
