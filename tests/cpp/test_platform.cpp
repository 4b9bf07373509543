// platform.hpp's primitives against slow, independent reference computations.
// tests/cpp/CMakeLists.txt builds this twice: with the compiler's builtins or
// intrinsics, and with BLOOMKIT_PORTABLE (the portable fallbacks), so both
// code paths are checked on every machine.
#include <doctest/doctest.h>

#include <bloomkit/platform.hpp>

#include <cstdint>
#include <vector>

#include "helpers.hpp"

namespace bp = bloomkit::platform;

namespace {

// High half of a * b by long multiplication on 16-bit digits.
uint64_t reference_mul_high(uint64_t a, uint64_t b) {
    uint32_t digits[8] = {};  // the 128-bit product in base 2^16
    for (int i = 0; i < 4; ++i) {
        uint64_t carry = 0;
        for (int j = 0; j < 4; ++j) {
            const uint64_t t = ((a >> (16 * i)) & 0xffff) * ((b >> (16 * j)) & 0xffff) + digits[i + j] + carry;
            digits[i + j] = static_cast<uint32_t>(t & 0xffff);
            carry = t >> 16;
        }
        for (int k = i + 4; carry != 0 && k < 8; ++k) {
            const uint64_t t = digits[k] + carry;
            digits[k] = static_cast<uint32_t>(t & 0xffff);
            carry = t >> 16;
        }
    }
    uint64_t high = 0;
    for (int k = 7; k >= 4; --k) high = (high << 16) | digits[k];
    return high;
}

uint32_t reference_popcount(uint64_t x) {
    uint32_t n = 0;
    for (; x != 0; x >>= 1) n += static_cast<uint32_t>(x & 1);
    return n;
}

uint32_t reference_ctz(uint64_t x) {
    uint32_t n = 0;
    while ((x & 1) == 0) {
        x >>= 1;
        ++n;
    }
    return n;
}

uint64_t reference_bswap(uint64_t x) {
    uint64_t out = 0;
    for (int i = 0; i < 8; ++i) out |= ((x >> (8 * i)) & 0xff) << (8 * (7 - i));
    return out;
}

std::vector<uint64_t> samples() {
    std::vector<uint64_t> values = {0,
                                    1,
                                    2,
                                    3,
                                    0xffffffffULL,
                                    0x100000000ULL,
                                    ~uint64_t(0),
                                    uint64_t(1) << 63,
                                    0x8000000000000001ULL,
                                    0x0123456789abcdefULL};
    for (uint64_t v : bloomkit_test::distinct_keys(5000, 9)) {
        values.push_back(v);
        values.push_back(v >> (v % 64));  // small and sparse values too
    }
    return values;
}

}  // namespace

TEST_CASE("the build uses the code path it was asked for") {
#if defined(BLOOMKIT_PORTABLE)
    CHECK(bp::kPortable);
#else
    CHECK_FALSE(bp::kPortable);
#endif
}

TEST_CASE("mul_high64 is the high half of the 128-bit product") {
    const auto values = samples();
    for (size_t i = 0; i + 1 < values.size(); ++i) {
        const uint64_t a = values[i], b = values[values.size() - 1 - i];
        REQUIRE(bp::mul_high64(a, b) == reference_mul_high(a, b));
    }
    CHECK(bp::mul_high64(~uint64_t(0), ~uint64_t(0)) == ~uint64_t(0) - 1);
    CHECK(bp::mul_high64(uint64_t(1) << 63, 2) == 1);
}

TEST_CASE("popcount64, ctz64 and bswap64 match bit-by-bit references") {
    for (uint64_t x : samples()) {
        REQUIRE(bp::popcount64(x) == reference_popcount(x));
        REQUIRE(bp::bswap64(x) == reference_bswap(x));
        if (x != 0) REQUIRE(bp::ctz64(x) == reference_ctz(x));
    }
    for (uint32_t bit = 0; bit < 64; ++bit) CHECK(bp::ctz64(uint64_t(1) << bit) == bit);
}

TEST_CASE("prefetch hints are harmless on any address") {
    const uint64_t word = 42;
    bp::prefetch_read(&word);
    bp::prefetch_write(&word);
    CHECK(word == 42);
}
