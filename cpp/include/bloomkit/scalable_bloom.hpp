// The scalable Bloom filter (Almeida, Baquero, Preguiça & Hutchison,
// "Scalable Bloom Filters", Information Processing Letters 101(6), 2007): a
// chain of plain Bloom filters ("slices") that grows when the newest one is
// full, so the final number of keys need not be known in advance.
//
// Slice i holds c_i keys at false-positive rate p_i, with
//     c_0 = initial_capacity,          c_{i+1} = ceil(c_i * growth)
//     p_0 = error_rate * (1 - r),      p_{i+1} = p_i * r        (r = tightening)
// so sum_i p_i = error_rate * (1 - r^N) < error_rate for any number of slices
// N, and the compound rate 1 - prod(1 - p_i) <= sum_i p_i stays below
// error_rate however far the filter grows. The recurrences use only
// IEEE multiplication and ceil, so every platform builds the same chain.
//
// Every slice uses the filter's seed: a key is hashed once and its digest
// probes every slice (through IndexSequence with that slice's size).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "bloom.hpp"
#include "format.hpp"
#include "frame_reader.hpp"
#include "hash.hpp"
#include "keys.hpp"
#include "prefetch.hpp"

namespace bloomkit {

// The geometry of a slice: the smallest of its layout whose predicted rate
// at `capacity` keys is at most `error_rate` (sizing.hpp).
inline BloomGeometry bloom_geometry_at_most(Layout layout, uint64_t capacity, double error_rate, uint32_t seed) {
    const BloomSize size = layout_size_at_most(layout, capacity, error_rate);
    check_layout_overhead(layout, capacity, error_rate, size.num_bits);
    BloomGeometry g;
    g.num_bits = size.num_bits;
    g.num_hashes = size.num_hashes;
    g.seed = seed;
    g.capacity = capacity;
    g.error_rate = error_rate;
    g.layout = layout;
    return g;
}

// Bytes of zero padding after `size` bytes to reach a 64-byte boundary.
inline uint64_t line_padding(uint64_t size) {
    return (kPayloadAlignment - size % kPayloadAlignment) % kPayloadAlignment;
}

// The constructor arguments of a scalable filter.
struct ScalableParams {
    uint64_t initial_capacity = 0;
    double error_rate = 0.0;
    double growth = 0.0;
    double tightening = 0.0;
    uint32_t seed = 0;
    Layout layout = Layout::Classic;

    void validate() const {
        require_count("initial_capacity", initial_capacity);
        require_open_unit("error_rate", error_rate);
        if (!(growth > 1.0 && std::isfinite(growth)))
            throw std::invalid_argument("growth must be a finite number > 1, got " + detail::format_number(growth));
        require_open_unit("tightening", tightening);
        if (!valid_layout_code(static_cast<uint32_t>(layout)))
            throw std::invalid_argument("unknown layout code " + std::to_string(static_cast<uint32_t>(layout)));
    }

    // The params block (docs/FORMAT.md, type 3): the fields above with the
    // slice count between seed and layout; version 1 has no layout (classic).
    void write(ByteWriter& w, uint32_t num_slices) const {
        w.u64(initial_capacity);
        w.f64(error_rate);
        w.f64(growth);
        w.f64(tightening);
        w.u32(seed);
        w.u32(num_slices);
        BloomGeometry::write_layout(w, layout);
    }

    // Reads the whole block (unchecked: the caller runs check_stored()).
    static ScalableParams read(ByteReader& r, bool has_layout, uint32_t& num_slices) {
        ScalableParams p;
        p.initial_capacity = r.u64("initial_capacity");
        p.error_rate = r.f64("error_rate");
        p.growth = r.f64("growth");
        p.tightening = r.f64("tightening");
        p.seed = r.u32("seed");
        num_slices = r.u32("num_slices");
        if (has_layout) p.layout = BloomGeometry::read_layout(r);
        r.expect_end("params");
        return p;
    }

    // Capacity and error rate of the slice after one with (capacity, error).
    uint64_t next_capacity(uint64_t capacity) const {
        const double next = std::ceil(static_cast<double>(capacity) * growth);
        if (!(next < 9.2e18))
            throw std::invalid_argument("the filter cannot grow past a slice of " + std::to_string(capacity) +
                                        " keys: the next slice would exceed 2**63 keys");
        return static_cast<uint64_t>(next);
    }
    double next_error_rate(double error) const { return error * tightening; }
    double first_error_rate() const { return error_rate * (1.0 - tightening); }
};

class ScalableBloomFilter {
  public:
    // The prefetch step of every batch loop (prefetch.hpp); defined before
    // its uses because clang resolves a deduced return type at the call.
    auto prefetcher() const {
        return [this](Hash128 h) { prefetch(h); };
    }

    // One link of the chain: a plain Bloom filter and the number of keys
    // inserted into it (each new to the whole chain when inserted).
    struct Slice {
        BloomFilter filter;
        uint64_t count;
    };
    // A new slice moves the others (std::vector growth); a move keeps each
    // slice's bit array where it is, so views of it (a protocol 5 pickle's
    // buffers, cpp/bindings/common.hpp) stay valid. Only clear() frees
    // memory, the slices after the first: kClearFreesStorage.
    static_assert(std::is_nothrow_move_constructible<Slice>::value, "growth must move slices, not copy them");
    static constexpr bool kClearFreesStorage = true;

    explicit ScalableBloomFilter(const ScalableParams& params) : params_(params) {
        params_.validate();
        slices_.push_back(Slice{BloomFilter(bloom_geometry_at_most(params_.layout, params_.initial_capacity,
                                                                   params_.first_error_rate(), params_.seed)),
                                0});
    }

    const ScalableParams& params() const { return params_; }
    const std::vector<Slice>& slices() const { return slices_; }
    uint32_t seed() const { return params_.seed; }

    uint64_t nbytes() const {
        uint64_t total = 0;
        for (const Slice& s : slices_) total += s.filter.nbytes();
        return total;
    }

    // Keys inserted as new: every add() that returned false.
    uint64_t count() const {
        uint64_t total = 0;
        for (const Slice& s : slices_) total += s.count;
        return total;
    }

    uint64_t capacity() const {
        uint64_t total = 0;
        for (const Slice& s : slices_) total += s.filter.geometry().capacity;
        return total;
    }

    // Newest slice first: it is the largest, so it holds most of the keys.
    bool contains(Hash128 h) const {
        for (size_t i = slices_.size(); i-- > 0;)
            if (slices_[i].filter.contains(h)) return true;
        return false;
    }

    // Inserts the key unless some slice already reports it, so no key is
    // stored twice and each slice's count is a count of distinct keys.
    // Returns true if the key was (probably) present before.
    bool add(Hash128 h) {
        if (contains(h)) return true;
        Slice* newest = &slices_.back();
        if (newest->count >= newest->filter.geometry().capacity) newest = &grow();
        newest->filter.add(h);
        ++newest->count;
        return false;
    }

    // Prefetches the first position of the key in every slice: the one
    // position every lookup reads (an absent key usually stops there).
    void prefetch(Hash128 h) const {
        for (const Slice& s : slices_) s.filter.prefetch_first(h);
    }

    // Batch insert with the sequential semantics of add() (a key repeated in
    // the batch reports true the second time). Before changing anything it
    // checks that the chain could grow to hold every key of the batch, so a
    // batch is rejected whole rather than failing half-way.
    template <class Keys>
    void add_many(const Keys& keys, uint8_t* was_present) {
        check_room_for(keys.size());
        for_each_key_prefetched(keys, params_.seed, prefetcher(), [&](size_t i, Hash128 h) {
            const bool present = add(h);
            if (was_present) was_present[i] = present;
        });
    }

    template <class Keys>
    void contains_many(const Keys& keys, uint8_t* present) const {
        for_each_key_prefetched(keys, params_.seed, prefetcher(),
                                [&](size_t i, Hash128 h) { present[i] = contains(h); });
    }

    // Back to a single empty first slice (larger slices are freed).
    void clear() {
        slices_.erase(slices_.begin() + 1, slices_.end());
        slices_[0].filter.clear();
        slices_[0].count = 0;
    }

    bool operator==(const ScalableBloomFilter& other) const {
        const ScalableParams& a = params_;
        const ScalableParams& b = other.params_;
        if (a.initial_capacity != b.initial_capacity || a.error_rate != b.error_rate || a.growth != b.growth ||
            a.tightening != b.tightening || a.seed != b.seed || slices_.size() != other.slices_.size())
            return false;
        for (size_t i = 0; i < slices_.size(); ++i)
            if (slices_[i].count != other.slices_[i].count || !(slices_[i].filter == other.slices_[i].filter))
                return false;
        return true;
    }

    // --- serialization (docs/FORMAT.md, type tag 3) ---

    static constexpr size_t kSliceRecordSize = 40;  // BloomGeometry (32) + count (8)

    std::vector<uint8_t> serialize() const { return frame_bytes(*this); }

    // Version 2 payload: the slice table, zero padding to a multiple of 64
    // bytes, then each slice's bit array followed by zero padding to a
    // multiple of 64 bytes, so every slice starts on a cache line.
    void serialize_to(FrameSink& sink) const {
        uint64_t payload_length = slices_.size() * kSliceRecordSize;
        payload_length += line_padding(payload_length);
        for (const Slice& s : slices_)
            payload_length += s.filter.payload_length() + line_padding(s.filter.payload_length());
        write_frame(
            sink, FilterType::ScalableBloom, payload_length,
            [&](ByteWriter& w) { params_.write(w, static_cast<uint32_t>(slices_.size())); },
            [&](ByteWriter& w) {
                for (const Slice& s : slices_) {
                    s.filter.geometry().write(w);  // the layout is the chain's, in the params
                    w.u64(s.count);
                }
                w.zeros(line_padding(slices_.size() * kSliceRecordSize));
                for (const Slice& s : slices_) {
                    s.filter.write_payload(w);
                    w.zeros(line_padding(s.filter.payload_length()));
                }
            });
    }

    static constexpr FilterType kFrameType = FilterType::ScalableBloom;

    // The params, the slice table (every record checked, and the bytes the
    // bits need added up, before any bit array is allocated), then each
    // slice's bits read straight into it (frame_reader.hpp).
    static ScalableBloomFilter read_from(FrameReader& frame) {
        const bool padded = frame.version() >= 2;
        auto padding = [&](uint64_t size) { return padded ? line_padding(size) : 0; };
        ByteReader params_reader = frame.params();
        uint32_t num_slices = 0;
        const ScalableParams params = ScalableParams::read(params_reader, padded, num_slices);
        check_stored(params);
        const uint64_t payload_length = frame.payload_length();
        if (num_slices == 0) throw FormatError("invalid stored parameters: num_slices must be at least 1");
        if (num_slices > kMaxScalableSlices)
            throw FormatError("invalid stored parameters: num_slices " + std::to_string(num_slices) +
                              " exceeds the limit of " + std::to_string(kMaxScalableSlices) + " slices");
        if (num_slices > payload_length / kSliceRecordSize)
            throw FormatError("payload of " + std::to_string(payload_length) + " bytes is too short for " +
                              std::to_string(num_slices) + " slice records");

        StreamReader& payload = frame.payload();
        // Grown record by record, not reserved for num_slices: from a source
        // of unknown size (a pipe) the declared payload length bounds nothing,
        // so memory must follow the bytes actually read.
        std::vector<BloomGeometry> geometries;
        std::vector<uint64_t> counts;
        uint64_t capacity = params.initial_capacity;
        double error = params.first_error_rate();
        const uint64_t table_bytes = uint64_t(num_slices) * kSliceRecordSize;
        uint64_t bits_bytes = padding(table_bytes);
        for (uint32_t i = 0; i < num_slices; ++i) {
            const std::string where = "slice " + std::to_string(i) + ": ";
            if (i > 0) {
                try {
                    capacity = params.next_capacity(capacity);
                } catch (const std::invalid_argument& e) {
                    throw FormatError(where + e.what());
                }
                error = params.next_error_rate(error);
            }
            BloomGeometry g = BloomGeometry::read_fields(payload);
            g.layout = params.layout;
            check_stored(g, where);
            const uint64_t count = payload.u64("slice count");
            if (g.seed != params.seed)
                throw FormatError(where + "seed " + std::to_string(g.seed) + " differs from the filter's " +
                                  std::to_string(params.seed));
            if (g.capacity != capacity || g.error_rate != error)
                throw FormatError(where + "capacity/error_rate do not follow the growth/tightening schedule");
            if (count > g.capacity)
                throw FormatError(where + "count " + std::to_string(count) + " exceeds its capacity " +
                                  std::to_string(g.capacity));
            if (i + 1 < num_slices && count != g.capacity)
                throw FormatError(where + "a slice before the newest must be full");
            const uint64_t available = payload_length - table_bytes;
            const uint64_t words = BitArray::words_for(g.num_bits);
            if (bits_bytes > available || words > (available - bits_bytes) / sizeof(uint64_t))
                throw FormatError(where + "num_bits " + std::to_string(g.num_bits) +
                                  " needs more bytes than the payload holds");
            bits_bytes += words * sizeof(uint64_t) + padding(words * sizeof(uint64_t));
            geometries.push_back(g);
            counts.push_back(count);
        }
        if (bits_bytes != payload.remaining())
            throw FormatError("payload holds " + std::to_string(payload.remaining()) +
                              " bytes of bits but the slices need " + std::to_string(bits_bytes));

        payload.zeros(padding(table_bytes), "padding after the slice table");
        ScalableBloomFilter filter(params, Empty{});
        filter.slices_.reserve(num_slices);
        for (uint32_t i = 0; i < num_slices; ++i) {
            filter.slices_.push_back(Slice{BloomFilter::read_payload(geometries[i], payload), counts[i]});
            payload.zeros(padding(filter.slices_.back().filter.payload_length()), "padding after a slice");
        }
        return filter;
    }

    static ScalableBloomFilter deserialize(const uint8_t* data, size_t len) {
        SpanSource source(data, len);
        return read_frame<ScalableBloomFilter>(source);
    }

  private:
    struct Empty {};
    ScalableParams params_;
    std::vector<Slice> slices_;

    // A chain with no slices, filled in by deserialize().
    ScalableBloomFilter(const ScalableParams& params, Empty) : params_(params) {}

    // Appends the next slice of the schedule and returns it. The geometry
    // is computed (and may throw) before anything changes.
    Slice& grow() {
        const BloomGeometry next =
            next_geometry(slices_.back().filter.geometry(), static_cast<uint32_t>(slices_.size()));
        slices_.push_back(Slice{BloomFilter(next), 0});
        return slices_.back();
    }

    // The geometry of slice `index`, following a slice of geometry `last`.
    BloomGeometry next_geometry(const BloomGeometry& last, uint32_t index) const {
        if (index >= kMaxScalableSlices)
            throw std::invalid_argument("the filter cannot grow to slice " + std::to_string(index) + ": at most " +
                                        std::to_string(kMaxScalableSlices) +
                                        " slices are supported (a larger growth or initial_capacity reaches more "
                                        "keys in fewer slices)");
        try {
            return bloom_geometry_at_most(params_.layout, params_.next_capacity(last.capacity),
                                          params_.next_error_rate(last.error_rate), params_.seed);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("the filter cannot grow to slice " + std::to_string(index) + ": " + e.what() +
                                        " (a tightening closer to 1 or a larger growth lets the chain reach more "
                                        "keys)");
        }
    }

    // Throws, changing nothing, when `new_keys` more distinct keys would need
    // a slice that cannot be built (more than 64 hashes, 2**63 keys or
    // kMaxScalableSlices slices, so this loop runs at most that many times).
    void check_room_for(uint64_t new_keys) const {
        const Slice& newest = slices_.back();
        BloomGeometry g = newest.filter.geometry();
        uint64_t room = g.capacity - newest.count;
        uint32_t index = static_cast<uint32_t>(slices_.size());
        while (room < new_keys) {
            g = next_geometry(g, index++);
            room += g.capacity;  // < 2**64: room < new_keys and capacity < 2**63
        }
    }
};

}  // namespace bloomkit
