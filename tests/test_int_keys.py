"""The fast read of an int key (cpp/bindings/int_key.hpp) against the public one, on every CPython.

Each CPython version gets its own fast read (3.11 reads the digit array,
3.12+ the documented compact-int accessors, 3.13+ also PyLong_AsNativeBytes);
``_core._int_key_paths`` returns what the fast read and the version-independent
public read (PyLong_AsLongLongAndOverflow) give for one int, so a layout
change in a new CPython shows up here as a mismatch, not as wrong bits.
"""

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bloomkit
from bloomkit import _core

LOW, HIGH = -(2**63), 2**64  # the int keys: [-2**63, 2**64), hashed as value mod 2**64

# What each tested CPython compiles, and which ints its fast read covers
# (the rest go to the general key path, which gives the same bytes).
EXPECTED_PATH = {
    (3, 11): ("digits", HIGH),
    (3, 12): ("compact", 2**63),
    (3, 13): ("compact+native_bytes", HIGH),
    (3, 14): ("compact+native_bytes", HIGH),
    (3, 15): ("compact+native_bytes", HIGH),
}


def boundary_ints():
    """Every power of two up to 2**70 and its neighbours, both signs: the digit (2**30) and word edges."""
    values = {0}
    for k in range(71):
        for v in (2**k - 1, 2**k, 2**k + 1):
            values.update((v, -v))
    return sorted(values)


def test_the_fast_read_is_the_one_documented_for_this_cpython():
    path, _ = EXPECTED_PATH.get(sys.version_info[:2], ("public", 2**63))
    assert _core._INT_FAST_PATH == path


@pytest.mark.parametrize("value", boundary_ints())
def test_fast_and_public_reads_agree_at_every_digit_and_word_boundary(value):
    fast, public = _core._int_key_paths(value)
    _, fast_high = EXPECTED_PATH.get(sys.version_info[:2], ("public", 2**63))
    in_range = LOW <= value < HIGH
    # The public read covers exactly [-2**63, 2**63).
    assert public == (value % 2**64 if LOW <= value < 2**63 else None)
    # The fast read covers [-2**63, fast_high) on this version, and nothing outside [-2**63, 2**64).
    assert fast == (value % 2**64 if LOW <= value < fast_high else None)
    if in_range:
        expected = bloomkit.hash128((value % 2**64).to_bytes(8, "little"))
        assert bloomkit.hash128(value) == expected
    else:
        with pytest.raises(ValueError, match=r"is an int outside \[-2\*\*63, 2\*\*64\)"):
            bloomkit.hash128(value)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_fast_and_public_reads_agree_on_random_ints(value):
    fast, public = _core._int_key_paths(value)
    if fast is not None:
        assert LOW <= value < HIGH and fast == value % 2**64
    if public is not None:
        assert fast == public


def test_a_filter_finds_int_keys_read_by_either_path():
    keys = [v for v in boundary_ints() if LOW <= v < HIGH]
    f = bloomkit.BloomFilter(capacity=10_000, error_rate=1e-6)
    for v in keys:
        f.add(v)
    # The same keys as their 8 little-endian bytes: the bytes path, no int read at all.
    assert all((v % 2**64).to_bytes(8, "little") in f for v in keys)
    assert f.contains_many(keys).all()
    assert len(keys) > 300  # both signs, every digit and word edge up to 2**64


def test_int_key_paths_refuses_what_is_not_an_exact_int():
    with pytest.raises(TypeError, match="exact int"):
        _core._int_key_paths(True)
    with pytest.raises(TypeError, match="exact int"):
        _core._int_key_paths(1.0)
