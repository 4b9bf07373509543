// The protobuf wire format, only as far as ORC's messages need it.
//
// ORC stores its file tail, stripe footers and Bloom filter indexes as
// protobuf (proto2) messages. A message is a sequence of fields; each field
// starts with a varint tag = field_number << 3 | wire_type, and the wire
// type says how long the value is: 0 varint, 1 eight bytes, 2 a varint
// length then that many bytes, 5 four bytes (3/4, groups, are deprecated and
// unused by ORC). See https://protobuf.dev/programming-guides/encoding/.
//
// `WireReader` walks one message held in memory and checks every length
// against the bytes left before anything is read, so a truncated or hostile
// message ends in `FormatError`, never a read past the end. `put_varint` /
// `put_fixed64` are the writer's side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format.hpp"

namespace bloomkit {
namespace protobuf {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// One field of a message: for varint and fixed fields `value`; for
// length-delimited ones `data`/`size` (a span of the message).
struct Field {
    uint32_t number = 0;
    uint32_t wire_type = 0;
    uint64_t value = 0;
    const uint8_t* data = nullptr;
    size_t size = 0;
};

class WireReader {
  public:
    // `what` names the message in error messages ("ORC BloomFilter").
    WireReader(const uint8_t* data, size_t size, const char* what) : data_(data), size_(size), what_(what) {}

    bool done() const { return pos_ == size_; }

    // The next field; call only while !done().
    Field next() {
        Field field;
        const uint64_t tag = varint("a field tag");
        field.number = static_cast<uint32_t>(tag >> 3);
        field.wire_type = static_cast<uint32_t>(tag & 7);
        if (tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) fail("field number " + std::to_string(tag >> 3) + " is invalid");
        switch (field.wire_type) {
            case kVarint: field.value = varint("a varint field"); break;
            case kFixed64: field.value = fixed(8, "a fixed64 field"); break;
            case kFixed32: field.value = fixed(4, "a fixed32 field"); break;
            case kLengthDelimited: {
                const uint64_t length = varint("a length");
                if (length > size_ - pos_)
                    fail("field " + std::to_string(field.number) + " claims " + std::to_string(length) + " bytes but " +
                         std::to_string(size_ - pos_) + " are left");
                field.data = data_ + pos_;
                field.size = static_cast<size_t>(length);
                pos_ += field.size;
                break;
            }
            default:
                fail("field " + std::to_string(field.number) + " has wire type " + std::to_string(field.wire_type) +
                     ", which ORC does not use");
        }
        return field;
    }

    [[noreturn]] void fail(const std::string& why) const {
        throw FormatError(std::string("invalid ") + what_ + ": " + why);
    }

  private:
    uint64_t varint(const char* reading) {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ == size_) fail(std::string("truncated while reading ") + reading);
            const uint8_t byte = data_[pos_++];
            value |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) return value;
        }
        fail(std::string("a varint longer than 10 bytes while reading ") + reading);
    }

    uint64_t fixed(int width, const char* reading) {
        if (size_ - pos_ < static_cast<size_t>(width)) fail(std::string("truncated while reading ") + reading);
        uint64_t value = 0;
        for (int i = width - 1; i >= 0; --i) value = (value << 8) | data_[pos_ + static_cast<size_t>(i)];
        pos_ += static_cast<size_t>(width);
        return value;
    }

    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    const char* what_;
};

inline void put_varint(std::vector<uint8_t>& out, uint64_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<uint8_t>(value | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<uint8_t>(value));
}

inline void put_tag(std::vector<uint8_t>& out, uint32_t number, WireType type) {
    put_varint(out, static_cast<uint64_t>(number) << 3 | type);
}

inline void put_fixed64(std::vector<uint8_t>& out, uint64_t value) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

inline uint64_t get_fixed64(const uint8_t* p) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
    return value;
}

}  // namespace protobuf
}  // namespace bloomkit
