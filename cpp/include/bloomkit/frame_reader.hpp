// Reading a frame (format.hpp, docs/FORMAT.md) from any byte source — a
// span of memory or a file descriptor — straight into the filter's own
// storage: the one load path of every filter type.
//
// A loader never holds the frame and the filter at once. The header is read
// and checked first (magic, version, type, lengths against the source's
// size when it is known), then the params, then the payload field by field,
// with every array read directly into the buffer the filter keeps. Each
// byte passes through the checksum (Murmur3Stream) on its way, and the
// filter is handed out only after the stored checksum has matched and the
// source has ended exactly where the header said it would.
//
// Every allocation a loader makes is bounded by the declared payload
// length, which the filter checks against its params before allocating
// (a span's or a regular file's declared length equals its real size; for
// a pipe the caller bounds it, bloomkit/_io.py). Errors keep the
// precedence of a whole-buffer check: when the params or payload are
// rejected, the rest of the frame is hashed (not stored) and a checksum
// mismatch, if any, is what is reported, so a corrupt frame always says
// "checksum mismatch" whatever its corruption happens to look like.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "format.hpp"

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

namespace bloomkit {

// Where a frame is read from.
class ByteSource {
  public:
    virtual ~ByteSource() = default;
    // Reads up to `len` bytes into `out`; returns how many, 0 only at the
    // end of the data. An I/O error throws std::system_error.
    virtual size_t read_some(uint8_t* out, size_t len) = 0;
    // The total number of bytes the source holds, when it is known in
    // advance (memory, a regular file); false otherwise (a pipe).
    virtual bool known_size(uint64_t& size) const = 0;
};

// Reads until `len` bytes or the end of the data; returns how many.
inline size_t read_up_to(ByteSource& source, uint8_t* out, size_t len) {
    size_t got = 0;
    while (got < len) {
        const size_t n = source.read_some(out + got, len - got);
        if (n == 0) break;
        got += n;
    }
    return got;
}

// Bytes in memory the caller owns (from_bytes, unpickling).
class SpanSource : public ByteSource {
  public:
    SpanSource(const uint8_t* data, size_t len) : data_(data), len_(len) {}
    size_t read_some(uint8_t* out, size_t len) override {
        const size_t n = std::min(len, len_ - pos_);
        if (n > 0) std::memcpy(out, data_ + pos_, n);
        pos_ += n;
        return n;
    }
    bool known_size(uint64_t& size) const override {
        size = len_;
        return true;
    }

  private:
    const uint8_t* data_;
    size_t len_;
    size_t pos_ = 0;
};

// An open file, read from offset 0 whatever its position when it is a
// regular file (pread; Windows: a seek to 0 first), else sequentially from
// where it is. Small reads (fields) go through a buffer; large ones (bit
// arrays, tables) go straight to their destination.
class FdSource : public ByteSource {
  public:
    explicit FdSource(int fd) : fd_(fd) {
#if defined(_WIN32)
        struct _stat64 info;
        if (::_fstat64(fd, &info) != 0) throw std::system_error(errno, std::generic_category(), "fstat");
        regular_ = (info.st_mode & _S_IFMT) == _S_IFREG;
        if (regular_ && ::_lseeki64(fd, 0, SEEK_SET) < 0)
            throw std::system_error(errno, std::generic_category(), "seeking in the filter file");
#else
        struct stat info;
        if (::fstat(fd, &info) != 0) throw std::system_error(errno, std::generic_category(), "fstat");
        regular_ = S_ISREG(info.st_mode);
#endif
        size_ = regular_ ? static_cast<uint64_t>(info.st_size) : 0;
    }
    size_t read_some(uint8_t* out, size_t len) override {
        if (begin_ == end_) {
            if (len >= kBuffer) return raw_read(out, len);
            begin_ = 0;
            end_ = raw_read(buffer_.data(), kBuffer);
        }
        const size_t n = std::min(len, end_ - begin_);
        std::memcpy(out, buffer_.data() + begin_, n);
        begin_ += n;
        return n;
    }
    bool known_size(uint64_t& size) const override {
        size = size_;
        return regular_;
    }

  private:
    static constexpr size_t kBuffer = size_t(1) << 16;
    size_t raw_read(uint8_t* out, size_t len) {
        len = std::min(len, size_t(1) << 30);
        for (;;) {
#if defined(_WIN32)
            const int n = ::_read(fd_, out, static_cast<unsigned>(len));
#else
            const ssize_t n = regular_ ? ::pread(fd_, out, len, static_cast<off_t>(offset_)) : ::read(fd_, out, len);
#endif
            if (n >= 0) {
                offset_ += static_cast<uint64_t>(n);
                return static_cast<size_t>(n);
            }
            if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "reading the filter file");
        }
    }
    int fd_;
    bool regular_ = false;
    uint64_t size_ = 0;
    uint64_t offset_ = 0;
    std::vector<uint8_t> buffer_ = std::vector<uint8_t>(kBuffer);
    size_t begin_ = 0, end_ = 0;
};

// Reads exactly `length` bytes of a source, as little-endian fields or
// straight into the caller's arrays, each byte through `hash` (if any).
// Asking for more than is left, or a source that ends early, is a
// FormatError "truncated data while reading <what>" (ByteReader's message).
class StreamReader : public FieldReader<StreamReader> {
  public:
    StreamReader(ByteSource& source, uint64_t length, Murmur3Stream* hash)
        : source_(&source), remaining_(length), hash_(hash) {}

    // `count` bytes into `out`.
    void bytes(uint8_t* out, uint64_t count, const char* what) {
        if (count > remaining_) truncated(what);
        while (count > 0) {
            const size_t got = source_->read_some(out, static_cast<size_t>(std::min<uint64_t>(count, kMaxStep)));
            if (got == 0) truncated(what);
            if (hash_ != nullptr) hash_->update(out, got);
            out += got;
            count -= got;
            remaining_ -= got;
        }
    }
    // `count` little-endian 64-bit words into `out`.
    void words(uint64_t* out, uint64_t count, const char* what) {
        if (count > remaining_ / sizeof(uint64_t)) truncated(what);
        bytes(reinterpret_cast<uint8_t*>(out), count * sizeof(uint64_t), what);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (uint64_t i = 0; i < count; ++i) out[i] = detail::load_le64(reinterpret_cast<const uint8_t*>(out + i));
#endif
    }
    // Skips `count` bytes that must all be zero (alignment padding).
    void zeros(uint64_t count, const char* what) {
        uint8_t chunk[256];
        while (count > 0) {
            const size_t step = static_cast<size_t>(std::min<uint64_t>(count, sizeof chunk));
            bytes(chunk, step, what);
            for (size_t i = 0; i < step; ++i)
                if (chunk[i] != 0) throw FormatError(std::string(what) + " is not zero");
            count -= step;
        }
    }
    // Reads and discards what is left (through the hash); false if the
    // source ends first.
    bool skip_rest() {
        uint8_t chunk[4096];
        while (remaining_ > 0) {
            const size_t got =
                source_->read_some(chunk, static_cast<size_t>(std::min<uint64_t>(remaining_, sizeof chunk)));
            if (got == 0) return false;
            if (hash_ != nullptr) hash_->update(chunk, got);
            remaining_ -= got;
        }
        return true;
    }
    uint64_t remaining() const { return remaining_; }
    void expect_end(const char* what) const {
        if (remaining_ != 0)
            throw FormatError(std::string(what) + " has " + std::to_string(remaining_) + " unexpected trailing bytes");
    }

  private:
    friend class FieldReader<StreamReader>;
    static constexpr uint64_t kMaxStep = uint64_t(1) << 30;
    [[noreturn]] static void truncated(const char* what) {
        throw FormatError(std::string("truncated data while reading ") + what);
    }
    uint64_t get_le(int width, const char* what) {
        uint8_t le[8];
        bytes(le, static_cast<uint64_t>(width), what);
        uint64_t v = 0;
        for (int i = 0; i < width; ++i) v |= uint64_t(le[i]) << (8 * i);
        return v;
    }
    ByteSource* source_;
    uint64_t remaining_;
    Murmur3Stream* hash_;
};

// What the caller of read_frame() learns about the frame besides the filter.
struct FrameInfo {
    uint16_t version = 0;
    bool keyed = false;
    Hash128 key_check{0, 0};  // keyed frames only
};

// One frame being read: the header (checked on construction), then the
// params, then the payload through payload(), then finish(). Used through
// read_frame() below, which keeps the order and the error precedence.
class FrameReader {
  public:
    FrameReader(ByteSource& source, FilterType expected, Checksum checksum = Checksum::Verify)
        : source_(source), verify_(checksum == Checksum::Verify) {
        uint64_t size = 0;
        const bool sized = source.known_size(size);
        // The same checks, messages and order as parse_frame() on a buffer.
        if (sized) check_minimum_frame_size(size);
        uint8_t header[kHeaderSize];
        header_ = parse_header(header, read_up_to(source, header, kHeaderSize));
        check_header_for(header_, expected, sized ? &size : nullptr);
        hash_.update(header, kHeaderSize);
        info_.version = header_.version;
        info_.keyed = header_.keyed;
    }
    FrameReader(const FrameReader&) = delete;
    FrameReader& operator=(const FrameReader&) = delete;

    // Reads the params (at most kMaxParamsLength bytes) and the padding.
    void read_params() {
        params_.resize(header_.params_length);
        StreamReader r(source_, uint64_t(header_.params_length) + header_.padding, &hash_);
        r.bytes(params_.data(), params_.size(), "params");
        r.zeros(header_.padding, "padding before the payload");
        if (header_.keyed) info_.key_check = {detail::load_le64(params_.data()), detail::load_le64(params_.data() + 8)};
        payload_ = StreamReader(source_, header_.payload_length, &hash_);
    }

    const FrameInfo& info() const { return info_; }
    uint16_t version() const { return header_.version; }
    // The type's params (after a keyed frame's key check).
    ByteReader params() const {
        const size_t skip = header_.keyed ? kKeyCheckSize : 0;
        return ByteReader(params_.data() + skip, params_.size() - skip);
    }
    uint64_t payload_length() const { return header_.payload_length; }
    StreamReader& payload() { return payload_; }

    // The payload must have been read exactly; then the checksum must match
    // (when verified) and the source end.
    void finish() {
        payload_.expect_end("payload");
        const uint64_t computed = hash_.digest().h1;
        checked_ = true;
        StreamReader tail(source_, kChecksumSize, nullptr);
        if (tail.u64("checksum") != computed && verify_) throw checksum_mismatch(header_);
        uint8_t extra;
        if (source_.read_some(&extra, 1) != 0)
            throw FormatError("extended data: more bytes follow the " + std::to_string(header_.frame_length) +
                              "-byte frame the header declares");
    }

    // After the params or payload were rejected: hashes the rest of the
    // frame and throws the checksum mismatch, if there is one, in place of
    // the caller's error (a whole-buffer check would have found it first).
    void prefer_checksum_error() {
        if (checked_ || !verify_) return;
        checked_ = true;
        StreamReader rest(source_, header_.frame_length - kChecksumSize - hash_.length(), &hash_);
        if (!rest.skip_rest()) return;  // truncated: the caller's error says so
        const uint64_t computed = hash_.digest().h1;
        uint8_t stored[kChecksumSize];
        if (read_up_to(source_, stored, kChecksumSize) < kChecksumSize) return;
        if (detail::load_le64(stored) != computed) throw checksum_mismatch(header_);
    }

  private:
    ByteSource& source_;
    bool verify_;
    FrameHeader header_{};
    FrameInfo info_;
    Murmur3Stream hash_{kChecksumSeed};
    std::vector<uint8_t> params_;
    StreamReader payload_{source_, 0, nullptr};
    bool checked_ = false;
};

// The filter of type Core in the frame `source` holds, read straight into
// its storage (Core::read_from(FrameReader&) reads the params and payload),
// returned only once the checksum has matched. `info`, if given, receives
// the frame's version and key check. Checksum::Skip is for a frame whose
// arrays were read after its checksum was computed (a protocol 5 pickle of
// a filter being written, bindings/common.hpp): every other check runs.
template <class Core>
Core read_frame(ByteSource& source, FrameInfo* info = nullptr, Checksum checksum = Checksum::Verify) {
    FrameReader frame(source, Core::kFrameType, checksum);
    try {
        frame.read_params();
        Core core = Core::read_from(frame);
        frame.finish();
        if (info != nullptr) *info = frame.info();
        return core;
    } catch (const FormatError&) {
        frame.prefer_checksum_error();
        throw;
    }
}

}  // namespace bloomkit
