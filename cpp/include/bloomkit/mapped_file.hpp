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
//   "w+"  fills a new, empty file (the caller's temporary file, renamed over
//         the path afterwards: _mapped.py): its whole size is reserved with
//         posix_fallocate first, so a full disk is an ENOSPC here and never
//         a SIGBUS at a later write into a page the disk cannot hold; then
//         header, params and padding are written and it is mapped as "r+".
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
// of it into memory (docs/decisions.md).
//
// Locks (docs/RELIABILITY.md, "Mapped files"). A mapping keeps its own
// descriptor of the file for its whole life, holding:
//   * a shared flock(): a page of a mapped file that is truncated away kills
//     every process mapping it with SIGBUS, so a cooperating process that
//     would truncate or rewrite the file in place takes flock(LOCK_EX) first
//     (and fails while anyone has it mapped); a file locked exclusively is
//     refused here rather than mapped while it is being rewritten;
//   * a writable mapping also a shared OFD lock (fcntl F_OFD_SETLK, which
//     belongs to the open file, not the process) on byte 0: the count of
//     writers that another process can test.
// A writer sets the open-for-writing bit of the type tag (format.hpp) when
// it maps the file. Whoever finishes the file (the checksum of the current
// bits, the bit cleared) must first turn the writers' lock into an
// exclusive one: flush() does so when it is the only writer, close() after
// dropping its own share, so the last writer to close finishes the file and
// an earlier one leaves the bit set for it. A writer that dies leaves the bit
// set: the bits are sound (every add is an atomic OR in the shared page
// cache) and a loader says "not closed cleanly" instead of "corrupt"
// (checksum_mismatch()); any later writer's close() recomputes the checksum.
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
#include <sys/file.h>
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
// The caller opens the file (so open errors are the usual OSErrors); the
// mapping keeps a duplicate of that descriptor for its locks until close().
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
    void close() {}
    void begin_writing() {}
#else
    // Maps the frame file open at `fd` (opened for reading, and for writing
    // unless mode is Read); the header is checked before mapping. `path`
    // names the file in messages.
    static std::shared_ptr<MappedFile> open(int fd, const std::string& path, MapMode mode) {
        const bool writable = mode != MapMode::Read;
        std::shared_ptr<MappedFile> file(new MappedFile(path, writable));
        file->lock(fd);
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
        return file;
    }

    // Fills the empty file open read-write at `fd` with `prefix` (header,
    // params, padding) followed by zeros up to `total` bytes, and maps it.
    // The disk space of all `total` bytes is reserved before anything is
    // written or mapped (an ENOSPC or EFBIG is thrown from there; the caller
    // removes its temporary file).
    static std::shared_ptr<MappedFile> create(int fd, const std::string& path, const std::vector<uint8_t>& prefix,
                                              uint64_t total) {
        std::shared_ptr<MappedFile> file(new MappedFile(path, true));
        if (total > static_cast<uint64_t>(~off_t(0) & ~(off_t(1) << (sizeof(off_t) * 8 - 1))))
            throw std::invalid_argument(path + ": a " + std::to_string(total) + "-byte file is too large");
        file->lock(fd);
        // posix_fallocate returns the error rather than setting errno.
        int error;
        do {
            error = ::posix_fallocate(file->fd_, 0, static_cast<off_t>(total));
        } while (error == EINTR);
        if (error != 0) {
            errno = error;
            file->fail(("cannot reserve " + std::to_string(total) + " bytes of disk space for").c_str());
        }
        size_t done = 0;
        while (done < prefix.size()) {
            const ssize_t n = ::pwrite(file->fd_, prefix.data() + done, prefix.size() - done, static_cast<off_t>(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) file->fail("cannot write");
            done += static_cast<size_t>(n);
        }
        file->map(total);
        return file;
    }

    // Flushes the mapping to the file (msync). The only writer also writes
    // the checksum of the current content first (reading the whole mapping),
    // so the file loads as it is now; with other writers the checksum is
    // left to the last one to close.
    void flush() {
        if (!writable_ || data_ == nullptr) return;
        if (fd_ >= 0 && !forked() && writer_share(F_WRLCK, false)) {
            write_checksum();
            writer_share(F_RDLCK, true);  // back to one writer among others before anything can fail
        }
        sync("cannot flush");
    }

    // Ends this mapping's use of the file: a writer syncs its pages, and the
    // last writer writes the checksum and clears the open-for-writing bit;
    // then the locks are released. The pages stay mapped until the last
    // user lets go of this object. Idempotent.
    void close() {
        if (fd_ < 0) return;
        struct Release {
            int& fd;
            ~Release() {
                ::close(fd);  // releases every lock this descriptor holds
                fd = -1;
            }
        } release{fd_};
        if (writable_ && data_ != nullptr) {
            sync("cannot flush");
            if (forked()) return;  // the opener's share of the lock is not this process's to drop
            writer_share(F_UNLCK, true);
            if (writer_share(F_WRLCK, false)) {
                set_open_for_writing(false);
                write_checksum();
                sync("cannot flush");
            }
        }
    }

    // Records in the file that it is open for writing: the type tag bit is
    // set and the header page synced before any bit of the filter can
    // change, so even after a power loss the file never holds new bits
    // under a header that claims a clean close. map_bloom() calls it once
    // the file has passed every check (a rejected file is left as it was).
    void begin_writing() {
        if (!writable_ || data_ == nullptr) return;
        set_open_for_writing(true);
        if (::msync(data_, kHeaderSize, MS_SYNC) != 0) fail("cannot flush");
    }

    ~MappedFile() {
        if (data_ != nullptr) ::munmap(data_, size_);
        if (fd_ >= 0) ::close(fd_);
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

    // Takes this mapping's own descriptor of the file and its locks (above):
    // the shared flock without waiting (a file locked exclusively is being
    // rewritten: refused), a writer's share of byte 0 waiting for a closing
    // writer to finish the checksum.
    void lock(int fd) {
        opener_ = ::getpid();
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (fd_ < 0) fail("cannot duplicate the descriptor of");
        while (::flock(fd_, LOCK_SH | LOCK_NB) != 0) {
            if (errno == EINTR) continue;
            if (errno == EWOULDBLOCK)
                throw std::system_error(errno, std::generic_category(),
                                        path_ +
                                            " is locked exclusively by another process (being rewritten in "
                                            "place); not mapped");
            fail("cannot lock");
        }
        if (writable_) writer_share(F_RDLCK, true);
    }

    // The writers' lock on byte 0 (F_RDLCK: one writer among others, F_WRLCK:
    // the only one, F_UNLCK: none). Without waiting, false when another
    // writer's lock is in the way. Without OFD locks (not Linux) there is no
    // count of writers: every writer acts as the only one.
    bool writer_share(short type, bool wait) {
#if defined(F_OFD_SETLK)
        struct flock range {};
        range.l_type = type;
        range.l_whence = SEEK_SET;
        range.l_start = 0;
        range.l_len = 1;
        while (::fcntl(fd_, wait ? F_OFD_SETLKW : F_OFD_SETLK, &range) != 0) {
            if (errno == EINTR) continue;
            if (!wait && (errno == EAGAIN || errno == EACCES)) return false;
            fail("cannot lock");
        }
#else
        (void)type;
        (void)wait;
#endif
        return true;
    }

    // A child forked after the file was mapped shares this descriptor's open
    // file, so its OFD locks too: dropping or converting them would change
    // the opener's. A child's flush() and close() only sync; the opener (or
    // another writer) finishes the file.
    bool forked() const { return static_cast<int64_t>(::getpid()) != opener_; }

    void set_open_for_writing(bool open) {
        uint8_t& tag_high = data_[kTypeTagOffset + 1];
        const auto bit = static_cast<uint8_t>(kOpenForWritingFlag >> 8);
        tag_high = open ? static_cast<uint8_t>(tag_high | bit) : static_cast<uint8_t>(tag_high & ~bit);
    }

    void write_checksum() {
        const uint64_t value = frame_checksum(data_, size_ - kChecksumSize);
        for (size_t i = 0; i < kChecksumSize; ++i)
            data_[size_ - kChecksumSize + i] = static_cast<uint8_t>(value >> (8 * i));
    }

    void sync(const char* what) {
        if (::msync(data_, size_, MS_SYNC) != 0) fail(what);
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
    int fd_ = -1;         // this mapping's own descriptor, holding its locks until close()
    int64_t opener_ = 0;  // the process that mapped the file (forked())
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
    const Frame frame =
        parse_mappable_frame(file->data(), static_cast<size_t>(file->size()), FilterType::Bloom, checksum);
    // The mapping is writable exactly when access is Shared; BloomFilter
    // refuses every write to ReadOnly storage before it happens.
    BloomFilter filter = BloomFilter::in_place(frame, [&](uint64_t* words, uint64_t count) {
        return WordStorage::borrow(words, count, file, file->access(), file->writer_lock());
    });
    file->begin_writing();
    return filter;
}

// A new file for an empty BloomFilter of `geometry` at `path`: its disk
// space reserved, the frame prefix written, then mapped writable;
// map_bloom() makes the filter. Nothing of the size of the filter is
// allocated in memory. The checksum is written by the first flush().
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
