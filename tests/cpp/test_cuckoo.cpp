// CuckooFilter invariants: exact size, multiset removal, nothing lost when full.
#include <doctest/doctest.h>

#include <bloomkit/cuckoo.hpp>

#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::digest;
using bloomkit_test::distinct_keys;

namespace {

CuckooGeometry cuckoo_geometry(uint64_t num_buckets, uint32_t fingerprint_bits, bool auto_grow = false) {
    CuckooGeometry g;
    g.num_buckets = num_buckets;
    g.bucket_size = 4;
    g.fingerprint_bits = fingerprint_bits;
    g.seed = 5;
    g.capacity = num_buckets * 4;
    g.error_rate = 0.01;
    g.auto_grow = auto_grow;
    return g;
}

}  // namespace

TEST_CASE("CuckooFilter: size is exact, duplicates count, removal undoes insertion") {
    CuckooFilter f(cuckoo_geometry(1024, 12));
    const auto keys = distinct_keys(3000, 1);
    std::vector<uint8_t> was_present(keys.size());
    f.add_many(as_keys(keys), was_present.data());
    CHECK(f.size() == keys.size());

    const Hash128 x = digest(keys[0], 5);
    const uint64_t before = f.count(x);
    f.add(x);
    CHECK(f.count(x) == before + 1);
    CHECK(f.size() == keys.size() + 1);

    for (uint64_t k : keys) REQUIRE(f.remove(digest(k, 5)));
    CHECK(f.remove(x));
    CHECK(f.size() == 0);
    CHECK(f == CuckooFilter(cuckoo_geometry(1024, 12)));
}

TEST_CASE("CuckooFilter: filling up throws FilterFullError and loses no stored key") {
    CuckooFilter f(cuckoo_geometry(256, 16));  // 1024 slots
    const auto keys = distinct_keys(2000, 2);
    size_t stored = 0;
    bool threw = false;
    for (uint64_t k : keys) {
        try {
            f.add(digest(k, 5));
            ++stored;
        } catch (const FilterFullError& e) {
            threw = true;
            CHECK(e.index() == FilterFullError::kNoIndex);
            break;
        }
    }
    REQUIRE(threw);
    // Sized for 93 % load at b = 4; the first failure comes well above 85 %.
    CHECK(stored > 0.85 * 1024);
    CHECK(f.size() == stored);
    CHECK(!f.full());  // one key refused: slots are still free
    for (size_t i = 0; i < stored; ++i) REQUIRE(f.contains(digest(keys[i], 5)));
    // Every later refusal leaves the filter byte-identical (the walk is
    // undone); other keys still go in, until no slot is free.
    size_t later = 0;
    for (size_t j = stored + 1; j < keys.size() && !f.full(); ++j) {
        const std::vector<uint8_t> before = f.serialize();
        try {
            f.add(digest(keys[j], 5));
            ++later;
        } catch (const FilterFullError&) {
            REQUIRE(f.serialize() == before);
        }
    }
    CHECK(later > 0);
    CHECK(f.size() == stored + later);
    CHECK(f.size() > 0.96 * 1024);
    for (size_t i = 0; i < stored; ++i) REQUIRE(f.contains(digest(keys[i], 5)));
}

TEST_CASE("CuckooFilter: a batch that fills names the failing index and keeps the keys before it") {
    CuckooFilter f(cuckoo_geometry(64, 16));  // 256 slots
    const auto keys = distinct_keys(400, 3);
    uint64_t index = 0;
    try {
        f.add_many(as_keys(keys), nullptr);
        FAIL("a 256-slot filter took 400 keys");
    } catch (const FilterFullError& e) {
        index = e.index();
    }
    REQUIRE(index < keys.size());
    CHECK(f.size() == index);
    for (size_t i = 0; i < index; ++i) REQUIRE(f.contains(digest(keys[i], 5)));
}

TEST_CASE("CuckooFilter: auto_grow adds stages and keeps every key") {
    CuckooFilter f(cuckoo_geometry(64, 12, true));
    const auto keys = distinct_keys(5000, 4);
    f.add_many(as_keys(keys), nullptr);
    CHECK(f.stages().size() > 1);
    CHECK(f.size() == keys.size());
    std::vector<uint8_t> present(keys.size());
    f.contains_many(as_keys(keys), present.data());
    for (uint8_t p : present) REQUIRE(p == 1);
    CHECK(f.remove_many(as_keys(keys)) == keys.size());
    CHECK(f.size() == 0);
}

TEST_CASE("CuckooFilter: hand_off_arrays gives away the arrays unchanged and in place, keeping the filter equal") {
    CuckooFilter f(cuckoo_geometry(64, 12, true));
    const auto keys = distinct_keys(3000, 6);
    f.add_many(as_keys(keys), nullptr);
    REQUIRE(f.stages().size() > 1);
    const CuckooFilter before = f;
    const std::vector<uint8_t> frame = f.serialize();
    std::vector<const uint8_t*> addresses;
    for (const CuckooTable& t : f.stages()) addresses.push_back(t.table().data());

    std::vector<std::vector<uint8_t>> retired;
    f.hand_off_arrays(retired);
    REQUIRE(retired.size() == addresses.size());
    for (size_t s = 0; s < retired.size(); ++s) {
        CHECK(retired[s].data() == addresses[s]);  // what a view points at
        CHECK(f.stages()[s].table().data() != addresses[s]);
    }
    CHECK(f == before);
    CHECK(f.serialize() == frame);

    // Writes (kicks, growth, clear) change the filter's copies only.
    const std::vector<std::vector<uint8_t>> snapshot = retired;
    const auto more = distinct_keys(6000, 7);
    f.add_many(as_keys(more), nullptr);
    f.clear();
    CHECK(retired == snapshot);
    for (size_t s = 0; s < retired.size(); ++s) CHECK(retired[s].data() == addresses[s]);
}

TEST_CASE("CuckooFilter: remove_many is all or nothing") {
    CuckooFilter f(cuckoo_geometry(1024, 16));
    const auto keys = distinct_keys(1000, 5);
    f.add_many(as_keys(keys), nullptr);
    std::vector<uint64_t> batch(keys.begin(), keys.begin() + 10);
    batch.push_back(distinct_keys(1, 6)[0]);  // absent (16-bit fingerprints: a false match is ~1e-3)
    const auto before = f.serialize();
    CHECK(f.remove_many(as_keys(batch)) == 10);
    CHECK(f.serialize() == before);
}

TEST_CASE("CuckooFilter: serialize/deserialize round-trips, geometry is validated") {
    CuckooFilter f(cuckoo_geometry(100, 9, true));
    f.add_many(as_keys(distinct_keys(700, 7)), nullptr);
    const auto frame = f.serialize();
    const CuckooFilter g = CuckooFilter::deserialize(frame.data(), frame.size());
    CHECK(g == f);
    CHECK(g.serialize() == frame);

    CHECK_THROWS_AS(CuckooFilter(cuckoo_geometry(0, 12)), std::invalid_argument);
    CuckooGeometry wide = cuckoo_geometry(16, 12);
    wide.bucket_size = 9;
    CHECK_THROWS_AS(CuckooFilter{wide}, std::invalid_argument);
}
