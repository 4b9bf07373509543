"""Property-based checks (hypothesis) of hashing and key normalisation; the filter properties are in test_contract.py."""

import mmh3
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from bloomkit import BloomFilter

keys = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
)


def canonical(key):
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, int):
        return (key % 2**64).to_bytes(8, "little")
    return bytes(key)


@settings(max_examples=200, deadline=None)
@given(key=keys, seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_hash128_equals_reference_for_any_key(key, seed):
    text_ok = not isinstance(key, str) or all(not 0xD800 <= ord(c) <= 0xDFFF for c in key)
    if text_ok:
        assert bloomkit.hash128(key, seed) == mmh3.hash128(canonical(key), seed, signed=False)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=50))
def test_int64_arrays_equal_python_ints(values):
    a, b = BloomFilter(200, 0.01), BloomFilter(200, 0.01)
    a.update(values)
    b.update(np.array(values, dtype=np.int64))
    assert a == b
