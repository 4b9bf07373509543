"""MurmurHash3_x64_128 written here must equal the reference (mmh3) everywhere."""

import mmh3
import numpy as np
import pytest

import bloomkit

SEEDS = [0, 1, 42, 2**31 - 1, 2**31, 2**32 - 1]


def test_hash128_matches_mmh3_on_10000_keys_of_every_length_and_seed():
    rng = np.random.default_rng(2026)
    checked = 0
    for seed in SEEDS:
        for i in range(2000):
            length = i % 201  # every length 0..200, ten times per seed
            key = rng.integers(0, 256, size=length, dtype=np.uint8).tobytes()
            assert bloomkit.hash128(key, seed) == mmh3.hash128(key, seed, signed=False), (length, seed)
            checked += 1
    assert checked >= 10_000


@pytest.mark.parametrize("seed", SEEDS)
def test_hash128_of_str_and_int_uses_canonical_bytes(seed):
    for text in ["", "a", "é", "naïve café", "日本語テキスト", "🙂" * 17, "x" * 199]:
        assert bloomkit.hash128(text, seed) == mmh3.hash128(text.encode("utf-8"), seed, signed=False)
    for value in [0, 1, 5, 255, 2**32, 2**63 - 1, 2**63, 2**64 - 1, -1, -5, -(2**63)]:
        le = (value % 2**64).to_bytes(8, "little")
        assert bloomkit.hash128(value, seed) == mmh3.hash128(le, seed, signed=False)


def test_integer_fast_path_equals_byte_path_on_random_values():
    rng = np.random.default_rng(7)
    for value in rng.integers(0, 2**64 - 1, size=2000, dtype=np.uint64):
        value = int(value)
        for seed in (0, 2**32 - 1):
            assert bloomkit.hash128(value, seed) == bloomkit.hash128(value.to_bytes(8, "little"), seed)


def test_canonical_bytes_table():
    assert bloomkit.canonical_bytes("é") == "é".encode()
    assert bloomkit.canonical_bytes(b"\x00ab") == b"\x00ab"
    assert bloomkit.canonical_bytes(bytearray(b"xy")) == b"xy"
    assert bloomkit.canonical_bytes(memoryview(b"xyz")) == b"xyz"
    assert bloomkit.canonical_bytes(5) == (5).to_bytes(8, "little")
    assert bloomkit.canonical_bytes(-1) == b"\xff" * 8
    assert bloomkit.canonical_bytes(np.int8(-1)) == b"\xff" * 8
    assert bloomkit.canonical_bytes(np.uint64(2**64 - 1)) == b"\xff" * 8
    assert bloomkit.canonical_bytes(np.str_("é")) == "é".encode()
    assert bloomkit.canonical_bytes(np.bytes_(b"ab")) == b"ab"


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (2**32, ValueError), (1.0, TypeError), (True, TypeError)])
def test_hash128_rejects_bad_seed(seed, error):
    with pytest.raises(error, match="seed"):
        bloomkit.hash128("x", seed)


def test_single_key_fast_paths_equal_the_canonical_bytes():
    # hash_key() hashes exact ints and compact ASCII str directly; every
    # other key (str subclasses, non-ASCII, ints from 2**63) takes the general
    # path. Both must give the digest of canonical_bytes().
    class Text(str):
        pass

    rng = np.random.default_rng(3)
    texts = ["".join(chr(c) for c in rng.integers(32, 127, size=length)) for length in range(0, 70)]
    for text in texts + [Text("abc"), "é" + "a" * 20]:
        assert bloomkit.hash128(text, 9) == mmh3.hash128(str(text).encode("utf-8"), 9, signed=False)
    for value in [2**63 - 2, 2**63 - 1, 2**63, 2**63 + 1, -(2**63), -(2**63) + 1]:
        le = (value % 2**64).to_bytes(8, "little")
        assert bloomkit.hash128(value, 9) == mmh3.hash128(le, 9, signed=False)
        f = bloomkit.BloomFilter(100, 0.01)
        f.add(value)
        assert value in f and f.contains_many([value]).all()


def test_exact_int_digit_boundaries_hash_like_their_bytes():
    # hash_key reads an exact int's 30-bit digits directly (CPython 3.9-3.11):
    # every digit count, sign and both ends of [-2**63, 2**64) against mmh3.
    values = [0, 2**90, -(2**90)]
    for bits in range(1, 66):
        for v in (2**bits - 1, 2**bits, 2**bits + 1):
            values += [v, -v]
    f = bloomkit.BloomFilter(1000, 0.01)
    inside = 0
    for value in values:
        if -(2**63) <= value < 2**64:
            le = (value % 2**64).to_bytes(8, "little")
            assert bloomkit.hash128(value, 9) == mmh3.hash128(le, 9, signed=False), value
            f.add(value)
            assert value in f
            inside += 1
        else:
            with pytest.raises(ValueError, match=r"^key is an int outside \[-2\*\*63, 2\*\*64\)"):
                bloomkit.hash128(value, 9)
            with pytest.raises(ValueError, match=r"^key is an int outside \[-2\*\*63, 2\*\*64\)"):
                f.add(value)
    # Outside: 2**64, 2**64 + 1, 2**65 - 1 .. 2**65 + 1, their negatives, -(2**63 + 1), +-(2**90).
    assert len(values) - inside == 14
    # Exact values, not Python's hash(): these two are one key to hash().
    assert hash(12345) == hash(12345 + 2**61 - 1)
    assert bloomkit.hash128(12345) != bloomkit.hash128(12345 + 2**61 - 1)
