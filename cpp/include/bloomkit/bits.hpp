// Bit storage for the Bloom filters: 64-bit words addressed by 64-bit bit
// indices, so a filter may hold far more than 2^32 bits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace bloomkit {

class BitArray {
  public:
    BitArray() = default;
    explicit BitArray(uint64_t num_bits) : num_bits_(num_bits), words_(words_for(num_bits), 0) {}

    static uint64_t words_for(uint64_t num_bits) { return (num_bits + 63) / 64; }

    uint64_t num_bits() const { return num_bits_; }
    uint64_t num_words() const { return words_.size(); }
    uint64_t nbytes() const { return words_.size() * sizeof(uint64_t); }
    const uint64_t* words() const { return words_.data(); }
    uint64_t* words() { return words_.data(); }

    bool test(uint64_t bit) const { return (words_[bit >> 6] >> (bit & 63)) & 1u; }

    // Sets the bit and reports whether it was already set.
    bool test_and_set(uint64_t bit) {
        uint64_t& word = words_[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        const bool was_set = (word & mask) != 0;
        word |= mask;
        return was_set;
    }

    void prefetch(uint64_t bit) const {
#if defined(__GNUC__)
        __builtin_prefetch(&words_[bit >> 6]);
#endif
    }

    uint64_t popcount() const {
        uint64_t total = 0;
        for (uint64_t w : words_) total += static_cast<uint64_t>(__builtin_popcountll(w));
        return total;
    }

    void clear() { std::fill(words_.begin(), words_.end(), 0); }

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
        for (size_t i = 0; i < words_.size(); ++i)
            total += static_cast<uint64_t>(__builtin_popcountll(words_[i] | other.words_[i]));
        return total;
    }

    // True when no bit at or beyond num_bits is set in the last word; a valid
    // serialized filter must satisfy this.
    bool padding_is_clear() const {
        const uint64_t used = num_bits_ & 63;
        if (used == 0 || words_.empty()) return true;
        return (words_.back() >> used) == 0;
    }

    bool operator==(const BitArray& other) const {
        return num_bits_ == other.num_bits_ && words_ == other.words_;
    }

  private:
    void check_same_size(const BitArray& other) const {
        if (other.num_bits_ != num_bits_) throw std::invalid_argument("bit arrays differ in size");
    }

    uint64_t num_bits_ = 0;
    std::vector<uint64_t> words_;
};

}  // namespace bloomkit
