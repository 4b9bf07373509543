// Row keys: one key per row of several key columns (a DataFrame's rows, or a
// subset of its columns), for deduplicating whole rows.
//
// Definition (docs/decisions.md, "Row keys"): with every column's key hashed
// under the filter's seed s to its MurmurHash3_x64_128 digest (h1, h2), the
// row's key is the 16*C bytes
//     h1(col 0) h2(col 0) h1(col 1) h2(col 1) ... h2(col C-1)
// (each half 8 bytes little-endian), and the row's digest is
// murmur3_x64_128(those bytes, s); for a keyed filter both the column
// digests and the row digest are its SipHash (keys.hpp, KeyHashing). Equal rows (equal keys column by column)
// are equal row keys; column order matters; two different rows share a
// digest only if MurmurHash3 collides (about 2**-128 per pair).
//
// RowKeys is a key source like those of keys.hpp, so every filter takes it
// through hash_chunks(). It hashes column by column over blocks of
// kHashChunk rows (each column's source walks forward through its data,
// cache-friendly, with one virtual call per column and block), then hashes
// the block's row strings: one pass over the rows, kHashChunk * C digests
// of scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hash.hpp"
#include "keys.hpp"

namespace bloomkit {

// One column of keys behind a type-erased interface (the columns of a row
// batch have different key-source types).
class ColumnDigests {
  public:
    virtual ~ColumnDigests() = default;
    virtual size_t size() const = 0;
    // out[j * out_stride] = digest of key first + j, for j in [0, count).
    virtual void hash_range(size_t first, size_t count, uint32_t seed, Hash128* out, size_t out_stride) const = 0;
};

template <class Keys>
class ColumnOf final : public ColumnDigests {
  public:
    explicit ColumnOf(Keys keys) : keys_(std::move(keys)) {}
    size_t size() const override { return keys_.size(); }
    void hash_range(size_t first, size_t count, uint32_t seed, Hash128* out, size_t out_stride) const override {
        for (size_t j = 0; j < count; ++j) out[j * out_stride] = keys_.hash(first + j, seed);
    }

  private:
    Keys keys_;
};

template <class Keys>
std::unique_ptr<ColumnDigests> make_column(Keys keys) {
    return std::unique_ptr<ColumnDigests>(new ColumnOf<Keys>(std::move(keys)));
}

class RowKeys {
  public:
    // `keyed`: the filter's keyed hashing, whose columns the caller has
    // already wrapped (KeyHashing::visit_source); null for MurmurHash3.
    explicit RowKeys(std::vector<std::unique_ptr<ColumnDigests>> columns, const KeyHashing* keyed = nullptr)
        : columns_(std::move(columns)), keyed_(keyed != nullptr && keyed->keyed()) {
        if (keyed_) sip_ = keyed->sip();
        if (columns_.empty()) throw std::invalid_argument("a row key needs at least one column");
        rows_ = columns_.front()->size();
        for (const auto& column : columns_)
            if (column->size() != rows_) throw std::invalid_argument("row key columns differ in length");
    }

    size_t size() const { return rows_; }
    size_t num_columns() const { return columns_.size(); }

    Hash128 hash(size_t i, uint32_t seed) const {
        if (i < first_ || i >= first_ + filled_ || seed != seed_) fill(i, seed);
        return row_digests_[i - first_];
    }

  private:
    void fill(size_t i, uint32_t seed) const {
        const size_t count = std::min(kHashChunk, rows_ - i);
        const size_t width = columns_.size();
        column_digests_.resize(count * width);
        row_digests_.resize(count);
        filled_ = 0;
        for (size_t c = 0; c < width; ++c) columns_[c]->hash_range(i, count, seed, column_digests_.data() + c, width);
        row_bytes_.resize(16 * width);
        // One decision per block of rows, not per row.
        if (keyed_)
            hash_rows(count, width, sip_);
        else
            hash_rows(count, width, Murmur3Hasher{seed});
        first_ = i;
        filled_ = count;
        seed_ = seed;
    }

    template <class Hasher>
    void hash_rows(size_t count, size_t width, const Hasher& hasher) const {
        for (size_t j = 0; j < count; ++j) {
            uint8_t* out = row_bytes_.data();
            for (size_t c = 0; c < width; ++c) {
                const Hash128& d = column_digests_[j * width + c];
                put_le64(out, d.h1);
                put_le64(out + 8, d.h2);
                out += 16;
            }
            row_digests_[j] = hasher.bytes(row_bytes_.data(), row_bytes_.size());
        }
    }

    static void put_le64(uint8_t* out, uint64_t v) {
        for (int b = 0; b < 8; ++b) out[b] = static_cast<uint8_t>(v >> (8 * b));
    }

    std::vector<std::unique_ptr<ColumnDigests>> columns_;
    bool keyed_;
    SipHasher sip_{{0, 0}};
    size_t rows_ = 0;
    mutable std::vector<Hash128> column_digests_;
    mutable std::vector<Hash128> row_digests_;
    mutable std::vector<uint8_t> row_bytes_;
    mutable size_t first_ = 0;
    mutable size_t filled_ = 0;
    mutable uint32_t seed_ = 0;
};

}  // namespace bloomkit
