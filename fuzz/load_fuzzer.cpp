// libFuzzer target over every loader of the core (docs/RELIABILITY.md).
//
// Input: any byte string, handed to the deserializer its header names (or,
// for a header naming no type, to every deserializer). A frame that loads
// must behave: lookups, an insert and re-serialisation run under ASan and
// UBSan, and serialize(deserialize(x)) must give back exactly x, because a
// loader that accepts bytes the filter could not have written is a loader
// that lets corrupt state in.
//
// The custom mutator repairs the frame's lengths and checksum after
// libFuzzer's byte-level mutation, so most inputs get past parse_frame()
// into the field validation that is worth fuzzing (an input with a random
// checksum stops at the first check).
//
// Every input is also read through a source that hands out a few bytes at a
// time with no size known (TrickleSource, like a pipe): it must be accepted
// or rejected exactly as from memory, and give the same filter.
//
// The types come from the one type list (bloomkit/filter_types.hpp): each
// row's frames go to its core class bloomkit::<Enum>Filter. The build passes
// every core header with -include (.ci/fuzz.sh), so a new row needs nothing
// here.
//
// Build and run: .ci/fuzz.sh. Inputs that once crashed are kept in
// fuzz/regressions/ and replayed by tests/test_fuzz_regressions.py.
#include <bloomkit/filter_types.hpp>
#include <bloomkit/format.hpp>
#include <bloomkit/frame_reader.hpp>
#include <bloomkit/orc_bloom.hpp>
#include <bloomkit/orc_file_skip.hpp>
#include <bloomkit/orc_skip.hpp>
#if defined(BLOOMKIT_HAVE_ZLIB)
#include <bloomkit/zlib/orc_inflate.hpp>
#endif
#include <bloomkit/parquet_bloom.hpp>
#include <bloomkit/parquet_footer.hpp>
#include <bloomkit/parquet_skip.hpp>
#include <bloomkit/spark_sketch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using namespace bloomkit;

namespace {

// Whether a core type takes inserts (a frozen filter has no add()).
template <class Filter, class = void>
struct HasAdd : std::false_type {};
template <class Filter>
struct HasAdd<Filter, std::void_t<decltype(std::declval<Filter&>().add(Hash128{0, 0}))>> : std::true_type {};

template <class Filter>
void exercise(const uint8_t* data, size_t size) {
    Filter filter = Filter::deserialize(data, size);
    // A keyed frame's key check is not part of the filter (the bindings hold
    // the key); it is written back as it was read.
    Hash128 key_check{0, 0};
    const bool keyed = frame_key_check(data, size, key_check);
    const std::vector<uint8_t> again = frame_bytes(filter, keyed ? &key_check : nullptr);
    // A frame of the current version re-serialises to itself; an older one
    // (docs/FORMAT.md, compatibility policy) to a current frame of the same filter.
    // A mapped file's open-for-writing mark (type tag bit 14) is never written
    // by serialization: such a frame re-serialises to itself unmarked, with the
    // checksum of the unmarked bytes.
    const bool current = size >= 10 && (data[8] | (data[9] << 8)) == kFormatVersion;
    std::vector<uint8_t> expected(data, data + size);
    if (current && size >= 32 && (expected[11] & (kOpenForWritingFlag >> 8)) != 0) {
        expected[11] = static_cast<uint8_t>(expected[11] & ~(kOpenForWritingFlag >> 8));
        const uint64_t checksum = frame_checksum(expected.data(), size - 8);
        for (int i = 0; i < 8; ++i) expected[size - 8 + i] = static_cast<uint8_t>(checksum >> (8 * i));
    }
    if (current ? (again.size() != size || std::memcmp(again.data(), expected.data(), size) != 0)
                : !(Filter::deserialize(again.data(), again.size()) == filter)) {
        std::fprintf(stderr, "accepted frame does not re-serialise to itself\n");
        std::abort();
    }
    for (uint64_t i = 0; i < 64; ++i) {
        const Hash128 h = murmur3_x64_128_u64(i, filter.seed());
        (void)filter.contains(h);
    }
    if constexpr (HasAdd<Filter>::value) {
        try {
            filter.add(murmur3_x64_128_u64(12345, filter.seed()));
        } catch (const FilterFullError&) {
        } catch (const TooManyCopiesError&) {
        } catch (const std::invalid_argument&) {  // a scalable filter that cannot grow further
        } catch (const OutOfMemory&) {
        }
    }
    (void)filter.nbytes();
}

// The bytes handed out a few at a time with no size known in advance, as a
// pipe gives them: the streaming reader (frame_reader.hpp) must find every
// short, long or corrupt frame while reading, without the up-front length
// check a buffer or a regular file allows. Only a frame declaring at most
// the input's length is read unsized: one declaring more may make a loader
// allocate what it declares before its bytes arrive (bounded by available
// memory, check_allocation; callers bound unsized sources, bloomkit/_io.py),
// which here would only trip the fuzzer's memory limit.
class TrickleSource : public ByteSource {
  public:
    TrickleSource(const uint8_t* data, size_t size) : data_(data), size_(size), step_(1 + size % 13) {
        try {
            sized_ = parse_header(data, size).frame_length > size;
        } catch (const FormatError&) {
        }
    }
    size_t read_some(uint8_t* out, size_t len) override {
        size_t n = len < step_ ? len : step_;
        if (n > size_ - pos_) n = size_ - pos_;
        if (n > 0) std::memcpy(out, data_ + pos_, n);
        pos_ += n;
        return n;
    }
    bool known_size(uint64_t& size) const override {
        size = size_;
        return sized_;
    }

  private:
    const uint8_t* data_;
    size_t size_, step_, pos_ = 0;
    bool sized_ = false;
};

template <class Filter>
bool loads_from_stream(const uint8_t* data, size_t size, const Filter* expected) {
    TrickleSource source(data, size);
    try {
        const Filter filter = read_frame<Filter>(source);
        if (expected != nullptr && !(filter == *expected)) {
            std::fprintf(stderr, "the frame read in pieces differs from the frame read from memory\n");
            std::abort();
        }
        return true;
    } catch (const FormatError&) {
        return false;
    } catch (const OutOfMemory&) {
        return false;
    }
}

template <class Filter>
void try_load(const uint8_t* data, size_t size) {
    bool accepted = false;
    try {
        const Filter filter = Filter::deserialize(data, size);
        accepted = true;
        if (!loads_from_stream<Filter>(data, size, &filter)) {
            std::fprintf(stderr, "a frame accepted from memory is rejected when read in pieces\n");
            std::abort();
        }
        exercise<Filter>(data, size);
    } catch (const FormatError&) {
    } catch (const OutOfMemory&) {
    }
    if (!accepted && loads_from_stream<Filter>(data, size, nullptr)) {
        std::fprintf(stderr, "a frame rejected from memory is accepted when read in pieces\n");
        std::abort();
    }
}

// Spark's BloomFilter serialisation (bloomkit.SparkBloomFilter): a loader of
// its own, for anything that is not a bloomkit frame.
void try_spark(const uint8_t* data, size_t size) {
    try {
        spark::SparkBloomFilter filter = spark::SparkBloomFilter::deserialize(data, size);
        const std::vector<uint8_t> again = filter.serialize();
        if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
            std::fprintf(stderr, "accepted Spark filter does not re-serialise to itself\n");
            std::abort();
        }
        for (int64_t i = 0; i < 64; ++i) filter.add(spark::hash_pair_long(i, 0));
    } catch (const FormatError&) {
    }
}

// A Parquet column chunk's Bloom filter (bloomkit.parquet): the Thrift
// header and its bitset. Accepted bytes must be a header and exactly the
// bitset it declares; a header read from a prefix must agree.
void try_parquet(const uint8_t* data, size_t size) {
    try {
        const parquet::ParquetBloomFilter filter = parquet::ParquetBloomFilter::parse(data, size);
        const parquet::BloomHeader header = parquet::parse_bloom_header(data, size);
        if (header.header_size + filter.num_bytes() != size) {
            std::fprintf(stderr, "accepted Parquet filter is not its header and declared bitset\n");
            std::abort();
        }
        std::vector<int64_t> keys(64);
        for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<int64_t>(i * 0x9E3779B97F4A7C15ULL);
        uint8_t found[64];
        filter.contains_fixed(reinterpret_cast<const uint8_t*>(keys.data()), 8, keys.size(), found);
    } catch (const FormatError&) {
    } catch (const OutOfMemory&) {
    }
}

// A Parquet footer (FileMetaData), searched for the column "id" and for
// "s.id" inside a struct: every row group gets an entry when found.
void try_parquet_footer(const uint8_t* data, size_t size) {
    for (const std::vector<std::string>& path : {std::vector<std::string>{"id"}, std::vector<std::string>{"s", "id"}}) {
        try {
            const parquet::ColumnFilters found = parquet::find_column_filters(data, size, path);
            for (const parquet::ChunkFilter& chunk : found.row_groups) {
                if (chunk.offset < -1 || chunk.length < -1) {
                    std::fprintf(stderr, "a Parquet footer gave a negative filter offset or length\n");
                    std::abort();
                }
            }
        } catch (const FormatError&) {
        }
    }
}

// The input as a whole Parquet file, walked by bloomkit.parquet.candidates'
// reader (parquet_skip.hpp): every footer field, filter offset and length it
// reads is bounded by the file; it ends done or stopped, never reading past
// the input, and keeps no candidate of a file it refused.
void try_parquet_file(const uint8_t* data, size_t size) {
    for (const std::vector<std::string>& path : {std::vector<std::string>{"id"}, std::vector<std::string>{"s", "id"}}) {
        parquet::FileSkipper skipper(path);
        const auto open = [&](size_t) { return std::make_unique<MemoryFile>(data, size); };
        parquet::SkipStop stop = skipper.run(1, 0, open);
        if (stop.kind == parquet::SkipStop::kNeedKeys) {
            const uint64_t hashes[2] = {xxhash64_u64(1), 0x9E3779B97F4A7C15ULL};
            skipper.add_keys(stop.signature, hashes, 2);
            stop = skipper.run(1, 0, open);
        }
        if (stop.kind != parquet::SkipStop::kDone && !skipper.candidates().empty()) {
            std::fprintf(stderr, "a refused Parquet file kept candidates\n");
            std::abort();
        }
    }
}

// The input as a whole ORC file, walked by bloomkit.orc.candidates' reader
// (orc_file_skip.hpp): it is read completely or left to orc.py, never read
// past its end, and a file left keeps no candidate. ZLIB chunks are inflated
// by zlib as the extension does (zlib/orc_inflate.hpp) when the fuzzer is
// built with it (BLOOMKIT_HAVE_ZLIB, .ci/fuzz.sh); other codecs' chunks are
// "inflated" by copying (so a compressed file's messages are fuzzed too).
void try_orc_file(const uint8_t* data, size_t size) {
    const orc::Inflate copy = [](uint32_t, const uint8_t* chunk, size_t n, uint8_t* out, size_t capacity) -> size_t {
        if (n > capacity) throw orc::ReadElsewhere{};
        std::memcpy(out, chunk, n);
        return n;
    };
#if defined(BLOOMKIT_HAVE_ZLIB)
    const auto make_inflate = [&] { return orc::inflate_zlib_here(copy); };
#else
    const auto make_inflate = [&] { return copy; };
#endif
    const orc::HashPair pairs[2] = {orc::split(orc::hash_long(1)), orc::split(orc::hash_long(-7))};
    orc::OrcFileSkipper skipper("id", pairs, 2);
    const orc::OrcSkipStop stop = skipper.run(
        1, 0, [&](size_t) { return std::make_unique<MemoryFile>(data, size); }, make_inflate);
    if (stop.kind != orc::OrcSkipStop::kDone && !skipper.candidates().empty()) {
        std::fprintf(stderr, "an ORC file left to orc.py kept candidates\n");
        std::abort();
    }
}

// ORC's orc.proto.BloomFilter message (bloomkit.OrcBloomFilter). Protobuf
// has more than one encoding of the same message (packed or not, unknown
// fields), so an accepted message must read back equal from bloomkit's own
// bytes, in both encodings.
void try_orc(const uint8_t* data, size_t size) {
    try {
        orc::OrcBloomFilter filter = orc::OrcBloomFilter::deserialize(data, size);
        for (const orc::Encoding encoding : {orc::Encoding::Utf8Bitset, orc::Encoding::Bitset}) {
            const std::vector<uint8_t> again = filter.serialize(encoding);
            if (!(orc::OrcBloomFilter::deserialize(again.data(), again.size()) == filter)) {
                std::fprintf(stderr, "accepted ORC filter does not read back from its own bytes\n");
                std::abort();
            }
        }
        for (int64_t i = 0; i < 64; ++i) filter.add(orc::split(orc::hash_long(i)));
        // Stripe skipping's probe (orc_skip.hpp) answers as contains() does.
        std::vector<orc::HashPair> pairs;
        for (int64_t i = 0; i < 130; ++i) pairs.push_back(orc::split(orc::hash_long(i * 7919)));
        for (size_t n : {size_t(1), size_t(64), pairs.size()}) {
            orc::OrcKeyProbes probes(pairs.data(), n);
            bool expected = false;
            for (size_t i = 0; i < n; ++i) expected = expected || filter.contains(pairs[i]);
            if (probes.any_in(filter) != expected) {
                std::fprintf(stderr, "ORC skipping's probe disagrees with contains()\n");
                std::abort();
            }
        }
    } catch (const FormatError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FilterType type;
    try {
        type = peek_type(data, size);
    } catch (const FormatError&) {
        try_spark(data, size);
        try_parquet(data, size);
        try_parquet_footer(data, size);
        try_parquet_file(data, size);
        try_orc(data, size);
        try_orc_file(data, size);
        return 0;
    }
    switch (type) {
#define BLOOMKIT_FUZZ_LOAD(Enum, tag, name, bind)                                                \
    case FilterType::Enum:                                                                       \
        static_assert(Enum##Filter::kFrameType == FilterType::Enum, "core class: <Enum>Filter"); \
        try_load<Enum##Filter>(data, size);                                                      \
        break;
        BLOOMKIT_FILTER_TYPES(BLOOMKIT_FUZZ_LOAD)
#undef BLOOMKIT_FUZZ_LOAD
    }
    return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// Byte-level mutation, then (most of the time) a frame repair: the header's
// payload length is set to what the input holds and the checksum recomputed.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    size = LLVMFuzzerMutate(data, size, max_size);
    if (seed % 8 == 0 || size < kHeaderSize + kChecksumSize) return size;
    uint32_t params_length = 0;
    std::memcpy(&params_length, data + 12, 4);  // little-endian hosts only (CI is x86-64)
    const size_t body = size - kHeaderSize - kChecksumSize;
    if (params_length > body) {
        params_length = static_cast<uint32_t>(body < kMaxParamsLength ? body : kMaxParamsLength);
        std::memcpy(data + 12, &params_length, 4);
    }
    const uint64_t payload_length = body - params_length;
    std::memcpy(data + 16, &payload_length, 8);
    const uint64_t checksum = frame_checksum(data, size - kChecksumSize);
    std::memcpy(data + size - kChecksumSize, &checksum, 8);
    return size;
}
