// The one binary framing shared by every filter type (docs/FORMAT.md).
//
//   offset  size  field
//        0     8  magic "\x89BKF\r\n\x1a\n"
//        8     2  format version (u16: 2 is written, 1 and 2 are read)
//       10     2  type tag (u16, FilterType)
//       12     4  params length P (u32, at most kMaxParamsLength)
//       16     8  payload length L (u64)
//       24     P  params  (type-specific, little-endian fields)
//     24+P     Z  version 2: zero bytes up to the next multiple of 64
//                 (Z = (-(24+P)) mod 64); version 1: none (Z = 0)
//   24+P+Z     L  payload (type-specific)
// 24+P+Z+L     8  checksum: low 64 bits of MurmurHash3_x64_128(bytes [0, 24+P+Z+L), kChecksumSeed)
//
// All integers are little-endian. A frame is exactly 32 + P + Z + L bytes
// long; anything else is rejected. Version 2 starts the payload at a 64-byte
// aligned offset, so a frame read or mapped at an aligned address has its
// bit arrays on cache-line boundaries. parse_frame() checks magic, version,
// lengths against the real buffer size, the padding and the checksum before
// any filter sees the params, so no allocation is ever sized from unchecked
// bytes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "hash.hpp"

namespace bloomkit {

// Raised for any byte string that is not a valid frame of the expected type.
class FormatError : public std::invalid_argument {
  public:
    explicit FormatError(const std::string& what) : std::invalid_argument(what) {}
};

enum class FilterType : uint16_t {
    Bloom = 1,
    CountingBloom = 2,
    ScalableBloom = 3,
    Cuckoo = 4,
};

inline const char* filter_type_name(FilterType type) {
    switch (type) {
        case FilterType::Bloom: return "BloomFilter";
        case FilterType::CountingBloom: return "CountingBloomFilter";
        case FilterType::ScalableBloom: return "ScalableBloomFilter";
        case FilterType::Cuckoo: return "CuckooFilter";
    }
    return "unknown";
}

constexpr uint8_t kMagic[8] = {0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n'};
constexpr uint16_t kFormatVersion = 2;        // written
constexpr uint16_t kOldestFormatVersion = 1;  // still read
constexpr size_t kHeaderSize = 24;
constexpr size_t kPayloadAlignment = 64;
constexpr size_t kChecksumSize = 8;
constexpr uint32_t kMaxParamsLength = 4096;
constexpr uint32_t kChecksumSeed = 0x424b4631;  // "BKF1"

// Bytes of zero padding between the params and the payload.
inline size_t payload_padding(uint16_t version, size_t params_length) {
    if (version < 2) return 0;
    return (kPayloadAlignment - (kHeaderSize + params_length) % kPayloadAlignment) % kPayloadAlignment;
}

inline uint64_t frame_checksum(const uint8_t* data, size_t len) {
    return murmur3_x64_128(data, len, kChecksumSeed).h1;
}

// Appends little-endian fields to a byte vector.
class ByteWriter {
  public:
    explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

    void u8(uint8_t v) { out_.push_back(v); }
    void u16(uint16_t v) { put_le(v, 2); }
    void u32(uint32_t v) { put_le(v, 4); }
    void u64(uint64_t v) { put_le(v, 8); }
    void f64(double v) {
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        u64(bits);
    }
    void bytes(const void* data, size_t len) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        out_.insert(out_.end(), p, p + len);
    }
    // An array of 64-bit words, little-endian on every host.
    void words(const uint64_t* words, size_t count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < count; ++i) u64(words[i]);
#else
        bytes(words, count * sizeof(uint64_t));
#endif
    }
    void zeros(size_t count) { out_.insert(out_.end(), count, uint8_t(0)); }
    size_t size() const { return out_.size(); }

  private:
    void put_le(uint64_t v, int width) {
        for (int i = 0; i < width; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
    std::vector<uint8_t>& out_;
};

// Reads little-endian fields from a bounded span; reading past the end is a
// FormatError naming what was being read.
class ByteReader {
  public:
    ByteReader(const uint8_t* data, size_t len) : data_(data), len_(len) {}

    uint8_t u8(const char* what) { return static_cast<uint8_t>(get_le(1, what)); }
    uint16_t u16(const char* what) { return static_cast<uint16_t>(get_le(2, what)); }
    uint32_t u32(const char* what) { return static_cast<uint32_t>(get_le(4, what)); }
    uint64_t u64(const char* what) { return get_le(8, what); }
    double f64(const char* what) {
        const uint64_t bits = u64(what);
        double v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
    const uint8_t* bytes(size_t count, const char* what) {
        require(count, what);
        const uint8_t* p = data_ + pos_;
        pos_ += count;
        return p;
    }
    void words(uint64_t* out, size_t count, const char* what) {
        if (count > remaining() / sizeof(uint64_t)) truncated(what);
        const uint8_t* p = bytes(count * sizeof(uint64_t), what);
        for (size_t i = 0; i < count; ++i) out[i] = detail::load_le64(p + 8 * i);
    }
    size_t remaining() const { return len_ - pos_; }
    size_t position() const { return pos_; }
    // Skips `count` bytes that must all be zero (alignment padding).
    void zeros(size_t count, const char* what) {
        const uint8_t* p = bytes(count, what);
        for (size_t i = 0; i < count; ++i)
            if (p[i] != 0) throw FormatError(std::string(what) + " is not zero");
    }
    // The params or payload must be consumed exactly.
    void expect_end(const char* what) const {
        if (pos_ != len_)
            throw FormatError(std::string(what) + " has " + std::to_string(len_ - pos_) +
                              " unexpected trailing bytes");
    }

  private:
    [[noreturn]] static void truncated(const char* what) {
        throw FormatError(std::string("truncated data while reading ") + what);
    }
    void require(size_t count, const char* what) const {
        if (count > len_ - pos_) truncated(what);
    }
    uint64_t get_le(int width, const char* what) {
        require(static_cast<size_t>(width), what);
        uint64_t v = 0;
        for (int i = 0; i < width; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
        pos_ += static_cast<size_t>(width);
        return v;
    }
    const uint8_t* data_;
    size_t len_;
    size_t pos_ = 0;
};

// Builds a complete frame from already-encoded params and payload writers.
// `write_params` and `write_payload` append to the writer they are given.
template <class WriteParams, class WritePayload>
std::vector<uint8_t> build_frame(FilterType type, uint64_t payload_length, WriteParams&& write_params,
                                 WritePayload&& write_payload) {
    std::vector<uint8_t> params;
    ByteWriter params_writer(params);
    write_params(params_writer);

    const size_t padding = payload_padding(kFormatVersion, params.size());
    std::vector<uint8_t> out;
    out.reserve(kHeaderSize + params.size() + padding + payload_length + kChecksumSize);
    ByteWriter w(out);
    w.bytes(kMagic, sizeof kMagic);
    w.u16(kFormatVersion);
    w.u16(static_cast<uint16_t>(type));
    w.u32(static_cast<uint32_t>(params.size()));
    w.u64(payload_length);
    w.bytes(params.data(), params.size());
    out.insert(out.end(), padding, uint8_t(0));
    const size_t payload_start = out.size();
    write_payload(w);
    if (out.size() - payload_start != payload_length)
        throw std::logic_error("payload length does not match what was written");
    w.u64(frame_checksum(out.data(), out.size()));
    return out;
}

// A validated frame: views into the caller's buffer.
struct Frame {
    uint16_t version;
    FilterType type;
    const uint8_t* params;
    size_t params_length;
    const uint8_t* payload;
    size_t payload_length;
};

// Reads just the type tag after checking magic and version; used to dispatch
// bloomkit.load() before the full validation done by parse_frame().
inline FilterType peek_type(const uint8_t* data, size_t len) {
    if (len < kHeaderSize + kChecksumSize)
        throw FormatError("not a bloomkit filter: " + std::to_string(len) + " bytes is shorter than the " +
                          std::to_string(kHeaderSize + kChecksumSize) + "-byte minimum frame");
    if (std::memcmp(data, kMagic, sizeof kMagic) != 0)
        throw FormatError("not a bloomkit filter: bad magic bytes");
    ByteReader r(data + 8, 4);
    const uint16_t version = r.u16("format version");
    if (version < kOldestFormatVersion || version > kFormatVersion)
        throw FormatError("unsupported format version " + std::to_string(version) + " (this bloomkit reads versions " +
                          std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) + ")");
    const uint16_t tag = r.u16("type tag");
    if (tag < 1 || tag > 4) throw FormatError("unknown filter type tag " + std::to_string(tag));
    return static_cast<FilterType>(tag);
}

inline Frame parse_frame(const uint8_t* data, size_t len, FilterType expected) {
    const FilterType type = peek_type(data, len);
    if (type != expected)
        throw FormatError(std::string("data holds a ") + filter_type_name(type) + ", not a " +
                          filter_type_name(expected));
    ByteReader r(data + 12, 12);
    const uint32_t params_length = r.u32("params length");
    const uint64_t payload_length = r.u64("payload length");
    if (params_length > kMaxParamsLength)
        throw FormatError("params length " + std::to_string(params_length) + " exceeds the maximum " +
                          std::to_string(kMaxParamsLength));
    const uint16_t version = static_cast<uint16_t>(data[8] | (data[9] << 8));
    const size_t padding = payload_padding(version, params_length);
    const uint64_t body = len - kHeaderSize - kChecksumSize;  // len >= 32 checked by peek_type
    if (uint64_t(params_length) + padding > body || payload_length != body - params_length - padding)
        throw FormatError("frame lengths (params " + std::to_string(params_length) + ", payload " +
                          std::to_string(payload_length) + ") do not match the " + std::to_string(len) +
                          "-byte buffer (truncated or extended data)");
    const uint64_t stored = detail::load_le64(data + len - kChecksumSize);
    if (stored != frame_checksum(data, len - kChecksumSize))
        throw FormatError("checksum mismatch: the data is corrupt");
    const uint8_t* pad = data + kHeaderSize + params_length;
    for (size_t i = 0; i < padding; ++i)
        if (pad[i] != 0) throw FormatError("padding before the payload is not zero");
    return Frame{version, type, data + kHeaderSize, params_length, pad + padding, static_cast<size_t>(payload_length)};
}

// Shared parameter checks for deserialization, with messages that say what
// is allowed.
inline void check_error_rate_field(double error_rate) {
    if (!(error_rate > 0.0 && error_rate < 1.0))
        throw FormatError("stored error_rate " + std::to_string(error_rate) + " is outside (0, 1)");
}

inline void check_seed_field(uint64_t seed) {
    if (seed > 0xffffffffULL) throw FormatError("stored seed " + std::to_string(seed) + " is outside [0, 2**32)");
}

}  // namespace bloomkit
