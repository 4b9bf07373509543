// The window arithmetic of window.hpp (parsing, generation numbers, the live
// ring) and the window sizing of sizing.hpp.
#include <doctest/doctest.h>

#include <bloomkit/sizing.hpp>
#include <bloomkit/window.hpp>

#include <cmath>
#include <cstdint>
#include <string>

using namespace bloomkit;

TEST_CASE("durations and key counts parse to their window; text() reads back") {
    const WindowSpec week = WindowSpec::parse("7d", 5);
    CHECK(week.unit() == WindowUnit::Seconds);
    CHECK(week.seconds() == 7 * 86400.0);
    CHECK(week.interval_seconds() == 7 * 86400.0 / 4);
    CHECK(week.text() == "1w");
    CHECK(WindowSpec::parse("12h", 5).seconds() == 43200.0);
    CHECK(WindowSpec::parse("90m", 5).seconds() == 5400.0);
    CHECK(WindowSpec::parse("90m", 5).text() == "90m");
    CHECK(WindowSpec::parse("30s", 5).seconds() == 30.0);
    CHECK(WindowSpec::parse("1.5h", 3).text() == "90m");
    CHECK(WindowSpec::parse("0.25s", 3).text() == "0.25s");
    const WindowSpec million = WindowSpec::parse("1e6", 5);
    CHECK(million.unit() == WindowUnit::Keys);
    CHECK(million.keys() == 1000000);
    CHECK(million.interval_keys() == 250000);
    CHECK(million.text() == "1000000");
    CHECK(WindowSpec::parse("1000", 4).interval_keys() == 334);  // ceil(1000 / 3): kept at least 1,002 keys
    for (const char* text : {"7d", "12h", "90m", "30s", "2w", "1e6", "123", "0.001s"}) {
        const WindowSpec w = WindowSpec::parse(text, 6);
        CHECK(WindowSpec::parse(w.text(), 6) == w);
    }
}

TEST_CASE("malformed windows are refused with the text and the accepted forms") {
    for (const char* text : {"", "d", "7 d", " 7d", "-7d", "+7d", "7x", "7dd", "1e", "1e+", "..5", "0", "0s", "nan",
                             "inf", "1.5", "7D", "1e6s5", "0x10"}) {
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(WindowSpec::parse(text, 5), doctest::Contains("expected a key count"),
                             std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(WindowSpec::parse("1e19", 5), doctest::Contains("2**63 - 1 keys"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::parse("1e400", 5), doctest::Contains("2**63 - 1 keys"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::parse("0.0001s", 5), doctest::Contains("[0.001 s, 1e10 s]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::parse("1e9w", 5), doctest::Contains("[0.001 s, 1e10 s]"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::parse("7d", 1), doctest::Contains("generations must be in [2, 64], got 1"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::parse("7d", 65), doctest::Contains("got 65"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(WindowSpec::of_keys(0, 5), doctest::Contains("window must be in [1, 2**63)"),
                         std::invalid_argument);
    // Control bytes are not echoed into the message.
    CHECK_THROWS_WITH_AS(WindowSpec::parse(std::string("7\nd"), 5), doctest::Contains("'7?d'"), std::invalid_argument);
}

TEST_CASE("time generations: floor(t / I), the g newest live, ring slots") {
    const WindowSpec w = WindowSpec::parse("4h", 5);  // I = 1 h
    CHECK(w.generation_at(0.0) == 0);
    CHECK(w.generation_at(3599.999) == 0);
    CHECK(w.generation_at(3600.0) == 1);
    CHECK(w.generation_at(-1.0) == -1);
    CHECK(w.generation_at(1.7e9) == static_cast<int64_t>(std::floor(1.7e9 / 3600.0)));
    CHECK(w.oldest_live(10) == 6);
    CHECK(w.is_live(6, 10));
    CHECK(w.is_live(10, 10));
    CHECK_FALSE(w.is_live(5, 10));
    CHECK_FALSE(w.is_live(11, 10));
    CHECK(w.slot(7) == 2);
    CHECK(w.slot(-1) == 4);
    CHECK_THROWS_WITH_AS(w.generation_at(std::nan("")), doctest::Contains("outside the window's range"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(w.generation_at(1e300), doctest::Contains("outside the window's range"),
                         std::invalid_argument);
    CHECK_THROWS_AS(w.generation_after(10), std::invalid_argument);
}

TEST_CASE("a key is kept at least W and forgotten by W + I, for every add time in an interval") {
    const WindowSpec w = WindowSpec::parse("100s", 5);  // I = 25 s
    for (double added = 0.0; added < 100.0; added += 0.5) {
        const int64_t generation = w.generation_at(added);
        CHECK(w.is_live(generation, w.generation_at(added + 100.0 - 1e-9)));
        CHECK_FALSE(w.is_live(generation, w.generation_at(added + 125.0)));
    }
    const WindowSpec k = WindowSpec::of_keys(1000, 5);  // n = 250
    for (uint64_t position = 0; position < 2000; position += 7) {
        const int64_t generation = k.generation_after(position);
        CHECK(k.is_live(generation, k.generation_after(position + 1000)));
        CHECK_FALSE(k.is_live(generation, k.generation_after(position + 1250)));
    }
}

TEST_CASE("window sizing: g generations at p_g OR-ed meet p exactly") {
    for (double p : {0.1, 0.01, 1e-4, 1e-9}) {
        for (uint32_t g : {2u, 5u, 8u, 64u}) {
            const double pg = window_generation_error_rate(p, g);
            CHECK(pg < p);
            CHECK(window_error_rate(pg, g) == doctest::Approx(p).epsilon(1e-12));
            CHECK(1.0 - std::pow(1.0 - pg, g) == doctest::Approx(p).epsilon(1e-9));
        }
    }
    CHECK(window_generation_error_rate(0.01, 5) == doctest::Approx(0.0020080).epsilon(1e-4));
    CHECK(window_generation_capacity(1000000, 5) == 250000);
    CHECK(window_generation_capacity(1000, 4) == 334);
    CHECK_THROWS_WITH_AS(window_generation_error_rate(1.0, 5), doctest::Contains("error_rate"), std::invalid_argument);
    CHECK_THROWS_AS(window_generation_capacity(0, 5), std::invalid_argument);
}
