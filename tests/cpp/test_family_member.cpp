// family_member.hpp: a filter family member's lookup and test-and-set with
// rotation on its generations' bytes, against two local BloomFilters fed
// key by key (the semantics bloomkit.redis_family documents).
#include <doctest/doctest.h>

#include <bloomkit/bloom.hpp>
#include <bloomkit/family_member.hpp>
#include <bloomkit/scalable_bloom.hpp>

#include <stdexcept>
#include <vector>

#include "helpers.hpp"

using namespace bloomkit;
using bloomkit_test::as_keys;
using bloomkit_test::distinct_keys;

namespace {

// A family's geometry: whole 64-bit words, so a payload is exactly num_bits / 8 bytes.
BloomGeometry member_geometry(uint64_t capacity, double error_rate, uint32_t seed) {
    BloomGeometry g = bloom_geometry_at_most(Layout::Classic, capacity, error_rate, seed);
    g.num_bits = (g.num_bits + 63) / 64 * 64;
    return g;
}

std::vector<uint8_t> payload(const BloomFilter& f) {
    std::vector<uint8_t> out;
    {
        ByteWriter w(out);
        f.write_payload(w);
    }
    return out;
}

}  // namespace

TEST_CASE(
    "member_add_many: answers and bytes of a local filter, rotating once before the key that would pass "
    "the limit") {
    const BloomGeometry g = member_geometry(500, 0.01, 3);
    const size_t nbytes = g.num_bits / 8;
    const auto older = distinct_keys(300, 1);
    const auto keys = distinct_keys(400, 2);
    BloomFilter previous(g), current(g);
    previous.add_many(as_keys(older), nullptr);
    current.add_many(as_keys(std::vector<uint64_t>(keys.begin(), keys.begin() + 250)), nullptr);
    const uint64_t limit = current.set_bits() + 600;  // ~85 more keys of k = 7

    // Reference: key by key, as bloomkit.redis_family documents the member's writes.
    BloomFilter ref_previous = previous, ref_current = current, fresh(g);
    std::vector<uint8_t> expected(keys.size());
    size_t rotation = keys.size();
    uint64_t new_keys = 0, before_rotation = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
        const Hash128 h = bloomkit_test::digest(keys[i], g.seed);
        BloomFilter& old = rotation < keys.size() ? ref_current : ref_previous;
        BloomFilter& into = rotation < keys.size() ? fresh : ref_current;
        if (old.contains(h)) {
            expected[i] = 1;
            continue;
        }
        if (rotation == keys.size() && into.set_bits() + g.num_hashes > limit) {
            rotation = i;
            before_rotation = new_keys;
            --i;  // the key again, against the generation that just rotated
            continue;
        }
        expected[i] = into.add(h);
        new_keys += expected[i] == 0;
    }
    REQUIRE(rotation > 250);
    REQUIRE(rotation < keys.size());

    std::vector<uint8_t> bits = payload(current), rotated(nbytes), found(keys.size());
    const std::vector<uint8_t> previous_bits = payload(previous);
    const MemberAddResult done =
        member_add_many(g, as_keys(keys), bits.data(), previous_bits.data(), rotated.data(), limit, found.data());
    CHECK(found == expected);
    CHECK(done.rotated);
    CHECK(done.rotated_at == rotation);
    CHECK(done.fresh == new_keys);
    CHECK(done.fresh_before_rotation == before_rotation);
    CHECK(rotated == payload(ref_current));
    CHECK(bits == payload(fresh));

    // Lookups: in either generation.
    const auto probes = distinct_keys(5000, 9);
    std::vector<uint8_t> present(probes.size());
    member_contains_many(g, as_keys(probes), bits.data(), rotated.data(), present.data());
    for (size_t i = 0; i < probes.size(); ++i) {
        const Hash128 h = bloomkit_test::digest(probes[i], g.seed);
        CHECK(present[i] == (fresh.contains(h) || ref_current.contains(h)));
    }
}

TEST_CASE("member_add_many: no previous generation and room to spare is the local filter's add_many") {
    const BloomGeometry g = member_geometry(1000, 0.01, 0);
    const auto keys = distinct_keys(200, 4);
    BloomFilter local(g);
    std::vector<uint8_t> expected(keys.size());
    local.add_many(as_keys(keys), expected.data());
    std::vector<uint8_t> bits(g.num_bits / 8), rotated(g.num_bits / 8), found(keys.size());
    const MemberAddResult done =
        member_add_many(g, as_keys(keys), bits.data(), nullptr, rotated.data(), g.num_bits, found.data());
    CHECK_FALSE(done.rotated);
    CHECK(found == expected);
    CHECK(bits == payload(local));
    CHECK(done.fresh == done.fresh_before_rotation);
}

TEST_CASE("member generations are classic Bloom filters of whole bytes: anything else is refused") {
    const BloomGeometry g = bloom_geometry_at_most(Layout::Blocked512, 1000, 0.01, 0);
    std::vector<uint8_t> bits(g.num_bits / 8), found(1);
    const std::vector<uint64_t> key{1};
    CHECK_THROWS_AS(member_contains_many(g, as_keys(key), bits.data(), nullptr, found.data()), std::invalid_argument);
    BloomGeometry odd = member_geometry(1000, 0.01, 0);
    odd.num_bits += 3;  // the last bits would fall past num_bits / 8 bytes
    CHECK_THROWS_AS(member_contains_many(odd, as_keys(key), bits.data(), nullptr, found.data()), std::invalid_argument);
}
