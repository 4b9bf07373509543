// The zlib inflater of ORC's ZLIB chunks (bloomkit/zlib/raw_deflate.hpp):
// it accepts exactly what Python's zlib.decompressobj(-15).decompress(chunk,
// capacity) reads to the stream's end — the bytes deflate wrote, at most
// `capacity` of them, bytes after the end ignored — and refuses a corrupt,
// cut or oversized stream; one inflater serves stream after stream. Built
// only where CMake finds zlib (BLOOMKIT_HAVE_ZLIB).
#if defined(BLOOMKIT_HAVE_ZLIB)
#include <doctest/doctest.h>

#include <bloomkit/zlib/raw_deflate.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "helpers.hpp"

using bloomkit::RawDeflateInflater;
using bloomkit_test::deflate_raw;

namespace {

std::vector<uint8_t> sample(size_t n) {
    std::vector<uint8_t> data(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        data[i] = static_cast<uint8_t>(i % 7 == 0 ? x : i % 31);  // compressible, not trivially
    }
    return data;
}

std::optional<std::vector<uint8_t>> inflate(RawDeflateInflater& inflater, const std::vector<uint8_t>& stream,
                                            size_t capacity) {
    std::vector<uint8_t> out(capacity + 16, 0xEE);
    const std::optional<size_t> n = inflater.inflate(stream.data(), stream.size(), out.data(), capacity);
    for (size_t i = capacity; i < out.size(); ++i) REQUIRE(out[i] == 0xEE);  // nothing past capacity
    if (!n) return std::nullopt;
    out.resize(*n);
    return out;
}

}  // namespace

TEST_CASE("raw deflate: a stream inflates to the bytes deflate was given, up to exactly the capacity") {
    RawDeflateInflater inflater;
    for (size_t n : {size_t(0), size_t(1), size_t(100), size_t(65536), size_t(262144)}) {
        const std::vector<uint8_t> data = sample(n);
        for (int level : {0, 1, 9}) {
            const std::vector<uint8_t> stream = deflate_raw(data, level);
            CHECK(inflate(inflater, stream, n) == data);          // exactly the capacity
            CHECK(inflate(inflater, stream, n + 4096) == data);   // room to spare
            if (n > 0) CHECK(!inflate(inflater, stream, n - 1));  // one byte over: refused
        }
    }
    // 1 MiB of zeros (a 1 KiB stream) into a 4 KiB block: refused, no more written.
    const std::vector<uint8_t> bomb = deflate_raw(std::vector<uint8_t>(1 << 20));
    CHECK(bomb.size() < 2048);
    CHECK(!inflate(inflater, bomb, 4096));
}

TEST_CASE("raw deflate: cut, corrupt, wrapped or empty streams are refused; bytes after the end are not read") {
    RawDeflateInflater inflater;
    const std::vector<uint8_t> data = sample(20000);
    const std::vector<uint8_t> stream = deflate_raw(data);
    for (size_t cut = 0; cut < stream.size(); ++cut)  // every strict prefix ends inside the stream
        CHECK(!inflate(inflater, std::vector<uint8_t>(stream.begin(), stream.begin() + cut), data.size()));
    CHECK(!inflate(inflater, {0x07, 0x00}, 100));                    // a final block of the reserved type 3
    CHECK(!inflate(inflater, {0x01, 0x05, 0x00, 0x05, 0x00}, 100));  // stored length whose complement fails
    CHECK(!inflate(inflater, std::vector<uint8_t>(64, 0xFF), 100));
    // A zlib-wrapped stream (0x78 0x9C header) is not raw deflate.
    std::vector<uint8_t> wrapped(compressBound(static_cast<uLong>(data.size())));
    uLongf wrapped_size = static_cast<uLongf>(wrapped.size());
    REQUIRE(compress(wrapped.data(), &wrapped_size, data.data(), static_cast<uLong>(data.size())) == Z_OK);
    wrapped.resize(wrapped_size);
    CHECK(!inflate(inflater, wrapped, data.size()));
    // An empty final stored block is a whole stream of no bytes.
    CHECK(inflate(inflater, {0x01, 0x00, 0x00, 0xFF, 0xFF}, 0) == std::vector<uint8_t>{});
    // Bytes after the stream's end are ignored (Python keeps them as unused_data).
    std::vector<uint8_t> trailing = stream;
    for (uint8_t b : {0x00, 0xFF, 0x07, 0x42}) trailing.push_back(b);
    CHECK(inflate(inflater, trailing, data.size()) == data);
    // Every single-bit flip: refused, or a whole stream of at most the capacity.
    size_t refused = 0;
    for (size_t at = 0; at < stream.size(); at += 3) {
        std::vector<uint8_t> bad = stream;
        bad[at] ^= static_cast<uint8_t>(1u << (at % 8));
        const auto out = inflate(inflater, bad, data.size());  // never writes past the capacity
        if (!out) ++refused;
    }
    CHECK(refused > 0);
    // After all of that, the same inflater still reads a good stream.
    CHECK(inflate(inflater, stream, data.size()) == data);
}
#endif
