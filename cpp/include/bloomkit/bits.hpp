// Bit and counter storage for the Bloom filters: 64-bit words addressed by
// 64-bit indices, so a filter may hold far more than 2^32 bits or counters.
// Bit arrays live in WordStorage (storage.hpp): 64-byte aligned, huge pages
// for large arrays, and optionally memory the filter does not own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "memory.hpp"
#include "platform.hpp"
#include "sizing.hpp"
#include "storage.hpp"

namespace bloomkit {

// `num_words` zeroed words, through the memory check (memory.hpp); a request
// the system refuses anyway is the same OutOfMemory, naming its size, rather
// than a bare std::bad_alloc.
inline WordStorage checked_words(uint64_t num_words, const char* what) {
    check_allocation(num_words, sizeof(uint64_t), what);
    try {
        return WordStorage(num_words);
    } catch (const std::bad_alloc&) {
        throw refused_allocation(num_words * sizeof(uint64_t), what);
    }
}

class BitArray {
  public:
    BitArray() = default;
    explicit BitArray(uint64_t num_bits)
        : num_bits_(num_bits), words_(checked_words(words_for(num_bits), "bit array")) {}

    // Bits in storage the caller provides (e.g. borrowed memory); it must
    // hold exactly words_for(num_bits) words.
    BitArray(uint64_t num_bits, WordStorage storage) : num_bits_(num_bits), words_(std::move(storage)) {
        if (words_.size() != words_for(num_bits)) throw std::invalid_argument("storage does not match num_bits");
    }

    // Without overflow for any 64-bit count ((num_bits + 63) / 64 wraps to 0
    // near 2**64, which let a crafted frame pass with an empty payload).
    static uint64_t words_for(uint64_t num_bits) { return num_bits / 64 + (num_bits % 64 != 0); }

    uint64_t num_bits() const { return num_bits_; }
    uint64_t num_words() const { return words_.size(); }
    uint64_t nbytes() const { return words_.size() * sizeof(uint64_t); }
    const uint64_t* words() const { return words_.data(); }
    uint64_t* words() { return words_.data(); }
    StorageAccess access() const { return words_.access(); }
    WriterLock* writer_lock() const { return words_.writer_lock(); }
    bool owned() const { return words_.owned(); }

    bool test(uint64_t bit) const { return (words_[bit >> 6] >> (bit & 63)) & 1u; }

    // Sets the bit and reports whether it was already set.
    bool test_and_set(uint64_t bit) {
        uint64_t& word = words_[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        const bool was_set = (word & mask) != 0;
        word |= mask;
        return was_set;
    }

    void prefetch(uint64_t bit) const { platform::prefetch_read(&words_[bit >> 6]); }

    uint64_t popcount() const {
        uint64_t total = 0;
        for (uint64_t w : words_) total += platform::popcount64(w);
        return total;
    }

    void clear() { std::fill(words_.begin(), words_.end(), uint64_t(0)); }

    void union_with(const BitArray& other) {
        check_same_size(other);
        for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    }

    void intersect_with(const BitArray& other) {
        check_same_size(other);
        for (size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
    }

    // popcount(this | other) without materialising the union.
    uint64_t union_popcount(const BitArray& other) const {
        check_same_size(other);
        uint64_t total = 0;
        for (size_t i = 0; i < words_.size(); ++i) total += platform::popcount64(words_[i] | other.words_[i]);
        return total;
    }

    // True when no bit at or beyond num_bits is set in the last word; a valid
    // serialized filter must satisfy this.
    bool padding_is_clear() const {
        const uint64_t used = num_bits_ & 63;
        if (used == 0 || words_.empty()) return true;
        return (words_.back() >> used) == 0;
    }

    bool operator==(const BitArray& other) const { return num_bits_ == other.num_bits_ && words_ == other.words_; }

  private:
    void check_same_size(const BitArray& other) const {
        if (other.num_bits_ != num_bits_) throw std::invalid_argument("bit arrays differ in size");
    }

    uint64_t num_bits_ = 0;
    WordStorage words_;
};

// Packed saturating counters for the counting Bloom filter (Fan, Cao,
// Almeida & Broder, "Summary Cache", 2000). Counter i occupies bits
// [(i mod c) * w, (i mod c) * w + w) of word i div c, where w is the counter
// width and c = 64 / w counters share a word; serialized little-endian this
// puts two 4-bit counters in each byte, counter 2j in the low nibble of byte j.
//
// A counter that reaches its maximum 2^w - 1 is *saturated*: it stays there.
// It no longer knows how many keys share it, so it must never be decremented
// either, or a later removal could take it to zero under a key that is still
// present (a false negative). Fan et al. show that with 4-bit counters and
// optimal k the chance that any counter ever reaches 16 is about
// 1.37e-15 * m, which is why 4 bits is the default width.
class CounterArray {
  public:
    // Widths that divide 64, so a counter never straddles two words.
    static bool valid_width(uint32_t width) { return valid_counter_width(width); }

    CounterArray() = default;
    CounterArray(uint64_t num_counters, uint32_t width)
        : num_counters_(num_counters),
          width_(width),
          shift_(width == 4   ? 2
                 : width == 8 ? 3
                              : 4),
          max_(static_cast<uint32_t>((uint64_t(1) << width) - 1)) {
        if (!valid_width(width))
            throw std::invalid_argument("counter_bits must be " + counter_widths_text() + ", got " +
                                        std::to_string(width));
        words_.assign(check_allocation(words_for(num_counters, width), sizeof(uint64_t), "counter array"), 0);
    }

    // Words needed for `num_counters` counters of `width` bits, without
    // overflowing for any 64-bit count.
    static uint64_t words_for(uint64_t num_counters, uint32_t width) {
        const uint64_t per_word = 64 / width;
        return num_counters / per_word + (num_counters % per_word != 0);
    }

    uint64_t num_counters() const { return num_counters_; }
    uint32_t width() const { return width_; }
    uint32_t max_value() const { return max_; }
    uint64_t num_words() const { return words_.size(); }
    uint64_t nbytes() const { return words_.size() * sizeof(uint64_t); }
    const uint64_t* words() const { return words_.data(); }
    uint64_t* words() { return words_.data(); }

    uint32_t get(uint64_t i) const { return static_cast<uint32_t>((words_[word_of(i)] >> offset_of(i)) & max_); }

    // Adds one unless saturated; returns the value before. Branch-free (the
    // saturation test becomes the addend), so the filter's probe loops have
    // no data-dependent branches.
    uint32_t increment(uint64_t i) {
        uint64_t& word = words_[word_of(i)];
        const uint32_t offset = offset_of(i);
        const uint32_t old = static_cast<uint32_t>((word >> offset) & max_);
        word += uint64_t(old != max_) << offset;
        return old;
    }

    // Subtracts one unless the counter is zero or saturated; returns the
    // value before. Branch-free, like increment().
    uint32_t decrement(uint64_t i) {
        uint64_t& word = words_[word_of(i)];
        const uint32_t offset = offset_of(i);
        const uint32_t old = static_cast<uint32_t>((word >> offset) & max_);
        word -= uint64_t(old != 0 && old != max_) << offset;
        return old;
    }

    void prefetch(uint64_t i) const { platform::prefetch_read(&words_[word_of(i)]); }

    // Number of non-zero counters, a word at a time: OR-folding each lane
    // onto its lowest bit (shifts 1, 2, ..., w/2 sum to w - 1, so no bit
    // crosses into the lane below) and counting those bits.
    uint64_t nonzero_count() const {
        const uint64_t low_bits = lane_low_bits();
        uint64_t total = 0;
        for (uint64_t w : words_) {
            uint64_t folded = w;
            for (uint32_t s = 1; s < width_; s <<= 1) folded |= folded >> s;
            total += platform::popcount64(folded & low_bits);
        }
        return total;
    }

    // Sets bit i of `bits` for every non-zero counter i (bits must hold
    // num_counters() bits and be clear).
    void nonzero_to_bits(BitArray& bits) const {
        for (uint64_t i = 0; i < num_counters_; ++i)
            if (get(i) != 0) bits.words()[i >> 6] |= uint64_t(1) << (i & 63);
    }

    // Counter-wise saturating sum: the counters of a filter holding both
    // multisets of keys, with anything past the maximum clamped (saturated).
    void saturating_add(const CounterArray& other) {
        if (other.num_counters_ != num_counters_ || other.width_ != width_)
            throw std::invalid_argument("counter arrays differ in size or width");
        for (uint64_t i = 0; i < num_counters_; ++i) {
            const uint32_t sum = get(i) + other.get(i);
            set(i, sum < max_ ? sum : max_);
        }
    }

    void clear() { std::fill(words_.begin(), words_.end(), 0); }

    // True when every lane past the last counter is zero; a valid serialized
    // filter must satisfy this.
    bool padding_is_clear() const {
        const uint64_t used_bits = (num_counters_ << shift_) & 63;
        if (used_bits == 0 || words_.empty()) return true;
        return (words_.back() >> used_bits) == 0;
    }

    bool operator==(const CounterArray& other) const {
        return num_counters_ == other.num_counters_ && width_ == other.width_ && words_ == other.words_;
    }

  private:
    uint64_t word_of(uint64_t i) const { return i >> (6 - shift_); }
    uint32_t offset_of(uint64_t i) const { return static_cast<uint32_t>((i << shift_) & 63); }

    void set(uint64_t i, uint32_t value) {
        uint64_t& word = words_[word_of(i)];
        const uint32_t offset = offset_of(i);
        word = (word & ~(uint64_t(max_) << offset)) | (uint64_t(value) << offset);
    }

    // 1 in the lowest bit of every lane: 0x1111... for w = 4, 0x0101... for 8.
    uint64_t lane_low_bits() const { return ~uint64_t(0) / max_; }

    uint64_t num_counters_ = 0;
    uint32_t width_ = 4;
    uint32_t shift_ = 2;  // log2(width_)
    uint32_t max_ = 15;
    std::vector<uint64_t> words_;
};

}  // namespace bloomkit
