// The bit array of the foreign-format Bloom filters -- Spark's sketch
// (spark_sketch.hpp) and ORC's filter (orc_bloom.hpp): 64-bit words probed
// at the k positions that Derived::for_each_position(pair, f) derives from a
// key's pair of 32-bit hashes. Only that derivation (and each format's
// header) differs between the two, so the set and batch loops live here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform.hpp"

namespace bloomkit {

template <class Derived, class Pair>
class PairHashedBits {
  public:
    uint64_t num_bits() const { return words_.size() * 64; }
    uint64_t num_words() const { return words_.size(); }
    uint64_t nbytes() const { return words_.size() * 8; }
    uint64_t set_bits() const {
        uint64_t total = 0;
        for (uint64_t w : words_) total += platform::popcount64(w);
        return total;
    }

    void clear() { std::fill(words_.begin(), words_.end(), uint64_t(0)); }

    // Test-and-set like bloomkit's filters: true if every bit was already set.
    // (Spark's put() returns the opposite, "bits changed".)
    bool add(Pair h) {
        bool present = true;
        derived().for_each_position(h, [&](auto bit) {
            uint64_t& word = words_[bit >> 6];
            const uint64_t mask = uint64_t(1) << (bit & 63);
            present &= (word & mask) != 0;
            word |= mask;
        });
        return present;
    }

    // add() of each pair; out[i] (when out is not null) is add's result.
    void add_many(const Pair* pairs, size_t count, uint8_t* out) {
        for (size_t i = 0; i < count; ++i) {
            const bool present = add(pairs[i]);
            if (out != nullptr) out[i] = present;
        }
    }

    void contains_many(const Pair* pairs, size_t count, uint8_t* out) const {
        for (size_t i = 0; i < count; ++i) out[i] = derived().contains(pairs[i]);
    }

  protected:
    // The words are allocated by the derived constructor, after it has
    // validated the header that sizes them.
    PairHashedBits() = default;

    // OR of another filter's words; the caller has checked the shapes match.
    void or_words(const PairHashedBits& other) {
        for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    }

    std::vector<uint64_t> words_;

  private:
    Derived& derived() { return static_cast<Derived&>(*this); }
    const Derived& derived() const { return static_cast<const Derived&>(*this); }
};

}  // namespace bloomkit
