// Raw deflate streams (RFC 1951, no zlib or gzip wrapper) inflated with the
// zlib library into a caller's buffer of bounded size: ORC's ZLIB chunks.
//
// This directory holds the core's only headers that need a library: they
// include <zlib.h>, so they are kept out of the one-header-at-a-time checks
// and the test/fuzz globs over cpp/include/bloomkit/*.hpp, and built only
// where CMake finds zlib (find_package(ZLIB); BLOOMKIT_HAVE_ZLIB).
//
// What is accepted is exactly what Python's
// zlib.decompressobj(-15).decompress(chunk, capacity) accepts with `eof` set
// and no `unconsumed_tail` (bloomkit/orc.py): a stream that reaches its end
// having produced at most `capacity` bytes. Bytes after the stream's end are
// ignored, as Python keeps them in `unused_data`. Anything else — a data
// error, a stream that would produce more than `capacity` bytes, a stream
// cut short — is refused, with nothing allocated beyond the caller's buffer
// and the inflater's own state.
#pragma once

#include <zlib.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>

namespace bloomkit {

class RawDeflateInflater {
  public:
    RawDeflateInflater() { std::memset(&stream_, 0, sizeof stream_); }
    ~RawDeflateInflater() {
        if (ready_) inflateEnd(&stream_);
    }
    RawDeflateInflater(const RawDeflateInflater&) = delete;
    RawDeflateInflater& operator=(const RawDeflateInflater&) = delete;

    // The stream in `in` inflated into out[0, capacity): the bytes written,
    // or nullopt when it does not end within `capacity` bytes or is corrupt.
    // One inflater serves one thread; its state (about 7 KiB) is set up on
    // the first call and reset, not reallocated, for each later stream.
    std::optional<size_t> inflate(const uint8_t* in, size_t size, uint8_t* out, size_t capacity) {
        // zlib counts in uInt; ORC's chunks (23-bit lengths) and blocks
        // (at most 16 MiB) are far below it.
        if (size > UINT_MAX || capacity > UINT_MAX) return std::nullopt;
        start();
        stream_.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(in));
        stream_.avail_in = static_cast<uInt>(size);
        stream_.next_out = reinterpret_cast<Bytef*>(out);
        stream_.avail_out = static_cast<uInt>(capacity);
        // Z_FINISH: all the input is here; a stream that completes in this
        // call needs no sliding window, so zlib allocates none.
        const int result = ::inflate(&stream_, Z_FINISH);
        if (result != Z_STREAM_END) return std::nullopt;
        return capacity - stream_.avail_out;
    }

  private:
    void start() {
        if (ready_) {
            if (inflateReset(&stream_) != Z_OK) throw std::bad_alloc();
            return;
        }
        // windowBits -15: a raw deflate stream with a window of up to 32 KiB.
        const int result = inflateInit2(&stream_, -15);
        if (result == Z_MEM_ERROR) throw std::bad_alloc();
        if (result != Z_OK) throw std::runtime_error("zlib refused to start an inflater (version mismatch?)");
        ready_ = true;
    }

    z_stream stream_;
    bool ready_ = false;
};

}  // namespace bloomkit
