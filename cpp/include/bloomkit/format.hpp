// The one binary framing shared by every filter type (docs/FORMAT.md).
//
//   offset  size  field
//        0     8  magic "\x89BKF\r\n\x1a\n"
//        8     2  format version (u16: 2 is written, 1 and 2 are read)
//       10     2  type tag (u16, FilterType of filter_types.hpp; bit 15 set = keyed frame)
//       12     4  params length P (u32, at most kMaxParamsLength)
//       16     8  payload length L (u64)
//       24     P  params  (type-specific, little-endian fields)
//     24+P     Z  version 2: zero bytes up to the next multiple of 64
//                 (Z = (-(24+P)) mod 64); version 1: none (Z = 0)
//   24+P+Z     L  payload (type-specific)
// 24+P+Z+L     8  checksum: low 64 bits of MurmurHash3_x64_128(bytes [0, 24+P+Z+L), kChecksumSeed)
//
// A keyed frame (a filter built with secret_key=, docs/RELIABILITY.md) has
// bit 15 of the type tag set and its params start with a 16-byte key check
// (KeyHashing::key_check, keys.hpp); the type's own params follow. Readers
// older than the flag reject such a frame as an unknown type.
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

#include "filter_types.hpp"
#include "hash.hpp"

namespace bloomkit {

// Raised for any byte string that is not a valid frame of the expected type.
class FormatError : public std::invalid_argument {
  public:
    explicit FormatError(const std::string& what) : std::invalid_argument(what) {}
};

// Runs `params.validate()` on parameters read from bytes, so that what the
// constructor would refuse (std::invalid_argument) is reported as a corrupt
// frame: FormatError("<where>invalid stored parameters: ..."). Every loader
// bounds its stored parameters this way before allocating anything.
template <class Params>
void check_stored(const Params& params, const std::string& where = std::string()) {
    try {
        params.validate();
    } catch (const std::invalid_argument& e) {
        throw FormatError(where + "invalid stored parameters: " + e.what());
    }
}

constexpr uint8_t kMagic[8] = {0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n'};
constexpr uint16_t kFormatVersion = 2;        // written
constexpr uint16_t kOldestFormatVersion = 1;  // still read
constexpr size_t kHeaderSize = 24;
constexpr size_t kPayloadAlignment = 64;
constexpr size_t kChecksumSize = 8;
constexpr uint32_t kMaxParamsLength = 4096;
constexpr uint32_t kChecksumSeed = 0x424b4631;  // "BKF1"
constexpr uint16_t kKeyedFlag = 0x8000;         // type tag bit of a keyed frame
// Type tag bit set in a mapped file while a process has it open for writing
// (mapped_file.hpp); never in a serialized frame. Covered by the checksum
// like every header byte: setting it leaves the stored checksum stale until
// a writer's flush() or close() rewrites it.
constexpr uint16_t kOpenForWritingFlag = 0x4000;
constexpr size_t kTypeTagOffset = 10;
constexpr size_t kKeyCheckSize = 16;

// Bytes of zero padding between the params and the payload.
inline size_t payload_padding(uint16_t version, size_t params_length) {
    if (version < 2) return 0;
    return (kPayloadAlignment - (kHeaderSize + params_length) % kPayloadAlignment) % kPayloadAlignment;
}

inline uint64_t frame_checksum(const uint8_t* data, size_t len) { return murmur3_x64_128(data, len, kChecksumSeed).h1; }

// Where a serialized frame goes: a byte vector, a preallocated buffer, a
// file descriptor (the bindings' sinks), or a checksum on the way.
class FrameSink {
  public:
    virtual ~FrameSink() = default;
    virtual void write(const uint8_t* data, size_t len) = 0;
    // Set by the owner of a keyed filter before it serializes into this
    // sink: write_frame() then writes a keyed frame with this key check.
    // The filter cores know nothing of keys (keys are hashed before they
    // reach a core), so the key check travels with the sink.
    const Hash128* key_check = nullptr;
};

// Appends to a byte vector.
class VectorSink : public FrameSink {
  public:
    explicit VectorSink(std::vector<uint8_t>& out) : out_(out) {}
    void write(const uint8_t* data, size_t len) override { out_.insert(out_.end(), data, data + len); }

  private:
    std::vector<uint8_t>& out_;
};

// Counts bytes only: a dry run that sizes a frame (large blocks cost O(1)).
class CountingSink : public FrameSink {
  public:
    void write(const uint8_t*, size_t len) override { count_ += len; }
    uint64_t count() const { return count_; }

  private:
    uint64_t count_ = 0;
};

// MurmurHash3_x64_128 of data given in pieces: the frame checksum computed
// while a frame is streamed, bit-identical to murmur3_x64_128 of the whole.
class Murmur3Stream {
  public:
    explicit Murmur3Stream(uint32_t seed) : h1_(seed), h2_(seed) {}
    void update(const uint8_t* p, size_t n) {
        length_ += n;
        if (pending_ > 0) {
            const size_t take = n < 16 - pending_ ? n : 16 - pending_;
            std::memcpy(block_ + pending_, p, take);
            pending_ += take;
            p += take;
            n -= take;
            if (pending_ < 16) return;
            detail::mix_block(h1_, h2_, block_);
            pending_ = 0;
        }
        for (; n >= 16; p += 16, n -= 16) detail::mix_block(h1_, h2_, p);
        std::memcpy(block_, p, n);
        pending_ = n;
    }
    Hash128 digest() const {
        uint64_t h1 = h1_, h2 = h2_;
        detail::mix_tail(h1, h2, block_, pending_);
        return detail::finalize(h1, h2, length_);
    }
    // Bytes hashed so far.
    uint64_t length() const { return length_; }

  private:
    uint64_t h1_, h2_;
    uint64_t length_ = 0;
    uint8_t block_[16] = {};
    size_t pending_ = 0;
};

// Writes little-endian fields to a sink (or straight into a byte vector),
// buffering small fields so a sink sees few, large writes.
class ByteWriter {
  public:
    explicit ByteWriter(std::vector<uint8_t>& out) : out_(&out) {}
    explicit ByteWriter(FrameSink& sink) : sink_(&sink) {}
    ByteWriter(const ByteWriter&) = delete;
    ByteWriter& operator=(const ByteWriter&) = delete;
    ~ByteWriter() { flush(); }

    void u8(uint8_t v) { bytes(&v, 1); }
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
        written_ += len;
        if (out_ != nullptr) {
            out_->insert(out_->end(), p, p + len);
            return;
        }
        if (used_ + len > kBuffer) flush();
        if (len >= kBuffer) {
            sink_->write(p, len);  // large blocks (bit arrays, tables) go through unbuffered
            return;
        }
        std::memcpy(buffer_ + used_, p, len);
        used_ += len;
    }
    // An array of 64-bit words, little-endian on every host.
    void words(const uint64_t* words, size_t count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < count; ++i) u64(words[i]);
#else
        bytes(words, count * sizeof(uint64_t));
#endif
    }
    // Bytes written so far.
    uint64_t size() const { return written_; }
    void flush() {
        if (sink_ != nullptr && used_ > 0) sink_->write(buffer_, used_);
        used_ = 0;
    }
    // `count` zero bytes (alignment padding).
    void zeros(size_t count) {
        static const uint8_t kZeros[256] = {};
        while (count > 0) {
            const size_t step = count < sizeof kZeros ? count : sizeof kZeros;
            bytes(kZeros, step);
            count -= step;
        }
    }

  private:
    static constexpr size_t kBuffer = 4096;
    void put_le(uint64_t v, int width) {
        uint8_t le[8];
        for (int i = 0; i < width; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
        bytes(le, static_cast<size_t>(width));
    }
    std::vector<uint8_t>* out_ = nullptr;
    FrameSink* sink_ = nullptr;
    uint64_t written_ = 0;
    uint8_t buffer_[kBuffer];
    size_t used_ = 0;
};

// The typed fields of a reader (ByteReader, frame_reader.hpp's StreamReader)
// whose get_le(width, what) reads one little-endian integer; `what` names the
// field in a truncation error.
template <class Reader>
class FieldReader {
  public:
    uint8_t u8(const char* what) { return static_cast<uint8_t>(self().get_le(1, what)); }
    uint16_t u16(const char* what) { return static_cast<uint16_t>(self().get_le(2, what)); }
    uint32_t u32(const char* what) { return static_cast<uint32_t>(self().get_le(4, what)); }
    uint64_t u64(const char* what) { return self().get_le(8, what); }
    double f64(const char* what) {
        const uint64_t bits = u64(what);
        double v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }

  private:
    Reader& self() { return static_cast<Reader&>(*this); }
};

// Reads little-endian fields from a bounded span; reading past the end is a
// FormatError naming what was being read.
class ByteReader : public FieldReader<ByteReader> {
  public:
    ByteReader(const uint8_t* data, size_t len) : data_(data), len_(len) {}

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
            throw FormatError(std::string(what) + " has " + std::to_string(len_ - pos_) + " unexpected trailing bytes");
    }

  private:
    friend class FieldReader<ByteReader>;
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

// Everything a frame holds before its payload: header, params, padding to
// the aligned payload offset. write_frame streams it; a file-backed filter
// (mapped_file.hpp) writes it and then only sizes the file for the payload.
// `key_check` is null for an unkeyed filter.
inline void write_frame_prefix(ByteWriter& w, FilterType type, const std::vector<uint8_t>& params,
                               uint64_t payload_length, const Hash128* key_check = nullptr) {
    const size_t params_length = params.size() + (key_check != nullptr ? kKeyCheckSize : 0);
    w.bytes(kMagic, sizeof kMagic);
    w.u16(kFormatVersion);
    w.u16(static_cast<uint16_t>(static_cast<uint16_t>(type) | (key_check != nullptr ? kKeyedFlag : 0)));
    w.u32(static_cast<uint32_t>(params_length));
    w.u64(payload_length);
    if (key_check != nullptr) {
        w.u64(key_check->h1);
        w.u64(key_check->h2);
    }
    w.bytes(params.data(), params.size());
    w.zeros(payload_padding(kFormatVersion, params_length));
}

// Streams a complete frame to `sink`: header, params and payload pass
// through the checksum on their way, so the frame never exists in memory as
// a whole (a save needs no second copy of the filter). `write_params` and
// `write_payload` append to the writer they are given.
template <class WriteParams, class WritePayload>
void write_frame(FrameSink& sink, FilterType type, uint64_t payload_length, WriteParams&& write_params,
                 WritePayload&& write_payload) {
    std::vector<uint8_t> params;
    {
        ByteWriter params_writer(params);
        write_params(params_writer);
    }
    struct Checked : FrameSink {
        FrameSink& next;
        Murmur3Stream hash{kChecksumSeed};
        explicit Checked(FrameSink& n) : next(n) {}
        void write(const uint8_t* data, size_t len) override {
            hash.update(data, len);
            next.write(data, len);
        }
    } checked(sink);
    {
        ByteWriter w(checked);
        write_frame_prefix(w, type, params, payload_length, sink.key_check);
        const uint64_t payload_start = w.size();
        write_payload(w);
        if (w.size() - payload_start != payload_length)
            throw std::logic_error("payload length does not match what was written");
    }
    uint8_t checksum[8];
    const uint64_t value = checked.hash.digest().h1;
    for (int i = 0; i < 8; ++i) checksum[i] = static_cast<uint8_t>(value >> (8 * i));
    sink.write(checksum, sizeof checksum);
}

// The whole frame of any core (which provides serialize_to(FrameSink&)) as
// a byte vector, sized by a dry run first so it is allocated once.
template <class Core>
std::vector<uint8_t> frame_bytes(const Core& core, const Hash128* key_check = nullptr) {
    CountingSink size;
    size.key_check = key_check;
    core.serialize_to(size);
    std::vector<uint8_t> out;
    out.reserve(size.count());
    VectorSink sink(out);
    sink.key_check = key_check;
    core.serialize_to(sink);
    return out;
}

// A validated frame: views into the caller's buffer.
struct Frame {
    uint16_t version;
    FilterType type;
    bool keyed;
    Hash128 key_check;      // keyed frames only
    const uint8_t* params;  // the type's params (after the key check)
    size_t params_length;
    const uint8_t* payload;
    size_t payload_length;
};

// What a frame's 24-byte header declares, checked on its own: magic,
// version, type tag, the params limit, and that the whole frame length fits
// in 64 bits. The one header parser: a file reader validates the header
// before reading (or allocating for) the rest, and parse_frame() starts here.
struct FrameHeader {
    uint16_t version;
    FilterType type;
    bool keyed;
    bool open_for_writing;   // a mapped file a writer has not closed (kOpenForWritingFlag)
    uint32_t params_length;  // including a keyed frame's key check
    uint64_t payload_length;
    size_t padding;
    uint64_t frame_length;  // header + params + padding + payload + checksum
};

inline FrameHeader parse_header(const uint8_t* data, size_t len) {
    if (len < kHeaderSize)
        throw FormatError("not a bloomkit filter: " + std::to_string(len) + " bytes is shorter than the " +
                          std::to_string(kHeaderSize) + "-byte header");
    if (std::memcmp(data, kMagic, sizeof kMagic) != 0) throw FormatError("not a bloomkit filter: bad magic bytes");
    ByteReader r(data + 8, kHeaderSize - 8);
    FrameHeader h;
    h.version = r.u16("format version");
    if (h.version < kOldestFormatVersion || h.version > kFormatVersion)
        throw FormatError("unsupported format version " + std::to_string(h.version) +
                          " (this bloomkit reads versions " + std::to_string(kOldestFormatVersion) + " to " +
                          std::to_string(kFormatVersion) + ")");
    const uint16_t raw_tag = r.u16("type tag");
    h.keyed = (raw_tag & kKeyedFlag) != 0;
    h.open_for_writing = (raw_tag & kOpenForWritingFlag) != 0;
    const uint16_t tag = raw_tag & static_cast<uint16_t>(~(kKeyedFlag | kOpenForWritingFlag));
    // Keyed frames and mapped files (so the open-for-writing bit) exist from
    // version 2 on.
    if (!is_filter_type_tag(tag) || ((h.keyed || h.open_for_writing) && h.version < 2))
        throw FormatError("unknown filter type tag " + std::to_string(raw_tag));
    h.type = static_cast<FilterType>(tag);
    h.params_length = r.u32("params length");
    h.payload_length = r.u64("payload length");
    if (h.params_length > kMaxParamsLength)
        throw FormatError("params length " + std::to_string(h.params_length) + " exceeds the maximum " +
                          std::to_string(kMaxParamsLength));
    if (h.keyed && h.params_length < kKeyCheckSize)
        throw FormatError("keyed frame has " + std::to_string(h.params_length) + " params bytes, fewer than its " +
                          std::to_string(kKeyCheckSize) + "-byte key check");
    h.padding = payload_padding(h.version, h.params_length);
    const uint64_t fixed = kHeaderSize + h.params_length + h.padding + kChecksumSize;
    if (h.payload_length > ~uint64_t(0) - fixed)
        throw FormatError("payload length " + std::to_string(h.payload_length) + " is impossibly large");
    h.frame_length = fixed + h.payload_length;
    return h;
}

// The error for a stored checksum that does not match. A file whose writer
// never closed it (killed, crashed, or still writing) has sound bits and a
// checksum older than its last writes: that is said in its own words, and
// how to recompute it; only a frame that was closed is called corrupt.
inline FormatError checksum_mismatch(const FrameHeader& h) {
    if (h.open_for_writing)
        return FormatError(
            "not closed cleanly: the file was open for writing and its writer ended without close() (or is "
            "still writing); the bits are valid but the checksum predates the last writes. "
            "BloomFilter.open(path, 'r+').close() recomputes it");
    return FormatError("checksum mismatch: the data is corrupt");
}

// Reads just the type after checking the header; used to dispatch
// bloomkit.load() before the full validation done by parse_frame().
// Data of a known size that cannot hold a frame is not a filter at all.
inline void check_minimum_frame_size(uint64_t size) {
    if (size < kHeaderSize + kChecksumSize)
        throw FormatError("not a bloomkit filter: " + std::to_string(size) + " bytes is shorter than the " +
                          std::to_string(kHeaderSize + kChecksumSize) + "-byte minimum frame");
}

// A parsed header against the type the caller loads and, when `size` is
// given, the real size of the data (parse_frame() and the streaming reader,
// frame_reader.hpp: one set of checks and messages).
inline void check_header_for(const FrameHeader& h, FilterType expected, const uint64_t* size) {
    if (h.type != expected)
        throw FormatError(std::string("data holds a ") + filter_type_name(h.type) + ", not a " +
                          filter_type_name(expected));
    if (size != nullptr && h.frame_length != *size)
        throw FormatError("frame lengths (params " + std::to_string(h.params_length) + ", payload " +
                          std::to_string(h.payload_length) + ") do not match the " + std::to_string(*size) +
                          "-byte buffer (truncated or extended data)");
}

inline FilterType peek_type(const uint8_t* data, size_t len) {
    check_minimum_frame_size(len);
    return parse_header(data, len).type;
}

// The whole frame length a 24-byte header declares (parse_header()).
inline uint64_t declared_frame_length(const uint8_t* header, size_t len) {
    return parse_header(header, len).frame_length;
}

// Whether parse_frame (or read_frame) checks the checksum. Skipping it is
// for mapped files (mapped_file.hpp, docs/decisions.md) and for the arrays a
// protocol 5 pickle reads after its checksum was computed (read_frame only;
// its other bytes carry their own check, bindings/common.hpp): every
// length, the padding and (in the filter's reader) every parameter are
// still checked, so a corrupt frame can give wrong answers but never an
// out-of-bounds access.
enum class Checksum { Verify, Skip };

inline Frame parse_frame(const uint8_t* data, size_t len, FilterType expected, Checksum checksum = Checksum::Verify) {
    check_minimum_frame_size(len);
    const FrameHeader h = parse_header(data, len);
    const uint64_t size = len;
    check_header_for(h, expected, &size);
    const uint64_t stored = detail::load_le64(data + len - kChecksumSize);
    if (checksum == Checksum::Verify && stored != frame_checksum(data, len - kChecksumSize)) throw checksum_mismatch(h);
    const uint8_t* pad = data + kHeaderSize + h.params_length;
    for (size_t i = 0; i < h.padding; ++i)
        if (pad[i] != 0) throw FormatError("padding before the payload is not zero");
    Frame frame{h.version,          h.type,          h.keyed,         {0, 0},
                data + kHeaderSize, h.params_length, pad + h.padding, static_cast<size_t>(h.payload_length)};
    if (h.keyed) {
        frame.key_check = {detail::load_le64(frame.params), detail::load_le64(frame.params + 8)};
        frame.params += kKeyCheckSize;
        frame.params_length -= kKeyCheckSize;
    }
    return frame;
}

// A frame a file-backed filter maps in place (mapped_file.hpp's map_bloom,
// rotating_bloom.hpp's map_rotating): parse_frame, then what mapping needs
// beyond a load. Keys are hashed by the bindings, which map no keyed filters
// (mapped without its key, a keyed filter would answer every query wrongly),
// and the payload's words are used where they lie, so they must be aligned.
inline Frame parse_mappable_frame(const uint8_t* data, size_t len, FilterType expected, Checksum checksum) {
    const Frame frame = parse_frame(data, len, expected, checksum);
    if (frame.keyed)
        throw FormatError(
            "the file holds a keyed filter (built with secret_key=), which cannot be opened as a "
            "file-backed filter; use bloomkit.load(path, secret_key=...)");
    if (reinterpret_cast<uintptr_t>(frame.payload) % kPayloadAlignment != 0)
        throw FormatError("the payload is not 64-byte aligned (a format version " + std::to_string(frame.version) +
                          " file); load() it and save() it again to map it");
    return frame;
}

// The key check of a frame that parse_frame() has accepted, or false for an
// unkeyed frame (the bindings compare it with the caller's secret key).
inline bool frame_key_check(const uint8_t* data, size_t len, Hash128& out) {
    const FrameHeader h = parse_header(data, len);
    if (!h.keyed) return false;
    if (len < kHeaderSize + kKeyCheckSize) throw FormatError("truncated data while reading key check");
    out = {detail::load_le64(data + kHeaderSize), detail::load_le64(data + kHeaderSize + 8)};
    return true;
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
