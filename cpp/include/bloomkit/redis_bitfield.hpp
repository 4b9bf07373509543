// Redis BITFIELD commands over a Bloom filter's bits, encoded as RESP.
//
// bloomkit.redis keeps a Bloom filter's bits in Redis strings and sends a
// batch's k positions per key as one `BITFIELD key SET u1 OFFSET 1 ...` (or
// `BITFIELD_RO key GET u1 OFFSET ...`) per shard. A batch of 50 keys is ~350
// sub-operations and 1,400 arguments. The client computes positions from the
// filter's geometry alone (geometry_positions in bloom.hpp: a 1 GiB filter in
// Redis costs its clients nothing) and writes the command bytes here, a few
// nanoseconds per argument, instead of redis-py's ~1 µs per argument.
//
// RESP (the Redis serialization protocol): a command is an array of bulk
// strings, `*<count>\r\n` followed by `$<length>\r\n<bytes>\r\n` per argument.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bloomkit {

// Redis numbers the bits of a byte from the most significant one (SETBIT:
// "offset 0 is the MSB of the first byte"); bloomkit's payload numbers them
// from the least significant one (docs/FORMAT.md). Same byte, mirrored bit:
// 8 * (i / 8) + 7 - i % 8 == i ^ 7. With this mapping a shard's Redis string
// is byte for byte the filter's payload.
inline uint64_t redis_bit_offset(uint64_t bit) { return bit ^ 7; }

// Redis addresses bits below 2**32 in one string (512 MB).
constexpr uint64_t kRedisMaxBits = uint64_t(1) << 32;

// Appends RESP to a string through a raw cursor: the caller reserves the
// bytes first (reserve(n) guarantees n more), so no append checks capacity.
class RespWriter {
  public:
    void reserve(size_t more) {
        if (out_.size() - used_ < more) out_.resize(used_ + more + out_.size() / 2);
    }
    void array(uint64_t count) { line('*', count); }
    void bulk(std::string_view s) {
        line('$', s.size());
        raw(s);
        raw("\r\n");
    }
    // `$<digits>\r\n<value>\r\n` for a decimal value.
    void bulk_uint(uint64_t value) {
        char digits[20];
        const size_t n = decimal(value, digits);
        line('$', n);
        raw(std::string_view(digits, n));
        raw("\r\n");
    }
    // Bytes already RESP-encoded (e.g. a sub-operation's constant arguments).
    void raw(std::string_view s) {
        std::memcpy(&out_[used_], s.data(), s.size());
        used_ += s.size();
    }
    std::string take() {
        out_.resize(used_);
        used_ = 0;
        return std::move(out_);
    }

  private:
    static size_t decimal(uint64_t value, char* digits) {
        char reversed[20];
        size_t n = 0;
        do {
            reversed[n++] = static_cast<char>('0' + value % 10);
            value /= 10;
        } while (value != 0);
        for (size_t i = 0; i < n; ++i) digits[i] = reversed[n - 1 - i];
        return n;
    }
    void line(char kind, uint64_t value) {
        char digits[20];
        const size_t n = decimal(value, digits);
        out_[used_++] = kind;
        raw(std::string_view(digits, n));
        raw("\r\n");
    }
    std::string out_;
    size_t used_ = 0;
};

// `head... op u1 OFFSET [value] ...` for the filter bits bits[0..n), which
// must lie in [base, base + 2**32): the shard starting at bit `base`. `head`
// is every argument before the sub-operations: `BITFIELD key`, or the
// `EVALSHA sha 1 key BITFIELD` of bloomkit.redis' existence-checking script.
// `value` empty means no value argument (GET).
inline std::string bitfield_command(const std::vector<std::string_view>& head, std::string_view op,
                                    std::string_view value, const uint64_t* bits, size_t n, uint64_t base) {
    for (size_t i = 0; i < n; ++i)
        if (bits[i] < base || bits[i] - base >= kRedisMaxBits)
            throw std::out_of_range("bit " + std::to_string(bits[i]) + " is outside the shard starting at bit " +
                                    std::to_string(base));
    // The arguments before and after each offset, encoded once.
    RespWriter prefix_writer;
    prefix_writer.reserve(32 + op.size());
    prefix_writer.bulk(op);
    prefix_writer.bulk("u1");
    const std::string prefix = prefix_writer.take();
    std::string suffix;
    if (!value.empty()) {
        RespWriter suffix_writer;
        suffix_writer.reserve(32 + value.size());
        suffix_writer.bulk(value);
        suffix = suffix_writer.take();
    }
    const uint64_t fields = value.empty() ? 3 : 4;
    RespWriter w;
    // Per op: prefix, `$NN\r\n` + at most 20 digits + `\r\n`, suffix; the
    // array line and each head bulk take at most 1 + 20 + 2 bytes + their text.
    size_t head_bytes = 32;
    for (const std::string_view arg : head) head_bytes += 32 + arg.size();
    w.reserve(head_bytes + n * (prefix.size() + suffix.size() + 27));
    w.array(head.size() + fields * n);
    for (const std::string_view arg : head) w.bulk(arg);
    for (size_t i = 0; i < n; ++i) {
        w.raw(prefix);
        w.bulk_uint(redis_bit_offset(bits[i] - base));
        w.raw(suffix);
    }
    return w.take();
}

}  // namespace bloomkit
