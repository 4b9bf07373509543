// "May any of these keys be in this ORC filter?" for many filters and one
// key set, as ORC stripe skipping asks it.
//
// ORC's probe i of a key is bit (c_i mod m) with c_i = hash1 + i * hash2
// (orc_bloom.hpp): a 32-bit division per probe, and a branch on each bit
// that an absent key fails at random (a filter is about half full). But the
// positions depend only on the key and on m, and a lake's filters share a
// few sizes (one per writer setting and stride length). So `OrcKeyProbes`
// computes each key's first kLeadProbes positions once per size m, and a
// filter's probe is, per key, kLeadProbes bit loads ANDed without a branch
// into a mask of 64 keys; only a key whose lead bits are all set (1 in 8 of
// absent keys at half fill) is probed further, ORC's remaining probes with
// the modulo as a multiplication.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "orc_bloom.hpp"
#include "platform.hpp"

namespace bloomkit {
namespace orc {

class OrcKeyProbes {
  public:
    static constexpr uint32_t kLeadProbes = 3;
    static constexpr size_t kMaxSizesKept = 16;

    OrcKeyProbes(const HashPair* pairs, size_t n) : pairs_(pairs, pairs + n) {}

    size_t size() const { return pairs_.size(); }

    // Whether any key may be in `filter` (its contains() for at least one).
    bool any_in(const OrcBloomFilter& filter) {
        const size_t n = pairs_.size();
        if (n == 0) return false;
        const uint32_t lead = std::min(kLeadProbes, filter.num_hashes());
        const std::vector<uint32_t>& positions = lead_positions(filter.num_bits());
        const uint64_t* words = filter.words();
        const FastMod32 modulo(static_cast<uint32_t>(filter.num_bits()));
        constexpr size_t kChunk = 64;
        for (size_t start = 0; start < n; start += kChunk) {
            const size_t count = std::min(kChunk, n - start);
            uint64_t maybe = 0;
            for (size_t j = 0; j < count; ++j) {
                const uint32_t* p = positions.data() + kLeadProbes * (start + j);
                uint64_t all = 1;
                for (uint32_t i = 0; i < lead; ++i) all &= words[p[i] >> 6] >> (p[i] & 63);
                maybe |= (all & 1) << j;
            }
            for (; maybe != 0; maybe &= maybe - 1)
                if (rest_set(filter, words, modulo, lead, pairs_[start + platform::ctz64(maybe)])) return true;
        }
        return false;
    }

  private:
    // x mod d for 32-bit x without a division (Lemire, Kaser & Kurz 2019,
    // "Faster remainder by direct computation"): with M = floor((2^64 - 1) / d) + 1,
    // x mod d = ((M * x mod 2^64) * d) >> 64, exact for every 32-bit x and d.
    struct FastMod32 {
        explicit FastMod32(uint32_t d) : m(UINT64_MAX / d + 1), d(d) {}
        uint32_t operator()(uint32_t x) const { return static_cast<uint32_t>(platform::mul_high64(m * x, d)); }
        uint64_t m;
        uint32_t d;
    };

    // Probes lead+1..k of a key whose first `lead` bits are set: ORC's
    // contains() from there on, its modulo without a division.
    static bool rest_set(const OrcBloomFilter& filter, const uint64_t* words, const FastMod32& modulo, uint32_t lead,
                         HashPair h) {
        for (uint32_t i = lead + 1; i <= filter.num_hashes(); ++i) {
            int32_t c = static_cast<int32_t>(static_cast<uint32_t>(h.hash1) + i * static_cast<uint32_t>(h.hash2));
            if (c < 0) c = ~c;
            const uint32_t bit = modulo(static_cast<uint32_t>(c));
            if (((words[bit >> 6] >> (bit & 63)) & 1) == 0) return false;
        }
        return true;
    }

    // Probes 1..kLeadProbes of every key in a filter of num_bits bits, as
    // OrcBloomFilter::for_each_position computes them (kept for each size met).
    const std::vector<uint32_t>& lead_positions(uint64_t num_bits) {
        auto found = by_size_.find(num_bits);
        if (found != by_size_.end()) return found->second;
        // Hostile files of ever new sizes cost a recomputation, never unbounded memory.
        if (by_size_.size() >= kMaxSizesKept) by_size_.clear();
        std::vector<uint32_t>& positions = by_size_[num_bits];
        positions.resize(kLeadProbes * pairs_.size());
        const uint32_t bits = static_cast<uint32_t>(num_bits);  // < 2^31 (kMaxOrcWords)
        for (size_t j = 0; j < pairs_.size(); ++j) {
            const HashPair h = pairs_[j];
            for (uint32_t i = 1; i <= kLeadProbes; ++i) {
                int32_t c = static_cast<int32_t>(static_cast<uint32_t>(h.hash1) + i * static_cast<uint32_t>(h.hash2));
                if (c < 0) c = ~c;
                positions[kLeadProbes * j + i - 1] = static_cast<uint32_t>(c) % bits;
            }
        }
        return positions;
    }

    std::vector<HashPair> pairs_;
    std::map<uint64_t, std::vector<uint32_t>> by_size_;
};

}  // namespace orc
}  // namespace bloomkit
