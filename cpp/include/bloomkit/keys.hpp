// Batches of keys as the core sees them: bytes or 64-bit integers, never
// Python objects. Every filter hashes a batch through hash_chunks(), so there
// is exactly one place where keys become digests.
//
// A key source is any type with
//     size_t size() const;
//     Hash128 hash(size_t i, uint32_t seed) const;
// The bindings build one from a NumPy array, an Arrow buffer pair or (already
// hashed) a list of Python objects; the filters are templates over it.
//
// Sources that read canonical key bytes also have
//     template <class Hasher> Hash128 hash_with(size_t i, const Hasher&) const;
// where a Hasher (Murmur3Hasher, SipHasher) turns canonical bytes or a
// canonical 8-byte integer into a digest; hash(i, seed) is
// hash_with(i, Murmur3Hasher{seed}). A keyed filter's batches reach the
// filter through KeyHashing::visit_source(), which hashes them with SipHash
// a block at a time, so the filters' loops are the same for both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "hash.hpp"
#include "integer_hash_schedule.hpp"
#include "platform.hpp"
#include "simd.hpp"
#include "siphash.hpp"

namespace bloomkit {

// The unkeyed hash: MurmurHash3_x64_128 under a public 32-bit seed.
struct Murmur3Hasher {
    uint32_t seed;
    Hash128 bytes(const uint8_t* data, size_t len) const { return murmur3_x64_128(data, len, seed); }
    Hash128 integer(uint64_t value) const { return murmur3_x64_128_u64(value, seed); }
};

// The keyed hash: SipHash-2-4-128 under a secret 128-bit key (siphash.hpp).
struct SipHasher {
    SipKey key;
    Hash128 bytes(const uint8_t* data, size_t len) const { return siphash24_128(key, data, len); }
    Hash128 integer(uint64_t value) const { return siphash24_128_u64(key, value); }
};

// A strided array of integers of any width; each element is the integer key
// `value mod 2^64` (signed values are sign-extended first, which is exactly
// the two's-complement residue).
template <class Int>
class IntegerKeys {
    static_assert(std::is_integral<Int>::value, "integer keys only");

  public:
    IntegerKeys(const uint8_t* base, size_t count, ptrdiff_t stride_bytes)
        : base_(base), count_(count), stride_(stride_bytes) {}

    size_t size() const { return count_; }

    uint64_t value(size_t i) const { return load(base_ + static_cast<ptrdiff_t>(i) * stride_); }

    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        return hasher.integer(value(i));
    }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }

    // each(j, hash(first + j, seed)) for j < count, in order, walking the
    // stride with a pointer. hash(i) multiplies the index by the stride: one
    // more 64-bit multiply per key on the one multiplier port that
    // MurmurHash3 and a blocked layout's block and probe seed (nine
    // multiplies) already keep busy; it cost a two-thread insert of 1e7 keys
    // 7.2 -> 6.7 ns/key (docs/decisions.md, "Batches on two cores").
    // With AVX2 active most keys are hashed on the vector units instead
    // (integer_hash_schedule.hpp): the same digests, in the same order.
    template <DigestUse Use = DigestUse::Probed, class Each>
    void for_each_hash(size_t first, size_t count, uint32_t seed, Each& each) const {
        const uint8_t* item = base_ + static_cast<ptrdiff_t>(first) * stride_;
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2)
            return integer_hash_schedule::for_each_hash<Use>(
                item, count, stride_, seed, [](const uint8_t* p) { return load(p); }, each);
#endif
        for (size_t j = 0; j < count; ++j, item += stride_) each(j, murmur3_x64_128_u64(load(item), seed));
    }

  private:
    static uint64_t load(const uint8_t* item) {
        Int v;
        std::memcpy(&v, item, sizeof v);
        using Wide = typename std::conditional<std::is_signed<Int>::value, int64_t, uint64_t>::type;
        return static_cast<uint64_t>(static_cast<Wide>(v));
    }

    const uint8_t* base_;
    size_t count_;
    ptrdiff_t stride_;
};

// Keys the caller has already hashed with murmur3_x64_128 under `seed`: the
// bindings hash Python objects while they walk them with the GIL held, so
// each object's memory is touched once rather than once to validate and
// again to hash. Asking for another seed is a programming error.
class DigestKeys {
  public:
    DigestKeys(const std::vector<Hash128>& digests, uint32_t seed) : digests_(digests), seed_(seed) {}
    size_t size() const { return digests_.size(); }
    Hash128 hash(size_t i, uint32_t seed) const {
        if (seed != seed_) throw std::logic_error("DigestKeys used with a different seed than it was hashed with");
        return digests_[i];
    }

  private:
    const std::vector<Hash128>& digests_;
    uint32_t seed_;
};

// Fixed-width byte strings. For NumPy dtype 'S<n>' each element is its bytes
// with trailing NULs stripped, as NumPy itself presents them (so b"ab" in an
// S4 array is the key b"ab"); for raw binary rows (dtype 'V<n>', or the rows
// of a 2-D uint8 array) every one of the n bytes is part of the key.
class FixedWidthKeys {
  public:
    FixedWidthKeys(const uint8_t* base, size_t count, ptrdiff_t stride_bytes, size_t itemsize,
                   bool strip_trailing_nul = true)
        : base_(base), count_(count), stride_(stride_bytes), itemsize_(itemsize), strip_(strip_trailing_nul) {}

    size_t size() const { return count_; }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        const uint8_t* item = base_ + static_cast<ptrdiff_t>(i) * stride_;
        size_t len = itemsize_;
        if (strip_)
            while (len > 0 && item[len - 1] == 0) --len;
        return hasher.bytes(item, len);
    }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }

  private:
    const uint8_t* base_;
    size_t count_;
    ptrdiff_t stride_;
    size_t itemsize_;
    bool strip_;
};

// Fixed-width UTF-32 strings (NumPy dtype '<U<n>', native byte order): each
// element is its code points up to the last non-NUL one, encoded as UTF-8 on
// the fly into a scratch buffer, so the key equals the Python str's UTF-8.
// Call first_invalid() before hashing: surrogates and values past U+10FFFF
// have no UTF-8 encoding (Python's str.encode() refuses them too).
class Utf32Keys {
  public:
    Utf32Keys(const uint8_t* base, size_t count, ptrdiff_t stride_bytes, size_t chars_per_item)
        : base_(base), count_(count), stride_(stride_bytes), chars_(chars_per_item), scratch_(chars_per_item * 4) {}

    size_t size() const { return count_; }

    // Index of the first element holding an unencodable code point, or
    // size() when every element is valid.
    size_t first_invalid() const {
        if (stride_ == static_cast<ptrdiff_t>(chars_ * 4)) {
            // Contiguous: one flat pass over all code points (NUL padding is
            // valid), written without branches so the compiler vectorises it.
            const size_t total = count_ * chars_;
            constexpr size_t kBlock = 1024;
            for (size_t start = 0; start < total; start += kBlock) {
                const size_t end = std::min(total, start + kBlock);
                uint32_t any_invalid = 0;
                for (size_t c = start; c < end; ++c) any_invalid |= is_invalid(flat_code_point(c));
                if (any_invalid) {
                    for (size_t c = start; c < end; ++c)
                        if (is_invalid(flat_code_point(c))) return c / chars_;
                }
            }
            return count_;
        }
        for (size_t i = 0; i < count_; ++i)
            for (size_t c = 0; c < chars_; ++c)
                if (is_invalid(code_point(i, c))) return i;
        return count_;
    }

    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        const size_t len = length(i);
        uint8_t* out = scratch_.data();
        size_t c = 0;
        // Four ASCII code points at a time (the common case for URLs and
        // ids): two 64-bit loads hold four little-endian UTF-32 units; when
        // none has a bit above 0x7F, their low bytes are the UTF-8.
        for (; c + 4 <= len; c += 4) {
            uint64_t pair[2];
            std::memcpy(pair, item(i) + c * 4, sizeof pair);
            if (((pair[0] | pair[1]) & 0xFFFFFF80FFFFFF80ULL) != 0) break;
            out[0] = static_cast<uint8_t>(pair[0]);
            out[1] = static_cast<uint8_t>(pair[0] >> 32);
            out[2] = static_cast<uint8_t>(pair[1]);
            out[3] = static_cast<uint8_t>(pair[1] >> 32);
            out += 4;
        }
        for (; c < len; ++c) {
            const uint32_t cp = code_point(i, c);
            if (cp < 0x80) {
                *out++ = static_cast<uint8_t>(cp);
            } else if (cp < 0x800) {
                *out++ = static_cast<uint8_t>(0xC0 | (cp >> 6));
                *out++ = static_cast<uint8_t>(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *out++ = static_cast<uint8_t>(0xE0 | (cp >> 12));
                *out++ = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
                *out++ = static_cast<uint8_t>(0x80 | (cp & 0x3F));
            } else {
                *out++ = static_cast<uint8_t>(0xF0 | (cp >> 18));
                *out++ = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
                *out++ = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
                *out++ = static_cast<uint8_t>(0x80 | (cp & 0x3F));
            }
        }
        return hasher.bytes(scratch_.data(), static_cast<size_t>(out - scratch_.data()));
    }

  private:
    // Surrogates (U+D800..U+DFFF) and values past U+10FFFF have no UTF-8 form.
    static uint32_t is_invalid(uint32_t cp) { return ((cp - 0xD800u) < 0x800u) | (cp > 0x10FFFFu); }

    uint32_t flat_code_point(size_t c) const {
        uint32_t cp;
        std::memcpy(&cp, base_ + c * 4, sizeof cp);
        return cp;
    }

    const uint8_t* item(size_t i) const { return base_ + static_cast<ptrdiff_t>(i) * stride_; }

    uint32_t code_point(size_t i, size_t c) const {
        uint32_t cp;
        std::memcpy(&cp, item(i) + c * 4, sizeof cp);
        return cp;
    }
    size_t length(size_t i) const {
        size_t len = chars_;
        while (len > 0 && code_point(i, len - 1) == 0) --len;
        return len;
    }

    const uint8_t* base_;
    size_t count_;
    ptrdiff_t stride_;
    size_t chars_;
    mutable std::vector<uint8_t> scratch_;
};

// Variable-length byte strings in one data buffer of `data_size` bytes with
// count+1 offsets (Arrow's binary/string layout; Offset is int32_t or
// int64_t), read in place. The bindings check that the offsets are monotone
// and inside the buffer before building one, but the buffers are the
// caller's, and another thread may write them while the GIL is released.
// So each offset is read once (platform::load_once) and clamped into
// [0, data_size], the end to at least the begin: a key rewritten meanwhile
// is read as whatever bytes are there, never from outside the buffer. (Two
// compares per key, instead of the copy of every offset this replaced: 8
// bytes per key, +38 MiB for 5M rows.)
template <class Offset>
class OffsetKeys {
  public:
    OffsetKeys(const uint8_t* data, uint64_t data_size, const Offset* offsets, size_t count)
        : data_(data), data_size_(data_size), offsets_(offsets), count_(count) {}

    size_t size() const { return count_; }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        const uint64_t begin = inside(platform::load_once(offsets_ + i), 0);
        const uint64_t end = inside(platform::load_once(offsets_ + i + 1), begin);
        return hasher.bytes(data_ + begin, static_cast<size_t>(end - begin));
    }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }

  private:
    // `offset` clamped into [low, data_size_].
    uint64_t inside(Offset offset, uint64_t low) const {
        const uint64_t at = offset < 0 ? 0 : static_cast<uint64_t>(offset);
        return at < low ? low : (at > data_size_ ? data_size_ : at);
    }

    const uint8_t* data_;
    uint64_t data_size_;
    const Offset* offsets_;
    size_t count_;
};

// Arrow's BinaryView / Utf8View layout (polars strings, pyarrow string_view):
// one 16-byte view per key, an int32 length first; up to 12 bytes are stored
// inline after it, longer keys are (4-byte prefix, int32 buffer index, int32
// offset) into one of the array's data buffers. Read in place, no copy.
// Call first_invalid() before hashing: it checks every view against the
// buffers' sizes.
class ViewKeys {
  public:
    static constexpr size_t kViewBytes = 16;
    static constexpr int32_t kInlineMax = 12;

    ViewKeys(const uint8_t* views, size_t count, const uint8_t* const* buffers, const uint64_t* buffer_sizes,
             size_t num_buffers)
        : views_(views), count_(count), buffers_(buffers), sizes_(buffer_sizes), num_buffers_(num_buffers) {}

    size_t size() const { return count_; }

    size_t first_invalid() const {
        for (size_t i = 0; i < count_; ++i) {
            const int32_t len = field(i, 0);
            if (len < 0) return i;
            if (len <= kInlineMax) continue;
            const int32_t index = field(i, 8);
            const int32_t offset = field(i, 12);
            if (index < 0 || static_cast<size_t>(index) >= num_buffers_ || offset < 0 ||
                static_cast<uint64_t>(offset) + static_cast<uint64_t>(len) > sizes_[index])
                return i;
        }
        return count_;
    }

    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        const int32_t len = field(i, 0);
        if (len >= 0 && len <= kInlineMax) return hasher.bytes(views_ + i * kViewBytes + 4, static_cast<size_t>(len));
        // Checked again at use (cheap next to hashing): views in writable
        // memory changed after first_invalid() must not read out of bounds;
        // such a view hashes as the empty key.
        const int32_t index = field(i, 8);
        const int32_t offset = field(i, 12);
        if (len < 0 || index < 0 || static_cast<size_t>(index) >= num_buffers_ || offset < 0 ||
            static_cast<uint64_t>(offset) + static_cast<uint64_t>(len) > sizes_[index])
            return hasher.bytes(views_, 0);
        return hasher.bytes(buffers_[index] + offset, static_cast<size_t>(len));
    }

  private:
    int32_t field(size_t i, size_t at) const {
        int32_t v;
        std::memcpy(&v, views_ + i * kViewBytes + at, sizeof v);
        return v;
    }

    const uint8_t* views_;
    size_t count_;
    const uint8_t* const* buffers_;
    const uint64_t* sizes_;
    size_t num_buffers_;
};

// Keys whose digests a callback produces a block at a time: the bindings
// hash Python objects this way (reading objects needs the GIL, which the
// callback takes for one block), so a batch of n objects holds one block of
// digests instead of n. Blocks are refilled as hash() walks forward, which
// is how hash_chunks() reads every source; any other order still works, one
// refill per jump.
class BlockDigestKeys {
  public:
    // fill(first, count, seed, out): the digests of keys [first, first+count).
    using Fill = std::function<void(size_t, size_t, uint32_t, Hash128*)>;
    static constexpr size_t kDefaultBlock = 16384;  // 256 KiB of digests

    BlockDigestKeys(size_t count, Fill fill, size_t block = kDefaultBlock)
        : count_(count), fill_(std::move(fill)), block_(std::max<size_t>(1, block)) {}

    size_t size() const { return count_; }
    Hash128 hash(size_t i, uint32_t seed) const {
        if (i < first_ || i >= first_ + filled_ || seed != seed_) refill(i, seed);
        return digests_[i - first_];
    }

  private:
    void refill(size_t i, uint32_t seed) const {
        const size_t count = std::min(block_, count_ - i);
        digests_.resize(count);
        filled_ = 0;  // stays invalid if fill_ throws
        fill_(i, count, seed, digests_.data());
        first_ = i;
        filled_ = count;
        seed_ = seed;
    }

    size_t count_;
    Fill fill_;
    size_t block_;
    mutable std::vector<Hash128> digests_;
    mutable size_t first_ = 0;
    mutable size_t filled_ = 0;
    mutable uint32_t seed_ = 0;
};

// How a filter turns keys into digests: MurmurHash3 under its public seed,
// or, for a filter built with a secret key, SipHash-2-4-128 under a key
// derived from the secret and the seed (docs/RELIABILITY.md, "Keyed
// hashing"). Both hash the same canonical key bytes, so every key-semantics
// rule (5 == 5.0, NaN, datetime units, row keys) holds for both.
//
// The bindings hold one per filter and hash every key through it: single
// keys with bytes()/integer() (one branch per call, next to a Python call),
// batches with visit_source(), which decides once per batch.
class KeyHashing {
  public:
    // Keyed digests per block of a batch: 16 KiB of digests stays in L1/L2.
    static constexpr size_t kKeyedBlock = 1024;

    explicit KeyHashing(uint32_t seed) : seed_(seed) {}
    // `secret` is the 128-bit master key (derived from the user's
    // secret_key bytes by the Python layer, bloomkit/_keyed.py).
    KeyHashing(uint32_t seed, const SipKey& secret)
        : seed_(seed), keyed_(true), secret_(secret), sip_{seed_key(secret, seed)} {}

    uint32_t seed() const { return seed_; }
    bool keyed() const { return keyed_; }
    const SipHasher& sip() const { return sip_; }

    // The 16 bytes stored in a keyed frame in place of the key: a PRF
    // output on a fixed label, which identifies the key (two keys share a
    // check with probability 2**-128) without revealing it.
    Hash128 key_check() const { return key_check(secret_); }
    static Hash128 key_check(const SipKey& secret) {
        static const char kLabel[] = "bloomkit key check";
        return siphash24_128(secret, kLabel, sizeof kLabel - 1);
    }

    // The SipHash key of a filter with seed `seed`: filters with equal
    // secrets and different seeds hash independently, as unkeyed ones do.
    static SipKey seed_key(const SipKey& secret, uint32_t seed) {
        uint8_t message[17] = {'b', 'l', 'o', 'o', 'm', 'k', 'i', 't', ' ', 's', 'e', 'e', 'd', 0, 0, 0, 0};
        for (int b = 0; b < 4; ++b) message[13 + b] = static_cast<uint8_t>(seed >> (8 * b));
        const Hash128 h = siphash24_128(secret, message, sizeof message);
        return {h.h1, h.h2};
    }

    Hash128 bytes(const uint8_t* data, size_t len) const {
        return keyed_ ? sip_.bytes(data, len) : murmur3_x64_128(data, len, seed_);
    }
    Hash128 integer(uint64_t value) const { return keyed_ ? sip_.integer(value) : murmur3_x64_128_u64(value, seed_); }

    // Calls f(source) for an unkeyed filter; for a keyed one, f(a
    // BlockDigestKeys that hashes `keys` with SipHash a block at a time).
    // The filters' batch loops are thus instantiated once per source type,
    // and the unkeyed path is exactly what it was.
    template <class Keys, class F>
    void visit_source(Keys keys, F&& f) const {
        if (!keyed_) return f(keys);
        const SipHasher sip = sip_;
        f(BlockDigestKeys(
            keys.size(),
            [keys = std::move(keys), sip](size_t first, size_t count, uint32_t, Hash128* out) {
                for (size_t j = 0; j < count; ++j) out[j] = keys.hash_with(first + j, sip);
            },
            kKeyedBlock));
    }

  private:
    uint32_t seed_;
    bool keyed_ = false;
    SipKey secret_{0, 0};
    SipHasher sip_{{0, 0}};
};

// Floating-point keys, one canonical 8-byte value per number (docs/decisions.md):
// a float equal to an integer in [-2**63, 2**64) is that integer's key
// (5.0 is 5, -0.0 is 0), as in Python where 5.0 == 5 and hash(5.0) == hash(5);
// every NaN is one key, the quiet NaN 0x7FF8000000000000 (pandas'
// duplicated() and np.unique also treat NaNs as equal); any other value is
// the 8 bytes of its IEEE-754 binary64 encoding (float32 values are widened
// first, exactly).
inline uint64_t canonical_float(double value) {
    constexpr double kTwo63 = 9223372036854775808.0;
    constexpr double kTwo64 = 18446744073709551616.0;
    if (std::isnan(value)) return 0x7FF8000000000000ULL;
    if (std::trunc(value) == value && value >= -kTwo63 && value < kTwo64) {
        // In [2**63, 2**64) only as unsigned; below, through int64 (two's complement).
        return value >= kTwo63 ? static_cast<uint64_t>(value) : static_cast<uint64_t>(static_cast<int64_t>(value));
    }
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);  // fractions, +-inf and integers beyond the key range
    return bits;
}

template <class Float>
class FloatKeys {
    static_assert(std::is_floating_point<Float>::value, "floating-point keys only");

  public:
    FloatKeys(const uint8_t* base, size_t count, ptrdiff_t stride_bytes)
        : base_(base), count_(count), stride_(stride_bytes) {}
    size_t size() const { return count_; }
    double value(size_t i) const { return load(base_ + static_cast<ptrdiff_t>(i) * stride_); }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        return hasher.integer(canonical_float(value(i)));
    }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }
    // As IntegerKeys::for_each_hash: a pointer walk, no multiply per key.
    template <DigestUse = DigestUse::Probed, class Each>
    void for_each_hash(size_t first, size_t count, uint32_t seed, Each& each) const {
        const uint8_t* item = base_ + static_cast<ptrdiff_t>(first) * stride_;
        for (size_t j = 0; j < count; ++j, item += stride_)
            each(j, murmur3_x64_128_u64(canonical_float(load(item)), seed));
    }

  private:
    static double load(const uint8_t* item) {
        Float v;
        std::memcpy(&v, item, sizeof v);
        return static_cast<double>(v);
    }
    const uint8_t* base_;
    size_t count_;
    ptrdiff_t stride_;
};

// NumPy datetime64 / timedelta64 values (int64 counts of a unit) as keys:
// the key is the integer number of nanoseconds, so equal instants (or
// durations) are equal keys whatever their unit, and a datetime64 key equals
// pandas' Timestamp.value. `nanos_per_unit` is 1 for ns, 1000 for us, ...
// NaT (INT64_MIN in every unit) is one key, the integer -2**63 (pandas'
// duplicated() treats NaTs as equal). Values whose nanosecond count does not
// fit in int64 are not keys: callers check first_out_of_range() and refuse.
class NanosecondKeys {
  public:
    static constexpr int64_t kNaT = INT64_MIN;

    NanosecondKeys(const uint8_t* base, size_t count, ptrdiff_t stride_bytes, int64_t nanos_per_unit)
        : base_(base), count_(count), stride_(stride_bytes), scale_(nanos_per_unit) {}
    size_t size() const { return count_; }
    int64_t raw(size_t i) const {
        int64_t v;
        std::memcpy(&v, base_ + static_cast<ptrdiff_t>(i) * stride_, sizeof v);
        return v;
    }
    // Index of the first value (other than NaT) outside +-(2**63 - 1) ns, or size().
    size_t first_out_of_range() const {
        const int64_t limit = INT64_MAX / scale_;
        for (size_t i = 0; i < count_; ++i) {
            const int64_t v = raw(i);
            if (v != kNaT && (v > limit || v < -limit)) return i;
        }
        return count_;
    }
    template <class Hasher>
    Hash128 hash_with(size_t i, const Hasher& hasher) const {
        const int64_t v = raw(i);
        return hasher.integer(static_cast<uint64_t>(v == kNaT ? v : v * scale_));
    }
    Hash128 hash(size_t i, uint32_t seed) const { return hash_with(i, Murmur3Hasher{seed}); }

  private:
    const uint8_t* base_;
    size_t count_;
    ptrdiff_t stride_;
    int64_t scale_;
};

// Number of keys hashed ahead of use. Large enough that the prefetches a
// filter issues for a chunk have landed by the time it probes the first key
// again; small enough that the digests stay in L1 (256 * 16 B = 4 KiB; 1,024
// keys were slower for lookups at 1e8 keys, 64 the same:
// benchmarks/results/2026-11-24-prefetch-tuning-c79ed12-epyc2.md).
constexpr size_t kHashChunk = 256;

namespace detail {
// The int overload is chosen when keys.for_each_hash exists (an exact match
// beats the int -> long conversion); otherwise it drops out (SFINAE).
template <DigestUse Use, class Keys, class Each>
auto for_each_hash(const Keys& keys, size_t first, size_t count, uint32_t seed, Each& each, int)
    -> decltype(keys.template for_each_hash<Use>(first, count, seed, each)) {
    return keys.template for_each_hash<Use>(first, count, seed, each);
}
template <DigestUse, class Keys, class Each>
void for_each_hash(const Keys& keys, size_t first, size_t count, uint32_t seed, Each& each, long) {
    for (size_t j = 0; j < count; ++j) each(j, keys.hash(first + j, seed));
}
}  // namespace detail

// each(j, keys.hash(first + j, seed)) for j < count, in order, through the
// source's own loop when it has one (IntegerKeys walks a pointer).
template <DigestUse Use = DigestUse::Probed, class Keys, class Each>
void for_each_hash(const Keys& keys, size_t first, size_t count, uint32_t seed, Each&& each) {
    detail::for_each_hash<Use>(keys, first, count, seed, each, 0);
}

namespace detail {
// A source that hashes a range into memory itself (ErasedKeys,
// erased_keys.hpp) is called directly: its for_each_hash would copy.
template <class Keys>
auto hash_range(const Keys& keys, size_t first, size_t count, uint32_t seed, Hash128* digests, int)
    -> decltype(keys.hash_range(first, count, seed, digests)) {
    return keys.hash_range(first, count, seed, digests);
}
template <class Keys>
void hash_range(const Keys& keys, size_t first, size_t count, uint32_t seed, Hash128* digests, long) {
    bloomkit::for_each_hash<DigestUse::Stored>(keys, first, count, seed,
                                               [digests](size_t j, const Hash128& h) { digests[j] = h; });
}
}  // namespace detail

// digests[j] = keys.hash(first + j, seed) for j < count.
template <class Keys>
void hash_range(const Keys& keys, size_t first, size_t count, uint32_t seed, Hash128* digests) {
    detail::hash_range(keys, first, count, seed, digests, 0);
}

// Hashes `keys` in chunks and hands each chunk to `consume(first_index,
// digests, count)`. This is the only loop that turns a batch of keys into
// digests; every filter's batch operations are built on it.
// (Chunk is a parameter only so benchmarks/prefetch_tuning.cpp can sweep it.)
template <size_t Chunk = kHashChunk, class Keys, class Consume>
void hash_chunks(const Keys& keys, uint32_t seed, Consume&& consume) {
    Hash128 digests[Chunk];
    const size_t total = keys.size();
    for (size_t first = 0; first < total; first += Chunk) {
        const size_t count = std::min(Chunk, total - first);
        hash_range(keys, first, count, seed, digests);
        consume(first, static_cast<const Hash128*>(digests), count);
    }
}

}  // namespace bloomkit
