// The deserializers reject every corrupt frame with FormatError (never crash,
// never allocate from an unchecked length).
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/counting_bloom.hpp>
#include <bloomkit/cuckoo.hpp>
#include <bloomkit/format.hpp>
#include <bloomkit/scalable_bloom.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::distinct_keys;

namespace {

using Loader = std::function<void(const std::vector<uint8_t>&)>;

// A source that hands out at most `step` bytes per read, like a pipe or a
// slow file: every field and array read must cope with partial reads.
class TrickleSource : public ByteSource {
  public:
    TrickleSource(const std::vector<uint8_t>& data, size_t step) : data_(data), step_(step) {}
    size_t read_some(uint8_t* out, size_t len) override {
        const size_t n = std::min({len, step_, data_.size() - pos_});
        std::copy_n(data_.data() + pos_, n, out);
        pos_ += n;
        return n;
    }
    bool known_size(uint64_t&) const override { return false; }

  private:
    const std::vector<uint8_t>& data_;
    size_t step_;
    size_t pos_ = 0;
};

// The read end of a pipe holding `data` (small enough for the pipe buffer):
// an FdSource over it has no known size, so a short frame is found short
// while it is being read, not by a size check up front.
struct PipeHolding {
    int fds[2] = {-1, -1};
    explicit PipeHolding(const uint8_t* data, size_t size) {
        REQUIRE(::pipe(fds) == 0);
        REQUIRE(size < 65536);
        REQUIRE(::write(fds[1], data, size) == static_cast<ssize_t>(size));
        ::close(fds[1]);
    }
    ~PipeHolding() { ::close(fds[0]); }
    int fd() const { return fds[0]; }
};

// A regular temporary file holding `data`.
struct FileHolding {
    FILE* file = std::tmpfile();
    explicit FileHolding(const std::vector<uint8_t>& data) {
        REQUIRE(file != nullptr);
        REQUIRE(std::fwrite(data.data(), 1, data.size(), file) == data.size());
        REQUIRE(std::fflush(file) == 0);
    }
    ~FileHolding() { std::fclose(file); }
    int fd() const { return ::fileno(file); }
};

std::string error_of(const std::function<void()>& load) {
    try {
        load();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

template <class Filter>
Loader loader() {
    return [](const std::vector<uint8_t>& data) { (void)Filter::deserialize(data.data(), data.size()); };
}

// The frame of `filter` after adding `count` distinct keys of `stream`.
template <class Filter>
std::vector<uint8_t> filled_frame(Filter filter, size_t count, uint64_t stream) {
    filter.add_many(as_keys(distinct_keys(count, stream)), nullptr);
    return filter.serialize();
}

std::vector<uint8_t> bloom_frame() {
    return filled_frame(BloomFilter(bloom_geometry_at_most(Layout::Classic, 200, 0.01, 3)), 150, 1);
}

std::vector<uint8_t> counting_frame() {
    return filled_frame(CountingBloomFilter(bloom_geometry_at_most(Layout::Classic, 100, 0.01, 3), 4), 80, 2);
}

std::vector<uint8_t> scalable_frame() {
    ScalableParams p;
    p.initial_capacity = 20;
    p.error_rate = 0.05;
    p.growth = 2;
    p.tightening = 0.5;
    p.seed = 1;
    return filled_frame(ScalableBloomFilter(p), 100, 3);
}

std::vector<uint8_t> cuckoo_frame() {
    CuckooGeometry g;
    g.num_buckets = 16;
    g.bucket_size = 4;
    g.fingerprint_bits = 8;
    g.seed = 2;
    g.capacity = 50;
    g.error_rate = 0.05;
    return filled_frame(CuckooFilter(g), 40, 4);
}

// Every single-bit flip, every truncation and a few extensions of `frame` must throw FormatError.
void check_rejects_corruption(const std::vector<uint8_t>& frame, const Loader& load) {
    REQUIRE_NOTHROW(load(frame));
    for (size_t byte = 0; byte < frame.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            std::vector<uint8_t> bad(frame);
            bad[byte] ^= static_cast<uint8_t>(1u << bit);
            CAPTURE(byte);
            CAPTURE(bit);
            REQUIRE_THROWS_AS(load(bad), FormatError);
        }
    }
    for (size_t len = 0; len < frame.size(); ++len) {
        std::vector<uint8_t> bad(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(len));
        CAPTURE(len);
        REQUIRE_THROWS_AS(load(bad), FormatError);
    }
    for (size_t extra : {1, 7, 8, 64}) {
        std::vector<uint8_t> bad(frame);
        bad.insert(bad.end(), extra, 0);
        REQUIRE_THROWS_AS(load(bad), FormatError);
    }
}

// A frame with a valid checksum around arbitrary params and payload: reaches
// the field checks that run after the checksum.
std::vector<uint8_t> frame_with(FilterType type, const std::vector<uint8_t>& params, size_t payload_bytes) {
    std::vector<uint8_t> out;
    VectorSink sink(out);
    write_frame(
        sink, type, payload_bytes, [&](ByteWriter& w) { w.bytes(params.data(), params.size()); },
        [&](ByteWriter& w) {
            for (size_t i = 0; i < payload_bytes; ++i) w.u8(0);
        });
    return out;
}

std::vector<uint8_t> bloom_params(uint64_t m, uint32_t k, uint64_t capacity, double error_rate) {
    std::vector<uint8_t> out;
    ByteWriter w(out);
    BloomGeometry g;
    g.num_bits = m;
    g.num_hashes = k;
    g.seed = 0;
    g.capacity = capacity;
    g.error_rate = error_rate;
    g.write(w);
    BloomGeometry::write_layout(w, Layout::Classic);  // format version 2 params
    return out;
}

}  // namespace

TEST_CASE("corrupt Bloom frames are rejected") { check_rejects_corruption(bloom_frame(), loader<BloomFilter>()); }
TEST_CASE("corrupt counting frames are rejected") {
    check_rejects_corruption(counting_frame(), loader<CountingBloomFilter>());
}
TEST_CASE("corrupt scalable frames are rejected") {
    check_rejects_corruption(scalable_frame(), loader<ScalableBloomFilter>());
}
TEST_CASE("corrupt cuckoo frames are rejected") { check_rejects_corruption(cuckoo_frame(), loader<CuckooFilter>()); }

TEST_CASE("a frame of another type is refused by name") {
    const auto frame = bloom_frame();
    CHECK_THROWS_WITH_AS(CuckooFilter::deserialize(frame.data(), frame.size()), doctest::Contains("not a"),
                         FormatError);
}

TEST_CASE("valid checksum, invalid Bloom params: each field is checked before allocation") {
    const auto load = loader<BloomFilter>();
    // num_hashes out of [1, 64].
    CHECK_THROWS_WITH_AS(load(frame_with(FilterType::Bloom, bloom_params(64, 0, 10, 0.01), 8)),
                         doctest::Contains("num_hashes"), FormatError);
    CHECK_THROWS_WITH_AS(load(frame_with(FilterType::Bloom, bloom_params(64, 65, 10, 0.01), 8)),
                         doctest::Contains("num_hashes"), FormatError);
    // error_rate outside (0, 1).
    CHECK_THROWS_WITH_AS(load(frame_with(FilterType::Bloom, bloom_params(64, 3, 10, 1.5), 8)),
                         doctest::Contains("error_rate"), FormatError);
    // 2^63 bits claimed with an 8-byte payload: rejected by length, not by a huge allocation.
    CHECK_THROWS_AS(load(frame_with(FilterType::Bloom, bloom_params(uint64_t(1) << 63, 3, 10, 0.01), 8)), FormatError);
    // Payload one word short.
    CHECK_THROWS_AS(load(frame_with(FilterType::Bloom, bloom_params(128, 3, 10, 0.01), 8)), FormatError);
    // The exact payload loads.
    CHECK_NOTHROW(load(frame_with(FilterType::Bloom, bloom_params(128, 3, 10, 0.01), 16)));
}

TEST_CASE("peek_type checks magic, version and tag") {
    auto frame = bloom_frame();
    CHECK(peek_type(frame.data(), frame.size()) == FilterType::Bloom);
    frame[8] = 9;  // format version 9
    CHECK_THROWS_WITH_AS(peek_type(frame.data(), frame.size()), doctest::Contains("format version"), FormatError);
    std::vector<uint8_t> tiny(31, 0);
    CHECK_THROWS_AS(peek_type(tiny.data(), tiny.size()), FormatError);
}

TEST_CASE("the streamed frame checksum equals MurmurHash3 of the whole, however the bytes are split") {
    const auto frame = bloom_frame();
    const size_t body = frame.size() - kChecksumSize;
    const uint64_t whole = frame_checksum(frame.data(), body);
    for (size_t piece : {1, 3, 7, 16, 17, 100}) {
        Murmur3Stream stream(kChecksumSeed);
        for (size_t at = 0; at < body; at += piece) stream.update(frame.data() + at, std::min(piece, body - at));
        CAPTURE(piece);
        CHECK(stream.digest().h1 == whole);
    }
    uint64_t stored = 0;
    for (int i = 0; i < 8; ++i) stored |= uint64_t(frame[body + static_cast<size_t>(i)]) << (8 * i);
    CHECK(stored == whole);
}

TEST_CASE("keyed frames: flag and key check round-trip, every corruption is rejected") {
    const BloomFilter f = BloomFilter::deserialize(bloom_frame().data(), bloom_frame().size());
    const Hash128 check{0x1122334455667788ULL, 0x99aabbccddeeff00ULL};
    const std::vector<uint8_t> keyed = frame_bytes(f, &check);
    const std::vector<uint8_t> plain = f.serialize();
    REQUIRE(keyed.size() == plain.size() + 64);  // 16 more params bytes, padded to the next 64
    CHECK((keyed[11] & 0x80) != 0);              // bit 15 of the type tag
    const Frame frame = parse_frame(keyed.data(), keyed.size(), FilterType::Bloom);
    CHECK(frame.keyed);
    CHECK(frame.key_check.h1 == check.h1);
    CHECK(frame.key_check.h2 == check.h2);
    CHECK(BloomFilter::deserialize(keyed.data(), keyed.size()) == f);
    Hash128 read{0, 0};
    CHECK(frame_key_check(keyed.data(), keyed.size(), read));
    CHECK(read.h2 == check.h2);
    CHECK_FALSE(frame_key_check(plain.data(), plain.size(), read));
    CHECK(peek_type(keyed.data(), keyed.size()) == FilterType::Bloom);
    check_rejects_corruption(keyed, loader<BloomFilter>());
}

// --- the streaming reader (frame_reader.hpp) over files and pipes ---

namespace {

// A file source truncated at every byte (so at every field and array
// boundary): a pipe reports "truncated data while reading <what>" for the
// part that is cut, a regular file the size mismatch before any read. The
// arrays (`arrays`) must be among the parts found cut.
template <class Filter>
void check_truncated_file_sources(const std::vector<uint8_t>& frame, std::set<std::string> arrays) {
    {
        PipeHolding whole(frame.data(), frame.size());
        FdSource source(whole.fd());
        CHECK(read_frame<Filter>(source) == Filter::deserialize(frame.data(), frame.size()));
    }
    std::set<std::string> cut;
    for (size_t len = 0; len < frame.size(); ++len) {
        CAPTURE(len);
        PipeHolding pipe(frame.data(), len);
        FdSource source(pipe.fd());
        const std::string error = error_of([&] { (void)read_frame<Filter>(source); });
        if (len < kHeaderSize) {
            CHECK(error.find("shorter than the 24-byte header") != std::string::npos);
            continue;
        }
        const std::string prefix = "truncated data while reading ";
        REQUIRE(error.rfind(prefix, 0) == 0);
        cut.insert(error.substr(prefix.size()));
    }
    CHECK(cut.count("params") == 1);
    CHECK(cut.count("checksum") == 1);
    for (const std::string& array : arrays) {
        CAPTURE(array);
        CHECK(cut.count(array) == 1);
    }
    for (size_t len : {size_t(0), size_t(31), kHeaderSize + 8, frame.size() / 2, frame.size() - 1}) {
        CAPTURE(len);
        FileHolding file(std::vector<uint8_t>(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(len)));
        FdSource source(file.fd());
        const std::string error = error_of([&] { (void)read_frame<Filter>(source); });
        CHECK((error.find("do not match the " + std::to_string(len) + "-byte buffer") != std::string::npos ||
               error.find("minimum frame") != std::string::npos));
    }
}

}  // namespace

TEST_CASE("file sources truncated at every array boundary are rejected while reading") {
    check_truncated_file_sources<BloomFilter>(bloom_frame(), {"bit array"});
    check_truncated_file_sources<CountingBloomFilter>(counting_frame(), {"counters"});
    check_truncated_file_sources<ScalableBloomFilter>(
        scalable_frame(), {"slice count", "padding after the slice table", "bit array", "padding after a slice"});
    check_truncated_file_sources<CuckooFilter>(cuckoo_frame(), {"stage count", "fingerprint table"});
}

TEST_CASE("a frame read in pieces, from a file or a pipe, is the frame read from memory") {
    const auto frame = scalable_frame();
    const ScalableBloomFilter expected = ScalableBloomFilter::deserialize(frame.data(), frame.size());
    for (size_t step : {1, 3, 8, 13, 4096}) {
        CAPTURE(step);
        TrickleSource source(frame, step);
        CHECK(read_frame<ScalableBloomFilter>(source) == expected);
    }
    FileHolding file(frame);
    ::lseek(file.fd(), 17, SEEK_SET);  // a regular file is read from offset 0 wherever it is
    FdSource source(file.fd());
    FrameInfo info;
    CHECK(read_frame<ScalableBloomFilter>(source, &info) == expected);
    CHECK(info.version == kFormatVersion);
    CHECK_FALSE(info.keyed);
}

TEST_CASE("a pipe with bytes after the frame is extended data") {
    auto frame = cuckoo_frame();
    frame.push_back(0);
    PipeHolding pipe(frame.data(), frame.size());
    FdSource source(pipe.fd());
    CHECK_THROWS_WITH_AS(read_frame<CuckooFilter>(source), doctest::Contains("extended data"), FormatError);
}

TEST_CASE("a corrupt frame says checksum mismatch, whatever field the corruption hits first") {
    // Params and payload are checked while they are read, before the
    // checksum is known; a rejected field must still be reported as the
    // checksum mismatch it is when the checksum does not match.
    const auto frame = frame_with(FilterType::Bloom, bloom_params(64, 0, 10, 0.01), 8);  // num_hashes 0
    CHECK_THROWS_WITH_AS(loader<BloomFilter>()(frame), doctest::Contains("num_hashes"), FormatError);
    auto corrupt = frame;
    corrupt[kHeaderSize + 40] ^= 1;  // a payload bit: num_hashes is still 0, and the checksum is wrong
    CHECK(error_of([&] { loader<BloomFilter>()(corrupt); }) == "checksum mismatch: the data is corrupt");
    TrickleSource source(corrupt, 5);
    CHECK(error_of([&] { (void)read_frame<BloomFilter>(source); }) == "checksum mismatch: the data is corrupt");
}

TEST_CASE(
    "a frame marked open for writing is 'not closed cleanly' while its checksum is stale, and loads once current") {
    const auto clean = bloom_frame();
    const BloomFilter expected = BloomFilter::deserialize(clean.data(), clean.size());
    auto marked = clean;
    marked[kTypeTagOffset + 1] |= static_cast<uint8_t>(kOpenForWritingFlag >> 8);  // what a writer sets first
    const std::string unclean = error_of([&] { loader<BloomFilter>()(marked); });
    CHECK(unclean.rfind("not closed cleanly: ", 0) == 0);
    CHECK(unclean.find("the bits are valid") != std::string::npos);
    FileHolding file(marked);
    FdSource source(file.fd());
    CHECK(error_of([&] { (void)read_frame<BloomFilter>(source); }) == unclean);
    // The checksum rewritten over the marked frame (a lone writer's flush): it loads as it is.
    const uint64_t sum = frame_checksum(marked.data(), marked.size() - kChecksumSize);
    for (size_t i = 0; i < kChecksumSize; ++i)
        marked[marked.size() - kChecksumSize + i] = static_cast<uint8_t>(sum >> (8 * i));
    CHECK(BloomFilter::deserialize(marked.data(), marked.size()) == expected);
    // A corrupted byte of a closed frame is still corrupt.
    auto corrupt = clean;
    corrupt[kHeaderSize + 48] ^= 4;
    CHECK(error_of([&] { loader<BloomFilter>()(corrupt); }) == "checksum mismatch: the data is corrupt");
    // Version 1 had no mapped files: the bit is an unknown type tag there.
    auto old = marked;
    old[8] = 1;
    CHECK(error_of([&] { loader<BloomFilter>()(old); }).find("unknown filter type tag") != std::string::npos);
}

TEST_CASE("an unsized source declaring 2**32 slices allocates only for the records it delivers") {
    // From a pipe the declared payload length bounds nothing, so a loader
    // must not size anything by a declared count before the bytes arrive
    // (the fuzzer's find: reserving num_slices records up front asked for
    // 160 GB). The frame is rejected once the records stop making sense.
    auto frame = scalable_frame();
    const uint64_t huge_payload = uint64_t(1) << 62;
    for (int i = 0; i < 8; ++i) frame[16 + static_cast<size_t>(i)] = static_cast<uint8_t>(huge_payload >> (8 * i));
    for (size_t i = 0; i < 4; ++i) frame[kHeaderSize + 36 + i] = 0xff;  // num_slices = 2**32 - 1
    TrickleSource source(frame, 4096);
    CHECK_THROWS_AS(read_frame<ScalableBloomFilter>(source), FormatError);
}

TEST_CASE("Checksum::Skip loads arrays changed after the checksum and still checks every field") {
    // A protocol 5 pickle of a filter being written (bindings/common.hpp):
    // its arrays are read after the frame's checksum was computed.
    auto frame = bloom_frame();
    frame[kHeaderSize + 40 + 1] ^= 0x10;  // payload bit 12 changed after the checksum
    const std::string corrupt = "checksum mismatch: the data is corrupt";
    CHECK(error_of([&] { loader<BloomFilter>()(frame); }) == corrupt);
    SpanSource source(frame.data(), frame.size());
    const BloomFilter loaded = read_frame<BloomFilter>(source, nullptr, Checksum::Skip);
    const std::vector<uint8_t> again = loaded.serialize();
    CHECK(std::equal(again.begin(), again.end() - kChecksumSize, frame.begin()));
    // Every other check still runs, and reports itself (not the checksum).
    const auto no_hashes = frame_with(FilterType::Bloom, bloom_params(64, 0, 10, 0.01), 8);
    auto stale = no_hashes;
    stale[kHeaderSize + 40] ^= 1;
    SpanSource params_source(stale.data(), stale.size());
    CHECK_THROWS_WITH_AS(read_frame<BloomFilter>(params_source, nullptr, Checksum::Skip),
                         doctest::Contains("num_hashes"), FormatError);
    const std::vector<uint8_t> cut(frame.begin(), frame.end() - 9);
    SpanSource cut_source(cut.data(), cut.size());
    CHECK_THROWS_AS(read_frame<BloomFilter>(cut_source, nullptr, Checksum::Skip), FormatError);
    auto longer = frame;
    longer.push_back(0);
    TrickleSource extended(longer, 7);  // no size known: the extra byte is found after the checksum
    CHECK_THROWS_WITH_AS(read_frame<BloomFilter>(extended, nullptr, Checksum::Skip), doctest::Contains("extended data"),
                         FormatError);
}
