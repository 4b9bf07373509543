// Skipping many Parquet files with their Bloom filters in one call: for
// each file, its footer (parquet_footer.hpp), each row group's filter of one
// column read with every size bounded first, and a probe asking whether any
// of a key set may be present — no Python between the files.
//
// The probe. Parquet's split-block filter sends a key with hash h to block
// ((h >> 32) * num_blocks) >> 32 and tests eight bits there that depend only
// on the low 32 bits of h (BloomFilter.md; parquet_bloom.hpp). So a key's
// 256-bit mask is the same in every file: `KeyProbes` computes it once per
// key set (32 bytes a key), and a file's probe is a block index and one
// 256-bit AND-compare per key (AVX2's vptest when simd.hpp says AVX2 is
// active), stopping at the first key that may be present.
//
// The files. `skip_files` walks any `ParquetSource` (a file descriptor in
// production, bytes in memory for the tests and the fuzzer:
// positional_file.hpp) and stops with a
// `SkipStop` instead of throwing: at the end, at a file whose column has a
// type (schema signature) no key set was given for yet — the caller hashes
// the keys for it and resumes at that file — or at the first malformed file,
// with the row group and the reason. The checks and their order are those of
// bloomkit/parquet.py's reader of file-like sources, so both report a bad
// file alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "format.hpp"
#include "hash.hpp"
#include "layouts.hpp"
#include "memory.hpp"
#include "parquet_bloom.hpp"
#include "parquet_footer.hpp"
#include "positional_file.hpp"
#include "simd.hpp"

namespace bloomkit {
namespace parquet {

// A file whose filter has no recorded length is read this far to find the
// end of its header (a few dozen bytes); parquet.py's _HEADER_PREFIX.
constexpr uint64_t kHeaderPrefix = 4096;
constexpr uint64_t kMaxFilterBytes = kHeaderPrefix + kMaxBitsetBytes;

// One key set, ready to probe any split-block filter: per key the high 32
// bits of its hash (the block choice) and its 256-bit mask (four 64-bit words
// as the bitset's little-endian words hold them).
class KeyProbes {
  public:
    KeyProbes() = default;
    KeyProbes(const uint64_t* hashes, size_t n) : high_(n), masks_(4 * n) {
        for (size_t i = 0; i < n; ++i) {
            high_[i] = static_cast<uint32_t>(hashes[i] >> 32);
            SplitBlockLayout::masks_of_seed(static_cast<uint32_t>(hashes[i]), masks_.data() + 4 * i);
        }
    }

    size_t size() const { return high_.size(); }

    // Whether any key may be in the bitset of num_blocks 32-byte blocks
    // (Parquet's bytes as stored: blocks of eight little-endian uint32).
    bool any_in(const uint8_t* bitset, uint64_t num_blocks) const {
#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
        if (simd::active_level() == simd::Level::Avx2)
            return any_in_avx2(bitset, num_blocks, high_.data(), masks_.data(), high_.size());
#endif
        return any_in_portable(bitset, num_blocks);
    }

  private:
    static uint64_t block_of(uint32_t high, uint64_t num_blocks) { return (uint64_t(high) * num_blocks) >> 32; }

    bool any_in_portable(const uint8_t* bitset, uint64_t num_blocks) const {
        const size_t n = high_.size();
        for (size_t i = 0; i < n; ++i) {
            const uint8_t* block = bitset + kBlockBytes * block_of(high_[i], num_blocks);
            const uint64_t* mask = masks_.data() + 4 * i;
            uint64_t missing = 0;
            for (int w = 0; w < 4; ++w) missing |= mask[w] & ~bloomkit::detail::load_le64(block + 8 * w);
            if (missing == 0) return true;
        }
        return false;
    }

#if defined(BLOOMKIT_HAVE_AVX2_KERNELS)
    // x86-64 is little-endian: a block's bytes are its four words as is.
    BLOOMKIT_TARGET_AVX2 static bool any_in_avx2(const uint8_t* bitset, uint64_t num_blocks, const uint32_t* high,
                                                 const uint64_t* masks, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const __m256i bits = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(bitset + kBlockBytes * block_of(high[i], num_blocks)));
            const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(masks + 4 * i));
            if (_mm256_testc_si256(bits, mask)) return true;  // carry: (~bits & mask) == 0
        }
        return false;
    }
#endif

    std::vector<uint32_t> high_;
    std::vector<uint64_t> masks_;
};

// Why a walk over files stopped.
struct SkipStop {
    enum Kind {
        kDone,         // every file was read
        kNeedKeys,     // `file`'s column has `signature`, for which no key set was given
        kMalformed,    // `file` (and `row_group` when >= 0) is refused: `reason`
        kNoColumn,     // `file` has no such column
        kSystemError,  // opening or reading `file` failed with errno `error`
    };
    Kind kind = kDone;
    size_t file = 0;
    int64_t row_group = -1;
    int error = 0;
    std::string reason;
    std::string signature;
};

// A row group that may hold a key: (file index, row group).
using Candidate = std::pair<uint64_t, uint64_t>;

namespace detail {

// Thrown inside one file's walk; becomes that file's kMalformed stop.
struct Refused {
    int64_t row_group;
    std::string reason;
};

template <class File>
void read_exactly(const File& file, uint64_t offset, uint64_t length, std::vector<uint8_t>& buffer, int64_t row_group) {
    check_allocation(length, 1, "Parquet file read");
    buffer.resize(static_cast<size_t>(length));
    const uint64_t got = file.read_at(offset, length, buffer.data());
    if (got != length)
        throw Refused{row_group, "truncated: " + std::to_string(got) + " of " + std::to_string(length) +
                                     " bytes at offset " + std::to_string(offset)};
}

}  // namespace detail

// The key sets by column type, and what the walk found so far.
class FileSkipper {
  public:
    // `path`: the column's names from the root's child down.
    explicit FileSkipper(std::vector<std::string> path) : path_(std::move(path)) {}

    // The key set for columns whose leaf has this schema signature.
    void add_keys(const std::string& signature, const uint64_t* hashes, size_t n) {
        probes_[signature] = KeyProbes(hashes, n);
    }
    bool has_keys(const std::string& signature) const { return probes_.count(signature) != 0; }

    const std::vector<Candidate>& candidates() const { return candidates_; }

    // Walks files[start..]: open_file(i) gives file i (a File: size(),
    // read_at()). Appends the candidates of every file read completely.
    template <class OpenFile>
    SkipStop run(size_t count, size_t start, OpenFile&& open_file) {
        for (size_t i = start; i < count; ++i) {
            SkipStop stop;
            stop.file = i;
            const size_t kept = candidates_.size();
            try {
                const auto file = open_file(i);
                if (!skip_file(*file, i, stop)) {
                    candidates_.resize(kept);
                    return stop;
                }
            } catch (const SystemErrorAt& error) {
                candidates_.resize(kept);
                stop.kind = SkipStop::kSystemError;
                stop.error = error.error;
                return stop;
            } catch (const detail::Refused& refused) {
                candidates_.resize(kept);
                stop.kind = SkipStop::kMalformed;
                stop.row_group = refused.row_group;
                stop.reason = refused.reason;
                return stop;
            }
        }
        return SkipStop{};
    }

    // One file: false when the walk must stop there (`stop` says why).
    template <class File>
    bool skip_file(const File& file, size_t index, SkipStop& stop) {
        using detail::Refused;
        const uint64_t size = file.size();
        if (size < 12) throw Refused{-1, "not a Parquet file (" + std::to_string(size) + " bytes)"};
        detail::read_exactly(file, size - 8, 8, buffer_, -1);
        uint8_t tail[8];
        std::memcpy(tail, buffer_.data(), 8);
        if (std::memcmp(tail + 4, "PAR1", 4) != 0)
            throw Refused{-1,
                          std::string("not a readable Parquet file: ") +
                              (std::memcmp(tail + 4, "PARE", 4) == 0 ? "an encrypted footer, which bloomkit cannot read"
                                                                     : "no PAR1 magic")};
        const uint64_t length = bloomkit::detail::load_le32(tail);
        if (length > size - 12)
            throw Refused{-1, "the footer length " + std::to_string(length) + " does not fit the file (" +
                                  std::to_string(size) + " bytes)"};
        detail::read_exactly(file, size - 8 - length, length, buffer_, -1);
        ColumnFilters column;
        try {
            column = find_column_filters(buffer_.data(), buffer_.size(), path_);
        } catch (const FormatError& error) {
            throw Refused{-1, error.what()};
        }
        if (!column.found) {
            stop.kind = SkipStop::kNoColumn;
            return false;
        }
        const auto probes = probes_.find(column.signature);
        if (probes == probes_.end()) {
            stop.kind = SkipStop::kNeedKeys;
            stop.signature = std::move(column.signature);
            return false;
        }
        for (size_t g = 0; g < column.row_groups.size(); ++g) {
            const ChunkFilter chunk = column.row_groups[g];
            if (chunk.offset < 0 || filter_may_hold(file, chunk, static_cast<int64_t>(g), probes->second))
                candidates_.emplace_back(index, g);
        }
        return true;
    }

  private:
    template <class File>
    bool filter_may_hold(const File& file, const ChunkFilter& chunk, int64_t g, const KeyProbes& probes) {
        using detail::Refused;
        const uint64_t size = file.size();
        const uint64_t offset = static_cast<uint64_t>(chunk.offset);
        if (offset >= size)
            throw Refused{g, "the filter's offset " + std::to_string(offset) + " is past the end of the file (" +
                                 std::to_string(size) + " bytes)"};
        if (chunk.length > 0) {
            const uint64_t length = static_cast<uint64_t>(chunk.length);
            const bool past_end = offset + length > size;
            if (length > kMaxFilterBytes || past_end)
                throw Refused{g, "the recorded filter length " + std::to_string(length) + " at offset " +
                                     std::to_string(offset) + " does not fit " +
                                     (past_end ? "the file" : "the largest Parquet filter")};
            detail::read_exactly(file, offset, length, buffer_, g);
        } else {
            // No recorded length: the header says how much bitset follows it.
            detail::read_exactly(file, offset, std::min(kHeaderPrefix, size - offset), buffer_, g);
            BloomHeader header;
            try {
                header = parse_bloom_header(buffer_.data(), buffer_.size());
            } catch (const FormatError& error) {
                throw Refused{g, error.what()};
            }
            if (offset + header.header_size + header.num_bytes > size)
                throw Refused{
                    g, "the header declares a " + std::to_string(header.num_bytes) + "-byte bitset, the file ends " +
                           std::to_string(size - offset - header.header_size) + " bytes after it (truncated)"};
            detail::read_exactly(file, offset, header.header_size + header.num_bytes, buffer_, g);
        }
        BloomHeader header;
        try {
            header = ParquetBloomFilter::check_bytes(buffer_.data(), buffer_.size());
        } catch (const FormatError& error) {
            throw Refused{g, error.what()};
        }
        return probes.any_in(buffer_.data() + header.header_size, header.num_bytes / kBlockBytes);
    }

    std::vector<std::string> path_;
    std::map<std::string, KeyProbes> probes_;
    std::vector<Candidate> candidates_;
    std::vector<uint8_t> buffer_;  // one file's footer, then each filter in turn
};

}  // namespace parquet
}  // namespace bloomkit
