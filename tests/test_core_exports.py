"""Facts the C++ core exports for the Python layer: the framed type list
(bloomkit/filter_types.hpp), the hash-count limit and the counter widths
(bloomkit/sizing.hpp)."""

import struct

import pytest

import bloomkit
from bloomkit import BloomFilter, CountingBloomFilter, _core


def header(tag):
    """A version-2 frame header with type tag ``tag`` and empty params and payload, plus a checksum's room."""
    return struct.pack("<8sHHIQ", b"\x89BKF\r\n\x1a\n", 2, tag, 0, 0) + bytes(8)


def test_filter_types_are_name_tag_pairs_in_tag_order():
    types = _core.filter_types()
    assert isinstance(types, tuple) and len(types) >= 4
    assert types[:4] == (
        ("BloomFilter", 1),
        ("CountingBloomFilter", 2),
        ("ScalableBloomFilter", 3),
        ("CuckooFilter", 4),
    )
    tags = [tag for _, tag in types]
    assert tags == sorted(set(tags)) and 0 < tags[0] and tags[-1] <= 0x3FFF
    for name, _ in types:
        assert isinstance(getattr(bloomkit, name), type)


def test_the_header_reads_exactly_the_listed_tags():
    listed = {tag for _, tag in _core.filter_types()}
    for tag in sorted(listed):
        assert _core.peek_type(header(tag)) == tag
    for tag in (0, max(listed) + 1, 7, 0x3FFF):
        if tag in listed:
            continue
        with pytest.raises(ValueError, match=f"^unknown filter type tag {tag}$"):
            _core.peek_type(header(tag))


def test_each_listed_type_writes_its_tag():
    names = dict(_core.filter_types())
    assert _core.peek_type(BloomFilter(100).to_bytes()) == names["BloomFilter"]
    assert _core.peek_type(CountingBloomFilter(100).to_bytes()) == names["CountingBloomFilter"]
    assert _core.peek_type(bloomkit.ScalableBloomFilter(100).to_bytes()) == names["ScalableBloomFilter"]
    assert _core.peek_type(bloomkit.CuckooFilter(100).to_bytes()) == names["CuckooFilter"]


def test_max_hashes_is_the_limit_filters_enforce():
    assert _core.MAX_HASHES == _core.LIMITS["max_hashes"] == 64
    assert BloomFilter.from_params(4096, _core.MAX_HASHES).num_hashes == _core.MAX_HASHES
    with pytest.raises(ValueError, match=f"got {_core.MAX_HASHES + 1}$"):
        BloomFilter.from_params(4096, _core.MAX_HASHES + 1)


def test_counter_widths_are_the_widths_counting_filters_take():
    assert _core.COUNTER_WIDTHS == _core.LIMITS["counter_widths"] == (4, 8, 16)
    assert _core.DEFAULT_COUNTER_BITS in _core.COUNTER_WIDTHS
    assert CountingBloomFilter(100).counter_bits == _core.DEFAULT_COUNTER_BITS
    for width in _core.COUNTER_WIDTHS:
        f = CountingBloomFilter(100, counter_bits=width)
        f.add("k")
        assert f.counter_bits == width and f.count("k") == 1
    for width in sorted(set(range(0, 33)) - set(_core.COUNTER_WIDTHS))[:6]:
        with pytest.raises(ValueError, match=f"counter_bits must be 4, 8 or 16, got {width}$"):
            CountingBloomFilter(100, counter_bits=width)


def test_every_core_type_is_a_framed_row_of_the_registry():
    from bloomkit import _types

    assert {row.tag for row in _types.FRAMED} == {tag for _, tag in _core.filter_types()}
