// The deserializers reject every corrupt frame with FormatError (never crash,
// never allocate from an unchecked length).
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/counting_bloom.hpp>
#include <bloomkit/cuckoo.hpp>
#include <bloomkit/format.hpp>
#include <bloomkit/scalable_bloom.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::distinct_keys;

namespace {

using Loader = std::function<void(const std::vector<uint8_t>&)>;

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
