// Sliding windows of generations: "seen in the last W" for a window of W
// seconds or W keys, kept as a ring of g generations (the local
// RotatingBloomFilter, rotating_bloom.hpp, and the Redis windows share this
// arithmetic, so both number generations alike).
//
// A window of length W split into g generations has g - 1 intervals
// I = W / (g - 1) (for keys: n = ceil(W / (g - 1)) keys each). Generation
// number j covers [j I, (j + 1) I) of the clock, or keys [j n, (j + 1) n) of
// the stream; the current generation is the one "now" falls in, and the
// live generations are the g newest: current - g + 1 .. current. A key goes
// into the current generation and is dropped when its generation falls out
// of the ring, g intervals after the start of its own:
//     kept at least (g - 1) I = W   (it was added at most one I after that start),
//     forgotten by  g I = W + I     after it was added.
// More generations forget closer to W and cost more lookups and memory
// (window_generation_error_rate, sizing.hpp).
//
// Time generations are aligned to the clock's zero (floor(t / I)), not to
// the first add, so independent writers (several processes on one Redis
// window) agree on the current generation without talking to each other.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sizing.hpp"

namespace bloomkit {

enum class WindowUnit : uint8_t { Keys = 0, Seconds = 1 };

// At least 2 generations (one interval); at most 64, since every lookup
// probes each live generation.
constexpr uint32_t kMinWindowGenerations = 2;
constexpr uint32_t kMaxWindowGenerations = 64;
constexpr uint32_t kDefaultWindowGenerations = 5;
// Time windows from a millisecond to about 317 years (10^10 s): generation
// numbers floor(t / I) of any clock value below 2^62 I stay exact int64s.
constexpr double kMinWindowSeconds = 1e-3;
constexpr double kMaxWindowSeconds = 1e10;
// Generation numbers are int64; a clock value whose number reaches 2^62 in
// magnitude is refused rather than wrapped.
constexpr double kMaxGenerationNumber = 4611686018427387904.0;  // 2^62

inline void require_window_generations(uint32_t generations) {
    if (generations < kMinWindowGenerations || generations > kMaxWindowGenerations)
        throw std::invalid_argument("generations must be in [" + std::to_string(kMinWindowGenerations) + ", " +
                                    std::to_string(kMaxWindowGenerations) + "], got " + std::to_string(generations));
}

class WindowSpec {
  public:
    static WindowSpec of_keys(uint64_t keys, uint32_t generations) {
        require_count("window", keys);
        require_window_generations(generations);
        return WindowSpec(WindowUnit::Keys, keys, 0.0, generations);
    }

    static WindowSpec of_seconds(double seconds, uint32_t generations) {
        if (!(seconds >= kMinWindowSeconds && seconds <= kMaxWindowSeconds))
            throw std::invalid_argument("a time window must be in [0.001 s, 1e10 s], got " +
                                        detail::format_repr(seconds) + " s");
        require_window_generations(generations);
        return WindowSpec(WindowUnit::Seconds, 0, seconds, generations);
    }

    // "7d", "12h", "90m", "30s", "1.5w" (a number and one unit: s, m, h, d,
    // w) is a time window; a bare number ("1e6", "1000000") is a key count
    // and must be a whole number. Nothing else is accepted: no spaces, no
    // sign, no unit without a number.
    static WindowSpec parse(const std::string& text, uint32_t generations) {
        auto refuse = [&](const std::string& why) {
            return std::invalid_argument("window " + quoted(text) + " " + why +
                                         "; expected a key count such as '1e6' or a duration such as '7d', '12h', "
                                         "'90m', '30s'");
        };
        if (text.empty() || text.size() > 64) throw refuse("is not a window");
        const char last = text.back();
        double unit_seconds = 0.0;
        switch (last) {
            case 's': unit_seconds = 1.0; break;
            case 'm': unit_seconds = 60.0; break;
            case 'h': unit_seconds = 3600.0; break;
            case 'd': unit_seconds = 86400.0; break;
            case 'w': unit_seconds = 604800.0; break;
            default: break;
        }
        const std::string number = unit_seconds > 0.0 ? text.substr(0, text.size() - 1) : text;
        const double value = parse_number(number);
        if (!(value > 0.0))
            throw refuse("is not a positive number" + std::string(unit_seconds > 0.0 ? " of units" : ""));
        if (unit_seconds > 0.0) return of_seconds(value * unit_seconds, generations);
        if (value != std::floor(value)) throw refuse("is not a whole number of keys");
        if (!(value < 9223372036854775808.0)) throw refuse("has more than 2**63 - 1 keys");
        return of_keys(static_cast<uint64_t>(value), generations);
    }

    WindowUnit unit() const { return unit_; }
    uint32_t generations() const { return generations_; }
    uint64_t keys() const { return keys_; }      // 0 for a time window
    double seconds() const { return seconds_; }  // 0 for a key window
    // Keys per generation, ceil(W / (g - 1)) (0 for a time window).
    uint64_t interval_keys() const {
        return unit_ == WindowUnit::Keys ? keys_ / (generations_ - 1) + (keys_ % (generations_ - 1) != 0) : 0;
    }
    // Seconds per generation, W / (g - 1) (0 for a key window).
    double interval_seconds() const {
        return unit_ == WindowUnit::Seconds ? seconds_ / static_cast<double>(generations_ - 1) : 0.0;
    }

    // The generation current at clock value `now` (seconds): floor(now / I).
    int64_t generation_at(double now) const {
        if (unit_ != WindowUnit::Seconds) throw std::invalid_argument("a key window has no generation at a time");
        const double number = std::floor(now / interval_seconds());
        if (!(std::fabs(number) < kMaxGenerationNumber))
            throw std::invalid_argument("clock value " + detail::format_repr(now) +
                                        " is outside the window's range (|now| / interval must be below 2**62)");
        return static_cast<int64_t>(number);
    }

    // The generation the key after `keys_seen` keys goes into: keys_seen / n.
    int64_t generation_after(uint64_t keys_seen) const {
        if (unit_ != WindowUnit::Keys) throw std::invalid_argument("a time window has no generation after a key count");
        return static_cast<int64_t>(keys_seen / interval_keys());  // n >= 1, keys_seen < 2^64: fits in int64 below 2^63
    }

    // The oldest generation still live when `current` is current.
    int64_t oldest_live(int64_t current) const { return current - static_cast<int64_t>(generations_) + 1; }
    bool is_live(int64_t generation, int64_t current) const {
        return generation <= current && generation >= oldest_live(current);
    }
    // The ring position of a generation, generation mod g in [0, g).
    uint32_t slot(int64_t generation) const {
        const int64_t g = static_cast<int64_t>(generations_);
        return static_cast<uint32_t>(((generation % g) + g) % g);
    }

    // The shortest text parse() reads back as this window: a whole key count,
    // or a duration in the largest of w, d, h, m, s that divides it exactly
    // (seconds as the shortest decimal otherwise).
    std::string text() const {
        if (unit_ == WindowUnit::Keys) return std::to_string(keys_);
        static const struct {
            double seconds;
            char unit;
        } units[] = {{604800.0, 'w'}, {86400.0, 'd'}, {3600.0, 'h'}, {60.0, 'm'}};
        for (const auto& u : units) {
            const double count = seconds_ / u.seconds;
            if (count >= 1.0 && count == std::floor(count) && count * u.seconds == seconds_)
                return decimal(count) + u.unit;
        }
        return decimal(seconds_) + 's';
    }

    bool operator==(const WindowSpec& o) const {
        return unit_ == o.unit_ && keys_ == o.keys_ && seconds_ == o.seconds_ && generations_ == o.generations_;
    }
    bool operator!=(const WindowSpec& o) const { return !(*this == o); }

  private:
    WindowSpec(WindowUnit unit, uint64_t keys, double seconds, uint32_t generations)
        : unit_(unit), keys_(keys), seconds_(seconds), generations_(generations) {}

    // A decimal number in full (digits, one optional '.', an optional
    // exponent), or NaN when `text` is anything else.
    static double parse_number(const std::string& text) {
        size_t i = 0;
        size_t digits = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
        if (i < text.size() && text[i] == '.') {
            ++i;
            while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
        }
        if (digits == 0) return std::nan("");
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
            ++i;
            if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
            size_t exponent_digits = 0;
            while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++exponent_digits;
            if (exponent_digits == 0) return std::nan("");
        }
        if (i != text.size()) return std::nan("");
        return std::strtod(text.c_str(), nullptr);
    }

    // Whole numbers in plain digits ("90", not "9e+01"), others as the
    // shortest decimal that reads back.
    static std::string decimal(double value) {
        if (value == std::floor(value) && value < 1e15) {
            char text[32];
            std::snprintf(text, sizeof text, "%.0f", value);
            return text;
        }
        return detail::format_repr(value);
    }

    static std::string quoted(const std::string& text) {
        std::string out = "'";
        for (char c : text.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
        return out + (text.size() > 64 ? "...'" : "'");
    }

    WindowUnit unit_;
    uint64_t keys_;
    double seconds_;
    uint32_t generations_;
};

}  // namespace bloomkit
