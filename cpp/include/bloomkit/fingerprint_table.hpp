// Bit-packed storage for the cuckoo filter: num_buckets buckets of
// bucket_size slots, each slot an f-bit fingerprint (0 = empty).
//
// Slots are packed back to back with no padding between them, so a 12-bit
// fingerprint really costs 12 bits: slot s occupies bits [s*f, s*f + f) of a
// little-endian bit string (bit j is bit j%8 of byte j/8). A slot is read
// with one unaligned 64-bit load at byte s*f/8 shifted right by (s*f)%8;
// because f <= 32 and the shift is <= 7 the whole slot is inside that 64-bit
// window. The byte buffer carries 8 zero bytes past the packed data so the
// window of the last slot never reads out of bounds.
//
// A whole bucket (bucket_size * f bits) usually fits in one such window as
// well (b=4 with f <= 14, or any b*f <= 64 that is a multiple of 8, e.g. b=4
// with f=16); then a lookup compares all slots of the bucket at once with
// SIMD-within-a-register arithmetic instead of looping over slots.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hash.hpp"
#include "memory.hpp"
#include "sizing.hpp"

namespace bloomkit {

namespace detail {

inline void store_le64(uint8_t* p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = platform::bswap64(v);
#endif
    std::memcpy(p, &v, sizeof v);
}

inline uint64_t low_mask(unsigned bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

}  // namespace detail

class FingerprintTable {
  public:
    static constexpr unsigned kMinBits = kCuckooMinFingerprintBits;
    static constexpr unsigned kMaxBits = kCuckooMaxFingerprintBits;
    static constexpr size_t kLoadPadding = 8;

    FingerprintTable() = default;
    FingerprintTable(uint64_t num_buckets, unsigned bucket_size, unsigned fingerprint_bits)
        : num_buckets_(num_buckets),
          bucket_size_(bucket_size),
          bits_(fingerprint_bits),
          slot_mask_(detail::low_mask(fingerprint_bits)),
          bytes_(check_allocation(packed_bytes(num_buckets, bucket_size, fingerprint_bits) + kLoadPadding, 1,
                                  "fingerprint table"),
                 0) {
        const unsigned bucket_bits = bucket_size * fingerprint_bits;
        // A bucket starts at bit offset bucket*b*f; its shift inside the first
        // byte is always 0 when b*f is a multiple of 8, else at most 7.
        const unsigned worst_shift = bucket_bits % 8 == 0 ? 0 : 7;
        whole_bucket_ = bucket_bits + worst_shift <= 64;
        if (whole_bucket_) {
            for (unsigned i = 0; i < bucket_size; ++i) lanes_low_ |= uint64_t(1) << (i * fingerprint_bits);
            lanes_high_ = lanes_low_ << (fingerprint_bits - 1);
            bucket_mask_ = detail::low_mask(bucket_bits);
        }
    }

    // Bytes of packed data (without the load padding) for a table shape.
    static uint64_t packed_bytes(uint64_t num_buckets, unsigned bucket_size, unsigned fingerprint_bits) {
        return (num_buckets * bucket_size * fingerprint_bits + 7) / 8;
    }

    uint64_t num_buckets() const { return num_buckets_; }
    unsigned bucket_size() const { return bucket_size_; }
    unsigned fingerprint_bits() const { return bits_; }
    uint64_t num_slots() const { return num_buckets_ * bucket_size_; }
    uint64_t nbytes() const { return bytes_.size() - kLoadPadding; }
    const uint8_t* data() const { return bytes_.data(); }
    uint8_t* data() { return bytes_.data(); }

    uint32_t get(uint64_t slot) const {
        const uint64_t bit = slot * bits_;
        return static_cast<uint32_t>((detail::load_le64(&bytes_[bit >> 3]) >> (bit & 7)) & slot_mask_);
    }

    void set(uint64_t slot, uint32_t value) {
        const uint64_t bit = slot * bits_;
        uint8_t* p = &bytes_[bit >> 3];
        const unsigned shift = static_cast<unsigned>(bit & 7);
        uint64_t window = detail::load_le64(p);
        window &= ~(slot_mask_ << shift);
        window |= uint64_t(value) << shift;
        detail::store_le64(p, window);
    }

    uint64_t first_slot(uint64_t bucket) const { return bucket * bucket_size_; }

    // Number of slots of `bucket` holding `fp` (fp == 0 counts empty slots).
    unsigned count_in_bucket(uint64_t bucket, uint32_t fp) const {
        if (whole_bucket_) return static_cast<unsigned>(platform::popcount64(equal_lanes(bucket, fp)));
        unsigned n = 0;
        const uint64_t first = first_slot(bucket);
        for (unsigned i = 0; i < bucket_size_; ++i) n += get(first + i) == fp;
        return n;
    }

    bool bucket_has(uint64_t bucket, uint32_t fp) const {
        if (whole_bucket_) return equal_lanes(bucket, fp) != 0;
        const uint64_t first = first_slot(bucket);
        for (unsigned i = 0; i < bucket_size_; ++i)
            if (get(first + i) == fp) return true;
        return false;
    }

    // Index (within the bucket) of the first slot holding `fp`, or
    // bucket_size() when there is none; fp == 0 finds a free slot.
    unsigned find_in_bucket(uint64_t bucket, uint32_t fp) const {
        if (whole_bucket_) {
            const uint64_t lanes = equal_lanes(bucket, fp);
            return lanes == 0 ? bucket_size_ : platform::ctz64(lanes) / bits_;
        }
        const uint64_t first = first_slot(bucket);
        for (unsigned i = 0; i < bucket_size_; ++i)
            if (get(first + i) == fp) return i;
        return bucket_size_;
    }

    void prefetch(uint64_t bucket) const { platform::prefetch_read(&bytes_[(bucket * bucket_size_ * bits_) >> 3]); }

    // True when no bit past the last slot is set in the packed data; a valid
    // serialized table must satisfy this.
    bool padding_is_clear() const {
        const uint64_t used_bits = num_slots() * bits_;
        const uint64_t packed = nbytes();
        if (used_bits % 8 != 0 && (bytes_[packed - 1] >> (used_bits % 8)) != 0) return false;
        for (size_t i = 0; i < kLoadPadding; ++i)
            if (bytes_[packed + i] != 0) return false;
        return true;
    }

    void clear() { std::fill(bytes_.begin(), bytes_.end(), 0); }

    // The packed array (with its load padding) as a new vector, and the
    // exchange of the array for another of the same size: the copy-on-write
    // of CuckooFilter::hand_off_arrays. The swap moves buffers, so the old
    // array keeps its address and bytes.
    std::vector<uint8_t> copy_bytes() const { return bytes_; }
    void swap_bytes(std::vector<uint8_t>& other) noexcept { bytes_.swap(other); }

    bool operator==(const FingerprintTable& other) const {
        return num_buckets_ == other.num_buckets_ && bucket_size_ == other.bucket_size_ && bits_ == other.bits_ &&
               bytes_ == other.bytes_;
    }

  private:
    // The top bit of every lane (slot) of `bucket` that equals fp, computed
    // on all lanes at once.
    //
    // x = bucket XOR (fp in every lane) has a zero lane exactly where a slot
    // equals fp. With H = each lane's top bit and L7 = the lane bits below
    // it, (x & L7) + L7 sets a lane's top bit iff its low bits are non-zero
    // and cannot carry into the next lane; OR-ing x back in adds the lane's
    // own top bit. The lanes whose top bit is still clear are the zero lanes
    // (Warren, "Hacker's Delight", 2nd ed., sec. 6-1).
    uint64_t equal_lanes(uint64_t bucket, uint32_t fp) const {
        const uint64_t bit = bucket * bucket_size_ * bits_;
        const uint64_t window = (detail::load_le64(&bytes_[bit >> 3]) >> (bit & 7)) & bucket_mask_;
        const uint64_t x = window ^ (lanes_low_ * fp);
        const uint64_t low7 = bucket_mask_ & ~lanes_high_;
        const uint64_t nonzero = ((x & low7) + low7) | x;
        return ~nonzero & lanes_high_;
    }

    uint64_t num_buckets_ = 0;
    unsigned bucket_size_ = 0;
    unsigned bits_ = 0;
    uint64_t slot_mask_ = 0;
    bool whole_bucket_ = false;
    uint64_t lanes_low_ = 0;
    uint64_t lanes_high_ = 0;
    uint64_t bucket_mask_ = 0;
    std::vector<uint8_t> bytes_;
};

}  // namespace bloomkit
