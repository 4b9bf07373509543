// Skipping the stripes of many ORC files in one call: per file its tail
// (PostScript, Footer), the column's id, each stripe's footer and Bloom
// filter stream, and OrcKeyProbes (orc_skip.hpp) — no Python between files,
// the files' two halves on two threads.
//
// What is read and how is bloomkit/orc.py's _OrcFile, step for step
// (docs/FORMAT.md, "ORC files"): the same fields, the same "last one wins"
// for repeated scalars, the same choice of stream (ORC's BloomFilterIO), the
// same bounds. This walk reads only files it can read completely: anything
// else — a bound not met, a malformed message, an unknown column, a chunk the
// caller's inflater refuses, a failed open — stops it at that file with
// kReadElsewhere, and the caller reads that one file its own way (orc.py),
// which raises the error it names or returns its stripes. So a bad file is
// reported exactly as before, and this reader never has to word an error.
//
// Compressed parts are ORC's chunks (a 3-byte header: length << 1 |
// is-original) of at most the file's block size; a compressed chunk is
// handed to the caller's `Inflate`, one per walk thread (this header links
// no codec; zlib/orc_inflate.hpp inflates ZLIB chunks with zlib).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "format.hpp"
#include "memory.hpp"
#include "orc_bloom.hpp"
#include "orc_skip.hpp"
#include "parallel.hpp"
#include "positional_file.hpp"
#include "protobuf_wire.hpp"

namespace bloomkit {
namespace orc {

// PostScript.compression (orc_proto.proto CompressionKind).
enum Compression : uint32_t { kNone = 0, kZlib = 1, kSnappy = 2, kLzo = 3, kLz4 = 4, kZstd = 5 };

// Inflates one compressed chunk into `out` (room for `capacity` bytes, the
// block size); returns the bytes written. Throws ReadElsewhere to refuse it.
// Called by one walk thread only, so it may keep a codec's state.
using Inflate =
    std::function<size_t(uint32_t compression, const uint8_t* chunk, size_t size, uint8_t* out, size_t capacity)>;

// A file this walk leaves to the caller's reader.
struct ReadElsewhere {};

struct OrcSkipStop {
    enum Kind { kDone, kReadElsewhere };
    Kind kind = kDone;
    size_t file = 0;
};

// A candidate stripe: (file index, stripe).
using OrcCandidate = std::pair<uint64_t, uint64_t>;

namespace file_detail {

constexpr uint64_t kDefaultBlock = 256 * 1024;
constexpr uint64_t kMaxBlock = uint64_t(1) << 24;
// Stream.Kind and Type.Kind numbers of orc_proto.proto.
constexpr uint64_t kBloomFilter = 7, kBloomFilterUtf8 = 8;
constexpr uint64_t kStruct = 12, kTimestamp = 9, kString = 7, kVarchar = 16, kChar = 17;
// OrcFile.WriterVersion.HIVE_12055 (strings in legacy streams hashed as UTF-8 from it on).
constexpr uint64_t kHive12055 = 3;

[[noreturn]] inline void elsewhere() { throw ReadElsewhere{}; }

// One message's fields, in order.
inline std::vector<protobuf::Field> fields(const uint8_t* data, size_t size) {
    std::vector<protobuf::Field> out;
    protobuf::WireReader reader(data, size, "ORC message");
    while (!reader.done()) out.push_back(reader.next());
    return out;
}

inline bool is_bytes(const protobuf::Field& f) { return f.wire_type == protobuf::kLengthDelimited; }
inline uint64_t number(const protobuf::Field& f) {
    if (is_bytes(f)) elsewhere();
    return f.value;
}

// a + b, or elsewhere() when it overflows (Python's integers do not).
inline uint64_t add(uint64_t a, uint64_t b) {
    if (b > UINT64_MAX - a) elsewhere();
    return a + b;
}

struct Stripe {
    uint64_t offset = 0, index_length = 0, data_length = 0, footer_length = 0;
};

}  // namespace file_detail

// One thread's walk over a run of files (OrcFileSkipper runs two).
class OrcFileWalk {
  public:
    OrcFileWalk(std::string column, const HashPair* pairs, size_t n)
        : column_(std::move(column)), probes_(pairs, n), have_keys_(n > 0) {}

    std::vector<OrcCandidate>& candidates() { return candidates_; }

    // Walks files[start..] (open_file(i) gives file i); stops at the end or
    // at a file to be read elsewhere, keeping no candidate of that file.
    template <class OpenFile>
    OrcSkipStop run(size_t count, size_t start, OpenFile&& open_file, const Inflate& inflate) {
        for (size_t i = start; i < count; ++i) {
            const size_t kept = candidates_.size();
            try {
                const auto file = open_file(i);
                skip_file(*file, i, inflate);
            } catch (const ReadElsewhere&) {
                candidates_.resize(kept);
                return OrcSkipStop{OrcSkipStop::kReadElsewhere, i};
            } catch (const SystemErrorAt&) {
                candidates_.resize(kept);
                return OrcSkipStop{OrcSkipStop::kReadElsewhere, i};
            } catch (const FormatError&) {
                candidates_.resize(kept);
                return OrcSkipStop{OrcSkipStop::kReadElsewhere, i};
            } catch (const std::invalid_argument&) {  // an OrcBloomFilter's k or size out of range
                candidates_.resize(kept);
                return OrcSkipStop{OrcSkipStop::kReadElsewhere, i};
            }
        }
        return OrcSkipStop{};
    }

    template <class File>
    void skip_file(const File& file, size_t index, const Inflate& inflate) {
        using namespace file_detail;
        const uint64_t size = file.size();
        if (size < 5) elsewhere();
        read(file, 0, 3);
        if (std::memcmp(buffer_.data(), "ORC", 3) != 0) elsewhere();
        read(file, size - 1, 1);
        const uint64_t ps_length = buffer_[0];
        if (ps_length == 0 || ps_length + 4 > size) elsewhere();
        const uint64_t ps_offset = size - 1 - ps_length;
        read(file, ps_offset, ps_length);
        uint64_t footer_length = 0, metadata_length = 0, compression = 0, writer_version = 0;
        uint64_t block_size = kDefaultBlock;
        bool magic = false;
        for (const protobuf::Field& f : fields(buffer_.data(), buffer_.size())) {
            switch (f.number) {
                case 1: footer_length = number(f); break;
                case 2: compression = number(f); break;
                case 3: block_size = number(f); break;
                case 5: metadata_length = number(f); break;
                case 6: writer_version = number(f); break;
                case 8000: magic = is_bytes(f) && f.size == 3 && std::memcmp(f.data, "ORC", 3) == 0; break;
                default: break;
            }
        }
        if (!magic) elsewhere();
        if (compression != kNone && compression != kZlib && compression != kSnappy && compression != kLz4 &&
            compression != kZstd)
            elsewhere();
        if (block_size < 1 || block_size > kMaxBlock) elsewhere();
        if (footer_length == 0 || footer_length > ps_offset || metadata_length > ps_offset - footer_length ||
            ps_offset - footer_length - metadata_length < 3)
            elsewhere();
        const uint64_t footer_offset = ps_offset - footer_length;
        const uint64_t content_end = footer_offset - metadata_length;
        compression_ = static_cast<uint32_t>(compression);
        block_size_ = block_size;

        // The Footer: stripes (3) and types (4), kept as copies of their bytes.
        const std::vector<uint8_t> footer = read_part(file, footer_offset, footer_length, inflate);
        std::vector<Stripe> stripes;
        std::vector<std::pair<const uint8_t*, size_t>> types;
        for (const protobuf::Field& f : fields(footer.data(), footer.size())) {
            if (f.number == 3) {
                if (!is_bytes(f)) elsewhere();
                stripes.push_back(stripe(f.data, f.size, content_end));
            } else if (f.number == 4) {
                if (!is_bytes(f)) elsewhere();
                types.emplace_back(f.data, f.size);
            } else if (f.number == 8) {
                number(f);  // row_index_stride: a number, else orc.py refuses the file
            }
        }
        const auto [column_id, column_kind, has_kind] = find_column(types);
        if (!have_keys_) return;
        for (size_t s = 0; s < stripes.size(); ++s) {
            if (stripe_may_hold(file, stripes[s], column_id, column_kind, has_kind, writer_version, inflate))
                candidates_.emplace_back(index, s);
        }
    }

  private:
    struct Column {
        uint64_t id;
        uint64_t kind;
        bool has_kind;
    };

    template <class File>
    void read(const File& file, uint64_t offset, uint64_t length) {
        if (length > file.size() || offset > file.size() - length) file_detail::elsewhere();
        check_allocation(length, 1, "ORC file read");
        buffer_.resize(static_cast<size_t>(length));
        if (file.read_at(offset, length, buffer_.data()) != length) file_detail::elsewhere();
    }

    // A part of the file (Footer, stripe footer, filter stream), decompressed.
    template <class File>
    std::vector<uint8_t> read_part(const File& file, uint64_t offset, uint64_t length, const Inflate& inflate) {
        read(file, offset, length);
        if (compression_ == kNone) return buffer_;
        std::vector<uint8_t> out;
        size_t position = 0;
        const size_t size = buffer_.size();
        while (position < size) {
            if (size - position < 3) file_detail::elsewhere();
            const uint32_t header = buffer_[position] | buffer_[position + 1] << 8 | buffer_[position + 2] << 16;
            const size_t chunk = header >> 1;
            position += 3;
            if (chunk > size - position) file_detail::elsewhere();
            if (header & 1) {
                if (chunk > block_size_) file_detail::elsewhere();
                out.insert(out.end(), buffer_.begin() + position, buffer_.begin() + position + chunk);
            } else {
                // Inflated into a block kept for the walk (grown once, never
                // zero-filled again), then appended: 64 KiB-256 KiB of memset
                // per chunk otherwise, for a filter stream of about 30 KiB.
                if (inflated_.size() < block_size_) inflated_.resize(block_size_);
                const size_t produced =
                    inflate(compression_, buffer_.data() + position, chunk, inflated_.data(), block_size_);
                if (produced > block_size_) file_detail::elsewhere();
                out.insert(out.end(), inflated_.begin(), inflated_.begin() + produced);
            }
            position += chunk;
            // orc.py checks the memory available past 64 MiB; it reads such a part itself.
            if (out.size() > (uint64_t(64) << 20)) file_detail::elsewhere();
        }
        return out;
    }

    static file_detail::Stripe stripe(const uint8_t* data, size_t size, uint64_t content_end) {
        using namespace file_detail;
        Stripe s;
        for (const protobuf::Field& f : fields(data, size)) {
            switch (f.number) {
                case 1: s.offset = number(f); break;
                case 2: s.index_length = number(f); break;
                case 3: s.data_length = number(f); break;
                case 4: s.footer_length = number(f); break;
                case 5: number(f); break;  // rows
                default: break;
            }
        }
        const uint64_t end = add(add(add(s.offset, s.index_length), s.data_length), s.footer_length);
        if (s.offset < 3 || end > content_end) elsewhere();
        return s;
    }

    // The column's id among the root struct's fields, and its Type.kind.
    Column find_column(const std::vector<std::pair<const uint8_t*, size_t>>& types) const {
        using namespace file_detail;
        if (types.empty()) elsewhere();
        bool root_kind_seen = false;
        uint64_t root_kind = 0;
        std::vector<uint64_t> ids;
        std::vector<std::string> names;
        for (const protobuf::Field& f : fields(types[0].first, types[0].second)) {
            if (f.number == 1 && !root_kind_seen) {
                root_kind = number(f);
                root_kind_seen = true;
            } else if (f.number == 2) {
                if (is_bytes(f)) {
                    packed_varints(f.data, f.size, ids);
                } else {
                    ids.push_back(f.value);
                }
            } else if (f.number == 3) {
                if (!is_bytes(f)) elsewhere();
                names.emplace_back(reinterpret_cast<const char*>(f.data), f.size);
            }
        }
        if (!root_kind_seen || root_kind != kStruct) elsewhere();
        // orc.py compares names decoded with replacement characters; the
        // caller sends a column holding U+FFFD there, so bytes compare alike.
        size_t at = names.size();
        for (size_t i = 0; i < names.size() && at == names.size(); ++i)
            if (names[i] == column_) at = i;
        if (at == names.size() || ids.size() != names.size()) elsewhere();
        const uint64_t id = ids[at];
        if (id == 0 || id >= types.size()) elsewhere();
        Column column{id, 0, false};
        for (const protobuf::Field& f : fields(types[id].first, types[id].second)) {
            if (f.number == 1) {
                column.kind = number(f);
                column.has_kind = true;
                break;
            }
        }
        return column;
    }

    static void packed_varints(const uint8_t* data, size_t size, std::vector<uint64_t>& out) {
        uint64_t value = 0;
        int shift = 0;
        for (size_t i = 0; i < size; ++i) {
            if (shift >= 64) file_detail::elsewhere();
            value |= static_cast<uint64_t>(data[i] & 0x7F) << shift;
            shift += 7;
            if (data[i] < 0x80) {
                out.push_back(value);
                value = 0;
                shift = 0;
            }
        }
        if (shift != 0) file_detail::elsewhere();
    }

    // Whether the stripe may hold a key: it has no usable filter for the
    // column (kept), or one of its strides' filters may.
    template <class File>
    bool stripe_may_hold(const File& file, const file_detail::Stripe& s, uint64_t column_id, uint64_t column_kind,
                         bool has_kind, uint64_t writer_version, const Inflate& inflate) {
        using namespace file_detail;
        const uint64_t footer_at = s.offset + s.index_length + s.data_length;
        const std::vector<uint8_t> footer = read_part(file, footer_at, s.footer_length, inflate);
        uint64_t position = s.offset;
        bool found[2] = {false, false};  // BLOOM_FILTER, BLOOM_FILTER_UTF8
        std::pair<uint64_t, uint64_t> where[2];
        std::vector<std::pair<const uint8_t*, size_t>> encodings;
        for (const protobuf::Field& f : fields(footer.data(), footer.size())) {
            if (f.number == 2) {
                if (!is_bytes(f)) elsewhere();
                encodings.emplace_back(f.data, f.size);
            }
            if (f.number != 1) continue;
            if (!is_bytes(f)) elsewhere();
            uint64_t kind = 0, column = 0, length = 0;
            for (const protobuf::Field& g : fields(f.data, f.size)) {
                if (g.number == 1) kind = number(g);
                if (g.number == 2) column = number(g);
                if (g.number == 3) length = number(g);
            }
            if (column == column_id && (kind == kBloomFilter || kind == kBloomFilterUtf8)) {
                if (add(position, length) > s.offset + s.index_length) elsewhere();
                found[kind - kBloomFilter] = true;
                where[kind - kBloomFilter] = {position, length};
            }
            position = add(position, length);
        }
        if (position > footer_at) elsewhere();
        // The stream ORC's reader would use (BloomFilterIO.deserialize).
        const std::pair<uint64_t, uint64_t>* chosen = nullptr;
        if (found[1]) {
            uint64_t bloom_encoding = 0;
            if (column_id < encodings.size()) {
                for (const protobuf::Field& g : fields(encodings[column_id].first, encodings[column_id].second)) {
                    if (g.number == 3) {
                        bloom_encoding = is_bytes(g) ? 2 : g.value;  // bytes: orc.py's comparison fails too
                        break;
                    }
                }
            }
            // ORC ignores a future encoding, and timestamps in the original one.
            if (bloom_encoding <= 1 && !(has_kind && column_kind == kTimestamp && bloom_encoding == 0))
                chosen = &where[1];
        } else if (found[0]) {
            const bool text = has_kind && (column_kind == kString || column_kind == kVarchar || column_kind == kChar);
            if (!(text && writer_version < kHive12055)) chosen = &where[0];
        }
        if (chosen == nullptr) return true;
        const std::vector<uint8_t> index = read_part(file, chosen->first, chosen->second, inflate);
        std::vector<OrcBloomFilter> filters;
        for (const protobuf::Field& f : fields(index.data(), index.size())) {
            if (f.number != 1) continue;
            if (!is_bytes(f)) elsewhere();
            filters.push_back(OrcBloomFilter::deserialize(f.data, f.size));
        }
        for (const OrcBloomFilter& filter : filters)
            if (probes_.any_in(filter)) return true;
        return false;
    }

    std::string column_;
    OrcKeyProbes probes_;
    bool have_keys_;
    uint32_t compression_ = kNone;
    uint64_t block_size_ = file_detail::kDefaultBlock;
    std::vector<uint8_t> buffer_;    // the last raw read
    std::vector<uint8_t> inflated_;  // one chunk inflated (up to the block size, at most 16 MiB)
    std::vector<OrcCandidate> candidates_;
};

// The walk over many files: two halves on two threads (parallel.hpp's
// run_on_two_threads, when a helper may start), each with its own buffers
// and probe positions; one thread for a few files. Stops at the first file
// in file order that is to be read elsewhere, with the candidates of every
// file before it. make_inflate() is called once on each walk thread and
// gives that thread's Inflate.
class OrcFileSkipper {
  public:
    static constexpr size_t kMinFilesForTwoThreads = 16;

    OrcFileSkipper(const std::string& column, const HashPair* pairs, size_t n)
        : lanes_{OrcFileWalk(column, pairs, n), OrcFileWalk(column, pairs, n)} {}

    const std::vector<OrcCandidate>& candidates() const { return candidates_; }

    template <class OpenFile, class MakeInflate>
    OrcSkipStop run(size_t count, size_t start, OpenFile&& open_file, MakeInflate&& make_inflate) {
        if (count > start && count - start >= kMinFilesForTwoThreads) {
            const size_t mid = start + (count - start) / 2;
            OrcSkipStop stops[2];
            const bool ran = run_on_two_threads([&](int t) {
                const Inflate inflate = make_inflate();
                stops[t] = t == 0 ? lanes_[0].run(mid, start, open_file, inflate)
                                  : lanes_[1].run(count, mid, open_file, inflate);
            });
            if (ran) {
                take(lanes_[0]);
                if (stops[0].kind != OrcSkipStop::kDone) {
                    lanes_[1].candidates().clear();
                    return stops[0];
                }
                take(lanes_[1]);
                return stops[1];
            }
        }
        const OrcSkipStop stop = lanes_[0].run(count, start, open_file, make_inflate());
        take(lanes_[0]);
        return stop;
    }

  private:
    void take(OrcFileWalk& lane) {
        std::vector<OrcCandidate>& found = lane.candidates();
        candidates_.insert(candidates_.end(), found.begin(), found.end());
        found.clear();
    }

    OrcFileWalk lanes_[2];
    std::vector<OrcCandidate> candidates_;
};

}  // namespace orc
}  // namespace bloomkit
