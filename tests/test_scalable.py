"""ScalableBloomFilter: the slice schedule, growth, accuracy, memory, format."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from bloomkit import BloomFilter, ScalableBloomFilter
from bloomkit._fill import fill_false_positive_rate
from bloomkit.calc import LAYOUTS, false_positive_rate
from support import (
    fpr_upper_bound,
    make_frame,
    split_frame,
    url_keys,
)

PARAMS_FORMAT = "<QdddIIII"  # initial_capacity, error_rate, growth, tightening, seed, num_slices, layout, reserved
SLICE_FORMAT = "<QIIQdQ"  # num_bits, num_hashes, seed, capacity, error_rate, count


def grown(initial_capacity=100, keys=1000, **kwargs):
    f = ScalableBloomFilter(initial_capacity, **kwargs)
    f.update(url_keys(0, keys))
    return f


def memory_bound(f: ScalableBloomFilter) -> float:
    """docs/counting_and_scalable.md: nbytes <= s * rho * s^(N-1) / (s^(N-1) - 1) * BloomFilter(n, p).nbytes.

    rho = 1 + (log2(1/(1-r)) + (N-1) log2(1/r)) / log2(1/p) is the bits per
    key of the newest slice over a right-sized filter's; 1 % covers the
    integer-k sizing and the rounding to 64-bit words.
    """
    s, r, p, n_slices = f.growth, f.tightening, f.error_rate, f.num_slices
    rho = 1 + (math.log2(1 / (1 - r)) + (n_slices - 1) * math.log2(1 / r)) / math.log2(1 / p)
    return 1.01 * s * rho * s ** (n_slices - 1) / (s ** (n_slices - 1) - 1)


# ----------------------------------------------------------- construction


def test_defaults_and_properties():
    f = ScalableBloomFilter()
    assert (f.initial_capacity, f.error_rate, f.growth, f.tightening, f.seed) == (1000, 0.01, 2.0, 0.85, 0)
    assert f.num_slices == 1 and f.capacity == 1000 and len(f) == 0
    (first,) = f.slices
    assert first.capacity == 1000 and first.error_rate == pytest.approx(0.01 * 0.15)
    assert first.count == 0 and first.fill_ratio == 0.0
    assert f.nbytes == first.nbytes == 8 * math.ceil(first.num_bits / 64)
    assert f.estimated_fpr() == 0.0


def test_slice_schedule_and_error_budget():
    f = grown(50, 5000, error_rate=0.02, growth=3, tightening=0.8, layout="classic")
    slices = f.slices
    assert len(slices) == f.num_slices == 5  # 50 + 150 + 450 + 1350 + 4050 >= 5000 > 2000
    capacity, error = 50, 0.02 * (1 - 0.8)
    for i, info in enumerate(slices):
        assert info.capacity == capacity
        assert info.error_rate == error  # the same IEEE products as the core
        # Each slice is sized so its predicted rate at capacity is within its share.
        assert false_positive_rate(info.num_bits, info.capacity, info.num_hashes) <= info.error_rate
        # ... and not grossly oversized: within 1 % of the real-k optimum.
        assert info.num_bits <= 1.01 * info.capacity * -math.log(info.error_rate) / math.log(2) ** 2 + 64
        if i + 1 < len(slices):
            assert info.count == info.capacity  # older slices are full
        capacity, error = math.ceil(capacity * 3), error * 0.8
    assert f.capacity == sum(info.capacity for info in slices)
    assert f.nbytes == sum(info.nbytes for info in slices)
    compound = 1 - math.prod(1 - false_positive_rate(s.num_bits, s.capacity, s.num_hashes) for s in slices)
    assert compound < sum(s.error_rate for s in slices) < 0.02


def test_compound_share_stays_below_error_rate_for_any_chain_length():
    # The geometric series behind the guarantee: 1 - prod(1 - p_i) <
    # sum p (1 - r) r^i < p, with the shares computed as the core does.
    for error_rate in (0.5, 0.01, 1e-6):
        for r in (0.1, 0.5, 0.85, 0.9, 0.99):
            share, total_log_miss = error_rate * (1 - r), 0.0
            for _ in range(3000):
                total_log_miss += math.log1p(-share)
                share *= r
            assert -math.expm1(total_log_miss) < error_rate


# -------------------------------------------------------------- insertion


def test_add_reports_presence_and_never_stores_a_key_twice():
    f = ScalableBloomFilter(100)
    assert f.add("x") is False
    assert f.add("x") is True
    assert len(f) == 1
    assert f.add_many(["y", "y", "x"]).tolist() == [False, True, True]
    keys = url_keys(0, 1000)
    f.update(keys)
    snapshot = f.to_bytes()
    assert f.add_many(keys).all()
    f.update(keys)
    assert f.to_bytes() == snapshot


def test_len_counts_inserts_exactly():
    f = ScalableBloomFilter(100, 0.05)
    inserted = 0
    for key in url_keys(0, 2000) + url_keys(0, 500):
        inserted += not f.add(key)
    assert len(f) == inserted == sum(s.count for s in f.slices)
    assert 2000 * (1 - 0.05) <= len(f) <= 2000


def test_a_slice_fills_before_the_next_is_added():
    f = ScalableBloomFilter(100, 0.01)
    keys = iter(url_keys(0, 10_000))
    while len(f) < 100:
        f.add(next(keys))
    assert f.num_slices == 1 and f.slices[0].count == 100
    while f.add(next(keys)):  # a false positive is not inserted
        pass
    assert f.num_slices == 2
    assert [s.count for s in f.slices] == [100, 1]
    assert f.slices[1].capacity == 200


@pytest.mark.statistical
@pytest.mark.parametrize("layout", ["classic", "split_block"])
def test_hundredfold_growth_keeps_accuracy_and_memory(layout):
    initial, error_rate = 2000, 0.01
    keys = url_keys(0, 100 * initial)
    f = ScalableBloomFilter(initial, error_rate, layout=layout)
    f.update(keys)
    assert f.num_slices == 7  # 2000 * (2^6 - 1) < 200,000 <= 2000 * (2^7 - 1)
    assert f.contains_many(keys).all()  # no false negatives
    probes = url_keys(10**9, 200_000)
    measured = f.contains_many(probes).mean()
    assert measured <= fpr_upper_bound(error_rate, len(probes))
    assert f.estimated_fpr() <= error_rate
    assert len(f) >= len(keys) * (1 - error_rate)
    right_sized = BloomFilter(len(keys), error_rate, layout=layout)
    ratio = f.nbytes / right_sized.nbytes
    assert ratio <= memory_bound(f)
    if layout == "classic":
        assert ratio <= 2.1  # the docs' table entry for 100x growth at p=0.01, s=2, r=0.85


@pytest.mark.parametrize("layout", LAYOUTS)
def test_estimated_fpr_is_compound_of_slice_fills(layout):
    f = ScalableBloomFilter(100, 0.01, layout=layout)
    f.update(range(1500))
    # Each slice's rate at its fill is that of a BloomFilter of its geometry
    # holding the same bits, in the chain's layout (fill ** k for classic).
    rates = [
        fill_false_positive_rate(layout, s.num_bits, s.num_hashes, round(s.fill_ratio * s.num_bits)) for s in f.slices
    ]
    if layout == "classic":
        assert rates == pytest.approx([s.fill_ratio**s.num_hashes for s in f.slices])
    expected = 1 - math.prod(1 - r for r in rates)
    assert f.estimated_fpr() == pytest.approx(expected)
    assert 0 < f.estimated_fpr() < f.error_rate
    # And it predicts what lookups of absent keys measure.
    absent = np.arange(1 << 40, (1 << 40) + 200_000, dtype=np.uint64)
    measured = np.count_nonzero(f.contains_many(absent)) / len(absent)
    sigma = (expected * (1 - expected) / len(absent)) ** 0.5
    assert abs(measured - expected) <= 0.15 * expected + 5 * sigma, (measured, expected)


def test_seed_changes_positions():
    a = grown(100, 300, seed=1)
    b = grown(100, 300, seed=2)
    assert a != b and a.to_bytes() != b.to_bytes()
    assert a == grown(100, 300, seed=1)


def test_clear_returns_to_one_empty_slice():
    f = grown(100, 2000)
    assert f.num_slices > 1
    f.clear()
    assert f.num_slices == 1 and len(f) == 0 and url_keys(0, 1)[0] not in f
    assert f.to_bytes() == ScalableBloomFilter(100).to_bytes()


def test_cannot_grow_past_64_hashes_is_value_error_and_changes_nothing():
    # tightening 0.01 divides each slice's error rate by 100 (6.6 more hashes
    # per slice), so slice 9 would need about 66 hash functions.
    f = ScalableBloomFilter(1, 0.01, growth=2, tightening=0.01, layout="classic")
    f.update(range(200))
    before = f.to_bytes()
    with pytest.raises(ValueError, match=r"the filter cannot grow to slice 9: error_rate .* needs about 66 hash"):
        f.add_many(range(1000, 2000))  # the whole batch is refused up front
    assert f.to_bytes() == before
    with pytest.raises(ValueError, match="cannot grow to slice 9"):
        for key in range(1000, 2000):
            f.add(key)
    assert f.num_slices == 9 and len(f) == 511  # 1 + 2 + ... + 256: every slice full
    full = f.to_bytes()
    with pytest.raises(ValueError, match="cannot grow to slice 9"):
        f.add(10**6)
    assert f.to_bytes() == full


def test_repr_and_html_show_slices_fill_count_and_fpr():
    f = grown(100, 1000)
    text = repr(f)
    assert text.startswith(
        "<ScalableBloomFilter initial_capacity=100 error_rate=0.01 growth=2 tightening=0.85 seed=0 num_slices=4 "
        "capacity=1,500"
    )
    fills = ", ".join(f"{s.fill_ratio:.2f}" for s in f.slices)
    assert f"slice_fill=[{fills}]" in text
    assert f"count={len(f):,}" in text and "estimated_fpr=" in text
    html = f._repr_html_()
    assert "num_slices" in html and "slice_fill" in html and "<table" in html


# ------------------------------------------------------------ persistence


def test_format_params_and_slice_table():
    f = grown(100, 500, error_rate=0.01, seed=5, layout="classic")
    type_tag, params, payload = split_frame(f.to_bytes())
    assert type_tag == 3
    assert struct.unpack(PARAMS_FORMAT, params) == (100, 0.01, 2.0, 0.85, 5, 3, 0, 0)  # ..., layout, reserved
    offset = 0
    for info in f.slices:
        record = struct.unpack_from(SLICE_FORMAT, payload, offset)
        assert record == (info.num_bits, info.num_hashes, 5, info.capacity, info.error_rate, info.count)
        offset += 40
    # Version 2: the table and every slice's bits are zero-padded to 64 bytes.
    for info in f.slices:
        assert payload[offset : _aligned(offset)] == bytes(_aligned(offset) - offset)
        offset = _aligned(offset) + info.nbytes
    assert _aligned(offset) == len(payload)


def _aligned(offset):
    return (offset + 63) // 64 * 64


def test_other_types_are_rejected():
    with pytest.raises(ValueError, match="data holds a ScalableBloomFilter, not a BloomFilter"):
        BloomFilter.from_bytes(ScalableBloomFilter(10).to_bytes())
    with pytest.raises(ValueError, match="data holds a BloomFilter, not a ScalableBloomFilter"):
        ScalableBloomFilter.from_bytes(BloomFilter(10).to_bytes())


def _chain_frame(edit_params=None, edit_records=None, bits_extra=b""):
    """A valid-checksum frame of a 3-slice classic filter with edited fields."""
    f = grown(10, 60, layout="classic")
    assert f.num_slices == 3
    _, params, payload = split_frame(f.to_bytes())
    fields = list(struct.unpack(PARAMS_FORMAT, params))
    records = [list(struct.unpack_from(SLICE_FORMAT, payload, 40 * i)) for i in range(3)]
    bits = payload[128:]  # after the 120-byte table and its padding to 64 bytes
    if edit_params:
        edit_params(fields)
    if edit_records:
        edit_records(records)
    table = b"".join(struct.pack(SLICE_FORMAT, *record) for record in records)
    table += bytes(_aligned(len(table)) - len(table))
    return make_frame(3, struct.pack(PARAMS_FORMAT, *fields), table + bits + bits_extra)


def test_untouched_chain_frame_loads():
    assert ScalableBloomFilter.from_bytes(_chain_frame()) == grown(10, 60, layout="classic")


@pytest.mark.parametrize(
    "edit_params, edit_records, message",
    [
        (lambda p: p.__setitem__(5, 0), None, "num_slices must be at least 1"),
        (lambda p: p.__setitem__(5, 2**31), None, "num_slices 2147483648 exceeds the limit of 1024 slices"),
        (lambda p: p.__setitem__(5, 1024), None, "too short for 1024 slice records"),
        (lambda p: p.__setitem__(5, 2), None, "payload holds .* bytes of bits but the slices need"),
        (lambda p: p.__setitem__(0, 0), None, r"initial_capacity must be in \[1, 2\*\*63\)"),
        (lambda p: p.__setitem__(1, 1.0), None, "error_rate must be in"),
        (lambda p: p.__setitem__(2, 1.0), None, "growth must be a finite number > 1"),
        (lambda p: p.__setitem__(2, float("inf")), None, "growth must be a finite number > 1"),
        (lambda p: p.__setitem__(3, 0.0), None, r"tightening must be in \(0, 1\)"),
        (lambda p: p.__setitem__(4, 1), None, "slice 0: seed 0 differs from the filter's 1"),
        (None, lambda r: r[1].__setitem__(3, 21), "slice 1: capacity/error_rate do not follow"),
        (None, lambda r: r[2].__setitem__(4, 0.5), "slice 2: capacity/error_rate do not follow"),
        (None, lambda r: r[2].__setitem__(5, 41), "slice 2: count 41 exceeds its capacity 40"),
        (None, lambda r: r[0].__setitem__(5, 9), "slice 0: a slice before the newest must be full"),
        (None, lambda r: r[1].__setitem__(1, 65), "num_hashes must be in"),
        (None, lambda r: r[1].__setitem__(0, 2**60), "slice 1: num_bits 1152921504606846976 needs more bytes"),
        (None, lambda r: r[2].__setitem__(0, 64), "bytes of bits but the slices need"),
    ],
)
def test_stored_chain_is_validated(edit_params, edit_records, message):
    with pytest.raises(ValueError, match=message):
        ScalableBloomFilter.from_bytes(_chain_frame(edit_params, edit_records))


def test_trailing_bits_are_rejected():
    with pytest.raises(ValueError, match="bytes of bits but the slices need"):
        ScalableBloomFilter.from_bytes(_chain_frame(bits_extra=b"\0" * 8))


# ------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(initial_capacity=0), ValueError, "initial_capacity must be a positive integer, got 0"),
        (dict(initial_capacity=-3), ValueError, "initial_capacity must be a positive integer, got -3"),
        (dict(initial_capacity=2.5), ValueError, "initial_capacity must be a positive integer, got 2.5"),
        (dict(initial_capacity="1000"), TypeError, "initial_capacity must be a positive integer, got str"),
        (dict(initial_capacity=True), TypeError, "initial_capacity must be a positive integer, got bool"),
        (dict(error_rate=0), ValueError, r"error_rate must be in \(0, 1\) exclusive, got 0.0"),
        (dict(error_rate=1.5), ValueError, r"error_rate must be in \(0, 1\) exclusive, got 1.5"),
        (dict(error_rate=None), TypeError, "error_rate must be a float"),
        (
            dict(error_rate=1e-30, layout="classic"),
            ValueError,
            "error_rate 1.5e-31 needs about 102 hash functions; at most 64",
        ),
        (
            dict(error_rate=1e-30, layout="split_block"),
            ValueError,
            r"capacity 1,000 at error_rate [\d.e-]+ needs more than 2\*\*62 bits in the split_block layout",
        ),
        # The default layout is chosen against the classic size, which is refused first.
        (dict(error_rate=1e-30), ValueError, r"error_rate 1.5[\d]*e-31 needs 102 hash functions; at most 64"),
        (dict(growth=1), ValueError, r"growth must be a finite number > 1 \(2 or 4 are usual\), got 1.0"),
        (dict(growth=0.5), ValueError, "growth must be a finite number > 1"),
        (dict(growth=float("nan")), ValueError, "growth must be a finite number > 1"),
        (dict(growth=float("inf")), ValueError, "growth must be a finite number > 1"),
        (dict(growth="2"), TypeError, "growth must be a number > 1, got str"),
        (dict(growth=True), TypeError, "growth must be a number > 1, got bool"),
        (dict(tightening=0), ValueError, r"tightening must be in \(0, 1\) exclusive, got 0.0"),
        (dict(tightening=1), ValueError, r"tightening must be in \(0, 1\) exclusive, got 1.0"),
        (dict(tightening="0.9"), TypeError, "tightening must be a float"),
        (dict(seed=-1), ValueError, r"seed must be in \[0, 2\*\*32\), got -1"),
        (dict(seed=2**32), ValueError, "seed must be in"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        ScalableBloomFilter(**kwargs)


def test_growth_and_tightening_are_keyword_only():
    with pytest.raises(TypeError):
        ScalableBloomFilter(1000, 0.01, 2)
