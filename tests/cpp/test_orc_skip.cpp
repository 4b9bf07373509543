// ORC stripe skipping: the probe (orc_skip.hpp) and the walk over files
// (orc_file_skip.hpp). The probe: for filters of several sizes,
// hash counts (fewer than, equal to and more than its lead probes) and
// fills, any_in equals "contains() for at least one key", on both SIMD
// builds, whether the lead positions are fresh or kept from an earlier size.
#include <doctest/doctest.h>

#include <bloomkit/orc_bloom.hpp>
#include <bloomkit/orc_file_skip.hpp>
#include <bloomkit/orc_skip.hpp>
#include <bloomkit/positional_file.hpp>
#include <bloomkit/protobuf_wire.hpp>
#if defined(BLOOMKIT_HAVE_ZLIB)
#include <bloomkit/zlib/orc_inflate.hpp>
#endif

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using namespace bloomkit::orc;

TEST_CASE("ORC skipping: any_in answers as contains() over the keys, for every size and hash count") {
    std::vector<HashPair> pairs;
    for (int64_t i = 0; i < 300; ++i) pairs.push_back(split(hash_long(i * 104729 + 7)));
    OrcKeyProbes probes(pairs.data(), pairs.size());
    size_t hits = 0, misses = 0;
    for (uint32_t k : {1u, 3u, 7u, 17u}) {
        for (uint64_t words : {1u, 5u, 157u, 1024u}) {
            for (int fill : {2, 6, 30}) {
                OrcBloomFilter filter(k, words);
                // Set about words*64/fill keys' bits so fills range from sparse to dense.
                for (uint64_t j = 0; j < words * 64 / (fill * k) + 1; ++j)
                    filter.add(split(bloomkit_test::splitmix64(j + 1000 * words + k)));
                for (size_t n : {size_t(1), size_t(64), size_t(65), pairs.size()}) {
                    bool expected = false;
                    for (size_t i = 0; i < n; ++i) expected = expected || filter.contains(pairs[i]);
                    OrcKeyProbes few(pairs.data(), n);
                    CHECK(few.any_in(filter) == expected);
                    if (n == pairs.size()) CHECK(probes.any_in(filter) == expected);  // positions kept per size
                    (expected ? hits : misses) += 1;
                }
            }
        }
    }
    CHECK(hits > 10);
    CHECK(misses > 10);
    CHECK_FALSE(OrcKeyProbes(pairs.data(), 0).any_in(OrcBloomFilter(3, 4)));
    // More sizes than are kept: the positions are recomputed, the answers unchanged.
    for (uint64_t words = 1; words <= 2 * OrcKeyProbes::kMaxSizesKept + 3; ++words) {
        OrcBloomFilter filter(5, words);
        filter.add(pairs[words % pairs.size()]);
        CHECK(probes.any_in(filter));
        OrcBloomFilter empty(5, words);
        CHECK_FALSE(probes.any_in(empty));
    }
}

namespace {

using bloomkit::protobuf::put_tag;
using bloomkit::protobuf::put_varint;

void put_number(std::vector<uint8_t>& out, uint32_t field, uint64_t value) {
    put_tag(out, field, bloomkit::protobuf::kVarint);
    put_varint(out, value);
}

void put_bytes(std::vector<uint8_t>& out, uint32_t field, const std::vector<uint8_t>& value) {
    put_tag(out, field, bloomkit::protobuf::kLengthDelimited);
    put_varint(out, value.size());
    out.insert(out.end(), value.begin(), value.end());
}

// A part of an ORC file as stored: as is, or with `compress` given, one
// compressed chunk (3-byte header: length << 1, the is-original bit clear).
using Compress = std::vector<uint8_t> (*)(const std::vector<uint8_t>&, int);
std::vector<uint8_t> stored(const std::vector<uint8_t>& part, Compress compress) {
    if (compress == nullptr) return part;
    const std::vector<uint8_t> body = compress(part, 6);
    std::vector<uint8_t> chunk = {static_cast<uint8_t>(body.size() << 1), static_cast<uint8_t>(body.size() >> 7),
                                  static_cast<uint8_t>(body.size() >> 15)};
    chunk.insert(chunk.end(), body.begin(), body.end());
    return chunk;
}

// An ORC file as ORC's writer lays it out: one stripe whose index area is
// the BLOOM_FILTER_UTF8 stream of column 1 ("id", a long), holding `filter`
// as its one stride's filter; no data, no metadata. Uncompressed, or ZLIB
// with `compress` (a raw deflate) and a block of `block_size` bytes.
std::vector<uint8_t> orc_file(const OrcBloomFilter& filter, Compress compress = nullptr, uint64_t block_size = 262144) {
    std::vector<uint8_t> index;
    put_bytes(index, 1, filter.serialize());
    index = stored(index, compress);
    std::vector<uint8_t> stream, encoding, stripe_footer;
    put_number(stream, 1, 8);  // kind BLOOM_FILTER_UTF8
    put_number(stream, 2, 1);  // column
    put_number(stream, 3, index.size());
    put_bytes(stripe_footer, 1, stream);
    put_number(encoding, 1, 0);  // DIRECT
    put_bytes(stripe_footer, 2, encoding);
    put_bytes(stripe_footer, 2, encoding);
    stripe_footer = stored(stripe_footer, compress);
    std::vector<uint8_t> file = {'O', 'R', 'C'};
    file.insert(file.end(), index.begin(), index.end());
    file.insert(file.end(), stripe_footer.begin(), stripe_footer.end());
    std::vector<uint8_t> info, root, id_type, footer, postscript;
    put_number(info, 1, 3);
    put_number(info, 2, index.size());
    put_number(info, 3, 0);
    put_number(info, 4, stripe_footer.size());
    put_number(info, 5, 10);
    put_number(root, 1, 12);  // STRUCT
    put_bytes(root, 2, {1});  // subtypes, packed
    put_bytes(root, 3, {'i', 'd'});
    put_number(id_type, 1, 4);  // LONG
    put_bytes(footer, 3, info);
    put_bytes(footer, 4, root);
    put_bytes(footer, 4, id_type);
    put_number(footer, 8, 10000);
    footer = stored(footer, compress);
    file.insert(file.end(), footer.begin(), footer.end());
    put_number(postscript, 1, footer.size());
    put_number(postscript, 2, compress == nullptr ? 0 : 1);  // NONE or ZLIB
    put_number(postscript, 3, block_size);
    put_number(postscript, 6, 9);
    put_bytes(postscript, 8000, {'O', 'R', 'C'});
    file.insert(file.end(), postscript.begin(), postscript.end());
    file.push_back(static_cast<uint8_t>(postscript.size()));
    return file;
}

const Inflate refuse = [](uint32_t, const uint8_t*, size_t, uint8_t*, size_t) -> size_t { throw ReadElsewhere{}; };

OrcSkipStop walk(
    OrcFileSkipper& skipper, const std::vector<std::vector<uint8_t>>& files,
    const std::function<Inflate()>& make_inflate = [] { return refuse; }) {
    return skipper.run(
        files.size(), 0, [&](size_t i) { return std::make_unique<MemoryFile>(files[i].data(), files[i].size()); },
        make_inflate);
}

// 40 files (enough for the walk's two threads), every third holding key 42
// and the others key 43; `expected` names the holding ones.
struct EveryThirdHolds {
    OrcBloomFilter holding{4, 32}, other{4, 32};
    HashPair key{};
    std::vector<std::vector<uint8_t>> files;
    std::vector<OrcCandidate> expected;
};

EveryThirdHolds every_third_holds(Compress compress = nullptr) {
    EveryThirdHolds made;
    made.holding.add(split(hash_long(42)));
    made.other.add(split(hash_long(43)));
    made.key = split(hash_long(42));
    for (size_t i = 0; i < 40; ++i) {
        made.files.push_back(orc_file(i % 3 == 0 ? made.holding : made.other, compress));
        if (i % 3 == 0) made.expected.emplace_back(i, 0);
    }
    return made;
}

}  // namespace

TEST_CASE("ORC file skipping: a stripe is kept when its filter may hold a key; any damage is left to orc.py") {
    OrcBloomFilter holding(4, 32), other(4, 32);
    holding.add(split(hash_long(42)));
    other.add(split(hash_long(43)));
    const std::vector<std::vector<uint8_t>> files = {orc_file(other), orc_file(holding)};
    const HashPair key = split(hash_long(42));
    OrcFileSkipper skipper("id", &key, 1);
    CHECK(walk(skipper, files).kind == OrcSkipStop::kDone);
    CHECK(skipper.candidates() == std::vector<OrcCandidate>{{1, 0}});
    OrcFileSkipper no_keys("id", &key, 0);
    CHECK(walk(no_keys, files).kind == OrcSkipStop::kDone);
    CHECK(no_keys.candidates().empty());
    OrcFileSkipper unknown("name", &key, 1);
    const OrcSkipStop stop = walk(unknown, files);
    CHECK(stop.kind == OrcSkipStop::kReadElsewhere);
    CHECK(stop.file == 0);
    // Every cut and every single-byte change: read completely or left to
    // orc.py, never read past the bytes, never a candidate of a file left.
    const std::vector<uint8_t>& good = files[1];
    for (size_t cut = 0; cut < good.size(); ++cut) {
        OrcFileSkipper cut_skipper("id", &key, 1);
        const OrcSkipStop cut_stop =
            walk(cut_skipper, {files[0], std::vector<uint8_t>(good.begin(), good.begin() + cut)});
        CHECK(cut_stop.kind == OrcSkipStop::kReadElsewhere);
        CHECK(cut_stop.file == 1);
        CHECK(cut_skipper.candidates().empty());
    }
    size_t left = 0;
    for (size_t at = 0; at < good.size(); ++at) {
        std::vector<uint8_t> bad = good;
        bad[at] ^= 0x5a;
        OrcFileSkipper bad_skipper("id", &key, 1);
        if (walk(bad_skipper, {bad}).kind == OrcSkipStop::kReadElsewhere) {
            CHECK(bad_skipper.candidates().empty());
            ++left;
        }
    }
    CHECK(left > good.size() / 10);  // the framing refuses; flips inside the words are read
}

TEST_CASE("ORC file skipping: many files on two threads keep file order and stop at the first file left") {
    const EveryThirdHolds plain = every_third_holds();
    const HashPair key = plain.key;
    const std::vector<std::vector<uint8_t>>& files = plain.files;
    const std::vector<OrcCandidate>& expected = plain.expected;
    OrcFileSkipper skipper("id", &key, 1);
    CHECK(walk(skipper, files).kind == OrcSkipStop::kDone);
    CHECK(skipper.candidates() == expected);
    for (size_t bad : {size_t(5), size_t(30)}) {  // in the first half, in the second
        std::vector<std::vector<uint8_t>> damaged = files;
        damaged[bad].resize(10);
        OrcFileSkipper stopped("id", &key, 1);
        const OrcSkipStop stop = walk(stopped, damaged);
        CHECK(stop.kind == OrcSkipStop::kReadElsewhere);
        CHECK(stop.file == bad);
        std::vector<OrcCandidate> before;
        for (const OrcCandidate& c : expected)
            if (c.first < bad) before.push_back(c);
        CHECK(stopped.candidates() == before);
    }
}

#if defined(BLOOMKIT_HAVE_ZLIB)
TEST_CASE("ORC file skipping: ZLIB files are inflated by zlib on the walking threads, other codecs by the caller") {
    const EveryThirdHolds compressed = every_third_holds(bloomkit_test::deflate_raw);
    const OrcBloomFilter& holding = compressed.holding;
    const HashPair key = compressed.key;
    const std::vector<std::vector<uint8_t>>& files = compressed.files;
    const std::vector<OrcCandidate>& expected = compressed.expected;
    std::atomic<int> made{0}, called{0};
    const auto counting = [&] {
        made += 1;
        return inflate_zlib_here([&](uint32_t, const uint8_t*, size_t, uint8_t*, size_t) -> size_t {
            called += 1;
            throw ReadElsewhere{};
        });
    };
    OrcFileSkipper skipper("id", &key, 1);
    CHECK(walk(skipper, files, counting).kind == OrcSkipStop::kDone);
    CHECK(skipper.candidates() == expected);
    CHECK(called == 0);  // no ZLIB chunk reached the caller's inflater
    CHECK(made >= 1);
    // Without zlib (the caller's inflater refuses every chunk) each file is left to orc.py.
    OrcFileSkipper refused("id", &key, 1);
    CHECK(walk(refused, files).kind == OrcSkipStop::kReadElsewhere);
    // Another codec's chunk goes to the caller's inflater.
    std::vector<uint8_t> snappy = files[0];
    const size_t ps_length = snappy.back();
    const size_t at = snappy.size() - 1 - ps_length;  // the PostScript: fields 1 (footer_length), then 2
    REQUIRE(snappy[at + 2] == (2 << 3));
    REQUIRE(snappy[at + 3] == 1);
    snappy[at + 3] = 2;  // SNAPPY
    called = 0;
    OrcFileSkipper other_codec("id", &key, 1);
    const OrcSkipStop stop = walk(other_codec, {snappy}, counting);
    CHECK(stop.kind == OrcSkipStop::kReadElsewhere);
    CHECK(called == 1);
    // A footer that inflates past the block size, a corrupt or cut chunk:
    // the file is left to orc.py, with no candidate kept.
    const std::vector<uint8_t> good = orc_file(holding, bloomkit_test::deflate_raw);
    OrcFileSkipper exact("id", &key, 1);
    CHECK(walk(exact, {good}, counting).kind == OrcSkipStop::kDone);
    CHECK(exact.candidates() == std::vector<OrcCandidate>{{0, 0}});
    const std::vector<uint8_t> small_block = orc_file(holding, bloomkit_test::deflate_raw, 16);
    OrcFileSkipper too_big("id", &key, 1);
    CHECK(walk(too_big, {small_block}, counting).kind == OrcSkipStop::kReadElsewhere);
    CHECK(too_big.candidates().empty());
    size_t left = 0;
    for (size_t i = 3; i < good.size(); ++i) {
        std::vector<uint8_t> bad = good;
        bad[i] ^= 0x20;
        OrcFileSkipper flipped("id", &key, 1);
        if (walk(flipped, {bad}, counting).kind == OrcSkipStop::kReadElsewhere) {
            CHECK(flipped.candidates().empty());
            ++left;
        }
    }
    CHECK(left > good.size() / 4);  // a flip in a deflate stream mostly breaks it
}
#endif
