// Redis BITFIELD commands over many 1-bit fields, encoded as RESP.
//
// bloomkit.redis keeps a Bloom filter's bits in Redis strings and sends a
// batch's k positions per key as one `BITFIELD key SET u1 OFFSET 1 ...` (or
// `BITFIELD_RO key GET u1 OFFSET ...`) per shard. A batch of 50 keys is ~350
// sub-operations and 1,400 arguments; encoding them here costs a few
// nanoseconds each instead of a Python-level microsecond.
//
// RESP (the Redis serialization protocol): a command is an array of bulk
// strings, `*<count>\r\n` followed by `$<length>\r\n<bytes>\r\n` per argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bloomkit {

// Redis numbers the bits of a byte from the most significant one (SETBIT:
// "offset 0 is the MSB of the first byte"); bloomkit's payload numbers them
// from the least significant one (docs/FORMAT.md). Same byte, mirrored bit:
// 8 * (i / 8) + 7 - i % 8 == i ^ 7. With this mapping a shard's Redis string
// is byte for byte the filter's payload.
inline uint64_t redis_bit_offset(uint64_t bit) { return bit ^ 7; }

// Redis addresses bits below 2**32 in one string (512 MB).
constexpr uint64_t kRedisMaxBits = uint64_t(1) << 32;

class RespWriter {
  public:
    void array(uint64_t count) { line('*', count); }
    void bulk(std::string_view s) {
        line('$', s.size());
        out_.append(s);
        out_.append("\r\n");
    }
    void bulk_uint(uint64_t v) {
        char digits[20];
        int n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        line('$', static_cast<uint64_t>(n));
        while (n > 0) out_.push_back(digits[--n]);
        out_.append("\r\n");
    }
    void reserve(size_t bytes) { out_.reserve(bytes); }
    std::string take() { return std::move(out_); }

  private:
    void line(char kind, uint64_t value) {
        out_.push_back(kind);
        out_.append(std::to_string(value));
        out_.append("\r\n");
    }
    std::string out_;
};

// `command key op u1 OFFSET [value] ...` for the filter bits bits[0..n), which
// must lie in [base, base + 2**32): the shard starting at bit `base`. `value`
// empty means no value argument (GET).
inline std::string bitfield_command(std::string_view command, std::string_view key, std::string_view op,
                                    std::string_view value, const uint64_t* bits, size_t n, uint64_t base) {
    const uint64_t fields = value.empty() ? 3 : 4;
    RespWriter w;
    w.reserve(64 + n * (fields * 8 + 16));
    w.array(2 + fields * n);
    w.bulk(command);
    w.bulk(key);
    for (size_t i = 0; i < n; ++i) {
        if (bits[i] < base || bits[i] - base >= kRedisMaxBits)
            throw std::out_of_range("bit " + std::to_string(bits[i]) + " is outside the shard starting at bit " +
                                    std::to_string(base));
        w.bulk(op);
        w.bulk("u1");
        w.bulk_uint(redis_bit_offset(bits[i] - base));
        if (!value.empty()) w.bulk(value);
    }
    return w.take();
}

}  // namespace bloomkit
