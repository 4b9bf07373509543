"""CountingBloomFilter: Bloom geometry, removal, saturation, union, format."""

from __future__ import annotations

import collections
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomkit import BloomFilter, CountingBloomFilter
from support import (
    disjoint_random_u64,
    fpr_upper_bound,
    make_frame,
    random_strings,
    split_frame,
)


def filled(keys, capacity=1000, error_rate=0.01, **kwargs):
    f = CountingBloomFilter(capacity, error_rate, **kwargs)
    f.update(keys)
    return f


# ----------------------------------------------------------------- geometry


@pytest.mark.parametrize("capacity, error_rate", [(1000, 0.01), (12345, 0.001), (10, 0.3), (1, 0.5)])
def test_geometry_is_the_bloom_filters(capacity, error_rate):
    c = CountingBloomFilter(capacity, error_rate, seed=9)
    b = BloomFilter(capacity, error_rate, seed=9, layout="classic")
    assert (c.num_bits, c.num_hashes, c.capacity, c.error_rate, c.seed) == (
        b.num_bits,
        b.num_hashes,
        b.capacity,
        b.error_rate,
        b.seed,
    )
    assert c.counter_bits == 4


@pytest.mark.parametrize("counter_bits", [4, 8, 16])
def test_nbytes_is_packed_counters(counter_bits):
    c = CountingBloomFilter(1000, 0.01, counter_bits=counter_bits)
    assert c.num_bits == 9586
    assert c.counter_bits == counter_bits
    assert c.nbytes == 8 * math.ceil(9586 * counter_bits / 64)
    # The documented memory per key: -ln p / (ln 2)^2 counters per key.
    assert c.nbytes / 1000 == pytest.approx(-math.log(0.01) / math.log(2) ** 2 * counter_bits / 8, rel=0.01)


# ------------------------------------------------------------ membership


def test_add_reports_previous_presence():
    f = CountingBloomFilter(1000)
    assert f.add("x") is False
    assert f.add("x") is True
    assert "x" in f and f.contains("x")
    assert "y" not in f
    result = f.add_many(["a", "a", "b", "x"])
    assert result.dtype == np.bool_
    assert result.tolist() == [False, True, False, True]
    f.update(["c"])
    assert f.contains_many(["a", "b", "c", "x", "zz"]).tolist() == [True, True, True, True, False]


def test_int_and_str_keys_follow_the_key_table():
    f = CountingBloomFilter(1000)
    f.add(5)
    assert np.int32(5) in f and np.uint64(5) in f
    f.add("é")
    assert "é".encode() in f


@pytest.mark.statistical
def test_no_false_negatives_and_fpr_within_bound():
    present, absent = disjoint_random_u64(100_000, 200_000, seed=11)
    f = CountingBloomFilter(100_000, 0.01, seed=3)
    assert not f.add_many(present[:10]).any()
    f.update(present[10:])
    assert f.contains_many(present).all()
    measured = f.contains_many(absent).mean()
    assert measured <= fpr_upper_bound(0.01, len(absent))
    assert f.estimated_fpr() == pytest.approx(0.01, rel=0.1)


# -------------------------------------------------------------- to_bloom


def test_to_bloom_equals_bloom_filter_built_from_the_same_keys():
    keys = random_strings(20_000, seed=1) + list(range(5000))
    c = filled(keys, 25_000, 0.001, seed=77)
    b = BloomFilter(25_000, 0.001, seed=77, layout="classic")
    b.update(keys)
    plain = c.to_bloom()
    assert type(plain) is BloomFilter
    assert plain == b
    assert plain.to_bytes() == b.to_bytes()
    assert c.fill_ratio == b.fill_ratio
    assert len(c) == len(b)


def test_removed_keys_vanish_from_to_bloom():
    kept = random_strings(5000, seed=2)
    removed = random_strings(5000, seed=3)
    c = filled(kept + removed, 10_000, 0.01, seed=1)
    c.remove_many(removed)
    b = BloomFilter(10_000, 0.01, seed=1, layout="classic")
    b.update(kept)
    assert c.to_bloom().to_bytes() == b.to_bytes()


# ---------------------------------------------------------- count / remove


def test_count_is_min_counter_and_saturates():
    f = CountingBloomFilter(1000)
    assert f.count("k") == 0
    for expected in range(1, 4):
        f.add("k")
        assert f.count("k") == expected
    f.update(["k"] * 50)
    assert f.count("k") == 15
    for counter_bits, maximum in [(8, 255), (16, 65535)]:
        g = CountingBloomFilter(1000, counter_bits=counter_bits)
        g.update(["k"] * (maximum + 1000))
        assert g.count("k") == maximum


def test_remove_and_discard():
    f = filled(["a", "b"])
    f.add("a")
    f.remove("a")
    assert "a" in f and f.count("a") == 1
    f.remove("a")
    assert "a" not in f and "b" in f
    before = f.to_bytes()
    with pytest.raises(KeyError) as raised:
        f.remove("a")
    assert raised.value.args == ("a",)
    assert f.to_bytes() == before
    assert f.discard("a") is False
    assert f.to_bytes() == before
    assert f.discard("b") is True
    assert "b" not in f
    assert f.to_bytes() == CountingBloomFilter(1000).to_bytes()


def test_remove_of_definitely_absent_key_changes_nothing():
    f = filled(random_strings(500, seed=8))
    before = f.to_bytes()
    misses = [k for k in random_strings(2000, seed=9) if k not in f]
    assert len(misses) > 1900
    for key in misses:
        with pytest.raises(KeyError):
            f.remove(key)
        assert f.discard(key) is False
    assert f.to_bytes() == before


def test_remove_many_all_present():
    keys = random_strings(1000, seed=4)
    f = filled(keys, 2000)
    assert f.remove_many(keys[:600]) is None
    assert not f.contains_many(keys[:600]).any()
    assert f.contains_many(keys[600:]).all()
    g = filled(keys[600:], 2000)
    assert f == g


def test_remove_many_rejects_absent_key_atomically():
    keys = random_strings(100, seed=6)
    f = filled(keys)
    before = f.to_bytes()
    with pytest.raises(KeyError, match=r"key at index 3 is not in the filter; nothing was removed"):
        f.remove_many(keys[:3] + ["never added"] + keys[3:10])
    assert f.to_bytes() == before


def test_remove_many_is_sequential_repeats_count():
    f = filled(["a", "b"])
    before = f.to_bytes()
    # "a" was added once: its second removal in the batch finds it absent.
    with pytest.raises(KeyError, match="key at index 2 "):
        f.remove_many(["a", "b", "a"])
    assert f.to_bytes() == before
    f.add("a")
    f.remove_many(["a", "a"])
    assert "a" not in f and "b" in f


def test_remove_many_numpy_and_arrow_inputs():
    pa = pytest.importorskip("pyarrow")
    present = np.arange(1000, dtype=np.uint64)
    f = filled(present, 2000)
    f.remove_many(present[:500].astype(np.int32))
    assert not f.contains_many(present[:500]).any()
    strings = random_strings(300, seed=12)
    g = filled(strings, 2000)
    before = g.to_bytes()
    chunked = pa.chunked_array([strings[:100], strings[100:200] + ["absent"] + strings[200:250]])
    with pytest.raises(KeyError, match="key at index 200 "):
        g.remove_many(chunked)
    assert g.to_bytes() == before
    g.remove_many(pa.chunked_array([strings[:150], strings[150:]]))
    assert g.to_bytes() == CountingBloomFilter(2000).to_bytes()


def test_saturated_counters_never_cause_false_negatives():
    others, _ = disjoint_random_u64(100_000, 0, seed=21)
    f = CountingBloomFilter(100_000, 0.01)
    f.update(others)
    hot = "hot key"
    f.update([hot] * 1000)
    assert f.count(hot) == 15  # every counter of the hot key is saturated
    f.remove_many([hot] * 500)
    for _ in range(500):
        f.remove(hot)
    # Saturated counters were never decremented: nothing shared with the
    # hot key dropped to zero.
    assert f.contains_many(others).all()
    assert f.count(hot) == 15


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "remove", "add_many", "remove_many"]), st.integers(0, 9)),
        min_size=50,
        max_size=400,
    )
)
def test_random_add_remove_sequences_never_lose_a_present_key(operations):
    # A tiny 4-bit filter, so counters are shared and saturate often.
    f = CountingBloomFilter(8, 0.2, counter_bits=4)
    model = collections.Counter()
    for op, key in operations:
        if op == "add":
            f.add(key)
            model[key] += 1
        elif op == "add_many":
            f.add_many([key, key + 1])
            model[key] += 1
            model[key + 1] += 1
        elif model[key] > 0:  # only remove keys that are in the multiset
            if op == "remove":
                f.remove(key)
            else:
                f.remove_many([key])
            model[key] -= 1
    for key, multiplicity in model.items():
        if multiplicity > 0:
            assert key in f
            # Each counter holds at least the sum it should, unless saturated.
            assert f.count(key) >= min(multiplicity, 15)


# ------------------------------------------------------------------ union


def test_union_adds_counters():
    a = filled(["x", "only a"])
    b = filled(["x", "only b"])
    a_bytes, b_bytes = a.to_bytes(), b.to_bytes()
    u = a | b
    assert a.to_bytes() == a_bytes and b.to_bytes() == b_bytes
    assert u.count("x") == 2
    assert u.contains_many(["only a", "only b"]).all()
    u.remove("x")
    assert "x" in u
    assert a.union(b) == u.union(filled(["x"]))
    a |= b
    assert a == u.union(filled(["x"]))
    assert type(u) is CountingBloomFilter


def test_union_saturates():
    a = filled(["x"] * 10)
    b = filled(["x"] * 10)
    assert (a | b).count("x") == 15
    a8 = filled(["x"] * 200, counter_bits=8)
    assert (a8 | a8).count("x") == 255


@pytest.mark.parametrize(
    "other",
    [
        lambda: CountingBloomFilter(1001),
        lambda: CountingBloomFilter(1000, 0.02),
        lambda: CountingBloomFilter(1000, seed=1),
        lambda: CountingBloomFilter(1000, counter_bits=8),
    ],
)
def test_union_of_incompatible_filters_is_value_error(other):
    a = filled(["x"])
    before = a.to_bytes()
    with pytest.raises(
        ValueError, match="union needs counting filters with equal num_bits, num_hashes, seed and counter_bits"
    ):
        a | other()
    with pytest.raises(ValueError, match="union needs counting filters"):
        a |= other()
    assert a.to_bytes() == before


def test_union_with_another_type_is_type_error():
    a = filled(["x"])
    with pytest.raises(TypeError):
        a | BloomFilter(1000)
    with pytest.raises(TypeError, match="union needs another CountingBloomFilter, got BloomFilter"):
        a |= BloomFilter(1000)


# ------------------------------------------------------------- estimates


def test_len_estimates_distinct_keys_after_removals():
    keys = random_strings(10_000, seed=31)
    f = filled(keys, 20_000)
    assert len(f) == pytest.approx(10_000, rel=0.03)
    f.remove_many(keys[:5000])
    assert len(f) == pytest.approx(5000, rel=0.03)
    assert len(CountingBloomFilter(10)) == 0


def test_fill_ratio_and_estimated_fpr():
    f = CountingBloomFilter(1000)
    assert f.fill_ratio == 0.0 and f.estimated_fpr() == 0.0
    f.update(range(1000))
    assert f.fill_ratio == f.to_bloom().fill_ratio
    assert f.estimated_fpr() == f.fill_ratio**f.num_hashes


def test_repr_and_html_show_parameters_fill_count_and_fpr():
    f = filled(range(100), counter_bits=8)
    text = repr(f)
    assert text.startswith(
        "<CountingBloomFilter capacity=1,000 error_rate=0.01 num_bits=9,586 num_hashes=7 counter_bits=8"
    )
    assert "estimated_count=100" in text and "fill_ratio=" in text and "estimated_fpr=" in text
    html = f._repr_html_()
    assert "<table" in html and "counter_bits" in html and "estimated_fpr" in html


# ------------------------------------------------------------ persistence


def test_format_header_params_and_counter_layout():
    for counter_bits in (4, 8, 16):
        f = CountingBloomFilter(50, 0.01, seed=3, counter_bits=counter_bits)
        f.update(["k", "k", "k"])
        type_tag, params, payload = split_frame(f.to_bytes())
        assert type_tag == 2
        assert struct.unpack("<QIIQdII", params) == (f.num_bits, f.num_hashes, 3, 50, 0.01, counter_bits, 0)
        assert len(payload) == 8 * math.ceil(f.num_bits * counter_bits / 64)
        # Counter i sits at bits [i*w, i*w + w) of the little-endian payload.
        as_int = int.from_bytes(payload, "little")
        counters = [(as_int >> (i * counter_bits)) & ((1 << counter_bits) - 1) for i in range(f.num_bits)]
        bloom = BloomFilter(50, 0.01, seed=3, layout="classic")
        bloom.add("k")
        bits = int.from_bytes(split_frame(bloom.to_bytes())[2], "little")
        assert [i for i, c in enumerate(counters) if c] == [i for i in range(f.num_bits) if bits >> i & 1]
        assert set(counters) == {0, 3}


def test_other_types_are_rejected():
    c_blob = filled(["x"]).to_bytes()
    with pytest.raises(ValueError, match="data holds a CountingBloomFilter, not a BloomFilter"):
        BloomFilter.from_bytes(c_blob)
    with pytest.raises(ValueError, match="data holds a BloomFilter, not a CountingBloomFilter"):
        CountingBloomFilter.from_bytes(BloomFilter(100).to_bytes())
    with pytest.raises(TypeError, match="expected a bytes-like object, got 'str'"):
        CountingBloomFilter.from_bytes("not bytes")


def _rebuilt(params_edit=None, payload=None):
    """A valid-checksum frame from a small filter with edited fields."""
    f = filled(["a", "b"], 100)
    _, params, original_payload = split_frame(f.to_bytes())
    fields = list(struct.unpack("<QIIQdII", params))
    if params_edit:
        params_edit(fields)
    return make_frame(2, struct.pack("<QIIQdII", *fields), original_payload if payload is None else payload)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda f: f.__setitem__(5, 5), "counter_bits must be 4, 8 or 16, got 5"),
        (lambda f: f.__setitem__(5, 0), "counter_bits must be 4, 8 or 16, got 0"),
        (lambda f: f.__setitem__(6, 1), "reserved field is not zero"),
        (lambda f: f.__setitem__(1, 0), "num_hashes must be in"),
        (lambda f: f.__setitem__(0, 0), r"num_bits must be in \[1, 2\*\*63\), got 0"),
        (lambda f: f.__setitem__(4, 1.5), "error_rate must be in"),
        (lambda f: f.__setitem__(3, 0), r"capacity must be in \[1, 2\*\*63\), got 0"),
        (lambda f: f.__setitem__(0, 2**63 - 1), "payload is 480 bytes but 9223372036854775807 counters of 4 bits"),
        (lambda f: f.__setitem__(5, 8), "payload is 480 bytes but 959 counters of 8 bits need 960"),
    ],
)
def test_stored_parameters_are_validated(edit, message):
    with pytest.raises(ValueError, match=message):
        CountingBloomFilter.from_bytes(_rebuilt(edit))


def test_payload_padding_and_length_are_validated():
    f = filled(["a"], 100)  # 959 counters: the last word's top nibble is padding
    payload = bytearray(split_frame(f.to_bytes())[2])
    payload[-1] |= 0xF0  # counter 959 does not exist
    with pytest.raises(ValueError, match="counters set beyond num_bits"):
        CountingBloomFilter.from_bytes(_rebuilt(payload=bytes(payload)))
    with pytest.raises(ValueError, match="payload is 472 bytes but 959 counters of 4 bits need 480"):
        CountingBloomFilter.from_bytes(_rebuilt(payload=bytes(payload[:-8])))
    with pytest.raises(ValueError, match="params has 4 unexpected trailing bytes"):
        CountingBloomFilter.from_bytes(make_frame(2, split_frame(f.to_bytes())[1] + b"\0" * 4, bytes(payload)))


# ------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(capacity=0), ValueError, "capacity must be a positive integer, got 0"),
        (dict(capacity=-5), ValueError, "capacity must be a positive integer, got -5"),
        (dict(capacity=1.5), ValueError, "capacity must be a positive integer, got 1.5"),
        (dict(capacity="10"), TypeError, "capacity must be a positive integer, got str"),
        (dict(capacity=True), TypeError, "capacity must be a positive integer, got bool"),
        (dict(capacity=10, error_rate=0), ValueError, r"error_rate must be in \(0, 1\) exclusive, got 0.0"),
        (dict(capacity=10, error_rate=1), ValueError, r"error_rate must be in \(0, 1\) exclusive, got 1.0"),
        (dict(capacity=10, error_rate=float("nan")), ValueError, "error_rate must be in"),
        (dict(capacity=10, error_rate="0.1"), TypeError, "error_rate must be a float"),
        (dict(capacity=10, seed=-1), ValueError, r"seed must be in \[0, 2\*\*32\), got -1"),
        (dict(capacity=10, seed=2**32), ValueError, "seed must be in"),
        (dict(capacity=10, seed=1.0), TypeError, "seed must be an int"),
        (dict(capacity=10, counter_bits=5), ValueError, "counter_bits must be 4, 8 or 16, got 5"),
        (dict(capacity=10, counter_bits=32), ValueError, "counter_bits must be 4, 8 or 16, got 32"),
        (dict(capacity=10, counter_bits=4.0), TypeError, "counter_bits must be an int"),
        (dict(capacity=10, counter_bits=True), TypeError, "counter_bits must be an int"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        CountingBloomFilter(**kwargs)


def test_counter_bits_is_keyword_only():
    with pytest.raises(TypeError):
        CountingBloomFilter(10, 0.01, 0, 8)
