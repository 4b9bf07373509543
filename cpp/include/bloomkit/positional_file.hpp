// Files read by position for the lake-file walks (parquet_skip.hpp,
// orc_file_skip.hpp): a local file by its descriptor, or bytes in memory for
// the tests and the fuzzer, behind the same two calls (size, read_at).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

namespace bloomkit {

// A file read by position. read_at reads up to `length` bytes at `offset`
// and returns how many it got (fewer only at the end of the file); a failed
// read throws SystemErrorAt.
struct SystemErrorAt {
    int error;
};

// A regular file by its descriptor (pread, retried on EINTR; Windows: a
// seek then a read, each FdFile being read by one thread only).
class FdFile {
  public:
    // Opens `path` for reading without blocking (a FIFO never hangs the
    // walk) and refuses what is not a regular file, as Python's open and
    // seek would: a directory EISDIR, anything else ESPIPE.
    explicit FdFile(const std::string& path) {
#if defined(_WIN32)
        fd_ = ::_open(path.c_str(), _O_RDONLY | _O_BINARY);
        if (fd_ < 0) throw SystemErrorAt{errno};
        struct _stat64 st;
        if (::_fstat64(fd_, &st) != 0) fail(errno);
        if ((st.st_mode & _S_IFMT) == _S_IFDIR) fail(EISDIR);
        if ((st.st_mode & _S_IFMT) != _S_IFREG) fail(ESPIPE);
#else
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd_ < 0) throw SystemErrorAt{errno};
        struct stat st;
        if (::fstat(fd_, &st) != 0) fail(errno);
        if (S_ISDIR(st.st_mode)) fail(EISDIR);
        if (!S_ISREG(st.st_mode)) fail(ESPIPE);
#endif
        size_ = static_cast<uint64_t>(st.st_size);
    }
    FdFile(const FdFile&) = delete;
    FdFile& operator=(const FdFile&) = delete;
    ~FdFile() { close_fd(); }

    uint64_t size() const { return size_; }

    uint64_t read_at(uint64_t offset, uint64_t length, uint8_t* out) const {
        uint64_t got = 0;
        while (got < length) {
#if defined(_WIN32)
            if (::_lseeki64(fd_, static_cast<__int64>(offset + got), SEEK_SET) < 0) throw SystemErrorAt{errno};
            const uint64_t chunk = std::min<uint64_t>(length - got, uint64_t(1) << 30);
            const int n = ::_read(fd_, out + got, static_cast<unsigned>(chunk));
#else
            const ssize_t n =
                ::pread(fd_, out + got, static_cast<size_t>(length - got), static_cast<off_t>(offset + got));
#endif
            if (n < 0) {
                if (errno == EINTR) continue;
                throw SystemErrorAt{errno};
            }
            if (n == 0) break;
            got += static_cast<uint64_t>(n);
        }
        return got;
    }

  private:
    void close_fd() {
#if defined(_WIN32)
        ::_close(fd_);
#else
        ::close(fd_);
#endif
    }
    [[noreturn]] void fail(int error) {
        close_fd();
        throw SystemErrorAt{error};
    }
    int fd_ = -1;
    uint64_t size_ = 0;
};

// Bytes in memory as a file (tests, the fuzzer).
class MemoryFile {
  public:
    MemoryFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    uint64_t size() const { return size_; }
    uint64_t read_at(uint64_t offset, uint64_t length, uint8_t* out) const {
        if (offset >= size_) return 0;
        const uint64_t got = std::min<uint64_t>(length, size_ - offset);
        std::copy(data_ + offset, data_ + offset + got, out);
        return got;
    }

  private:
    const uint8_t* data_;
    size_t size_;
};

}  // namespace bloomkit
