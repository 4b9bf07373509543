"""Keyed hashing (secret_key=): SipHash-2-4-128 and keyed filters (docs/RELIABILITY.md)."""

import hashlib
import pickle
from pathlib import Path

import numpy as np
import pytest

import bloomkit
from bloomkit import BloomFilter, CountingBloomFilter, SecretKeyError, _core
from support import FILTER_CASES, fmix64

VECTORS = Path(__file__).parent / "vectors" / "siphash-2-4-128.txt"


def reference_vectors() -> list[bytes]:
    lines = VECTORS.read_text().splitlines()
    return [bytes.fromhex(line) for line in lines if line and not line.startswith("#")]


def test_siphash128_matches_all_64_reference_vectors():
    vectors = reference_vectors()
    assert len(vectors) == 64
    key = bytes(range(16))
    message = bytes(range(64))
    for length, expected in enumerate(vectors):
        got = _core.siphash128(key, message[:length]).to_bytes(16, "little")
        assert got == expected, length


def test_siphash128_rejects_a_key_that_is_not_16_bytes():
    with pytest.raises(ValueError, match="a SipHash key is 16 bytes, got 15"):
        _core.siphash128(bytes(15), b"x")


# ------------------------------------------------------------ keyed filters

SECRET = bytes(range(100, 132))
OTHER = bytes(range(200, 232))


def _holding(case):
    def holding(*batches, secret_key=None):
        """A filter of ``case`` holding the keys of ``batches``: updated batch by batch, or built from them all."""
        if case.row.mutable:
            f = case.make(5000, 0.01, 9, secret_key=secret_key)
            for batch in batches:
                f.update(batch)
            return f
        return case.build([key for batch in batches for key in batch], 5000, 0.01, 9, secret_key=secret_key)

    return holding


# Every keyed row of the registry (secret_key=), in every variant (a growable
# row starts at a sixteenth of 5000 and grows; a frozen one is built from the keys).
FACTORIES = {case.name: _holding(case) for case in FILTER_CASES if case.row.keyed}


def documented_digest(secret: bytes, seed: int, key) -> tuple[int, int]:
    """The keyed digest as docs/RELIABILITY.md defines it, computed from Python."""
    master = hashlib.blake2b(secret, digest_size=16, person=b"bloomkit.key.v1").digest()
    seed_key = _core.siphash128(master, b"bloomkit seed" + seed.to_bytes(4, "little")).to_bytes(16, "little")
    digest = _core.siphash128(seed_key, bloomkit.canonical_bytes(key))
    return digest & (2**64 - 1), digest >> 64


def test_keyed_positions_follow_the_documented_derivation():
    salts = [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31]
    f = BloomFilter.from_params(256 * 1009, 8, layout="split_block", seed=77, secret_key=SECRET)
    plain = BloomFilter.from_params(256 * 1009, 8, layout="split_block", seed=77)
    for key in ["a", "hello", 12345, -1, 5.0, b"\x00" * 20, "日本"]:
        h1, h2 = documented_digest(SECRET, 77, key)
        block = h1 * (f.num_bits // 256) >> 64
        low = fmix64(h2) & 0xFFFFFFFF
        expected = [256 * block + 32 * i + (((low * salts[i]) & 0xFFFFFFFF) >> 27) for i in range(8)]
        assert f._positions_many([key]).tolist() == [expected]
        assert plain._positions_many([key]).tolist() != [expected]


@pytest.mark.parametrize("kind", FACTORIES)
def test_keyed_filter_has_no_false_negatives_for_every_batch_input(kind):
    ints = np.random.default_rng(1).integers(0, 2**53, size=3000, dtype=np.int64)  # exact as float64
    words = [f"https://example.com/{i}" for i in range(1500)]
    f = FACTORIES[kind](ints, words, secret_key=SECRET)
    # The same keys through every other path: scalars, lists, NumPy U arrays, floats.
    assert f.contains_many(ints).all()
    assert f.contains_many(ints.astype(np.float64)).all()  # 5.0 is the key 5
    assert f.contains_many(list(ints[:500])).all()
    assert f.contains_many(np.array(words)).all()
    assert f.contains_many([w.encode() for w in words]).all()
    assert all(int(k) in f for k in ints[:300])
    assert all(w in f for w in words[:300])


@pytest.mark.parametrize("kind", FACTORIES)
def test_keyed_frames_round_trip_and_need_the_same_key(kind, tmp_path):
    f = FACTORIES[kind](range(2000), secret_key=SECRET)
    plain = FACTORIES[kind](range(2000))
    data = f.to_bytes()
    assert (
        SECRET not in data and hashlib.blake2b(SECRET, digest_size=16, person=b"bloomkit.key.v1").digest() not in data
    )
    assert data != plain.to_bytes()
    again = type(f).from_bytes(data, secret_key=SECRET)
    assert again == f and again.keyed and again.to_bytes() == data
    assert all(k in again for k in range(2000))
    path = tmp_path / "keyed.bkf"
    f.save(path)
    assert bloomkit.load(path, secret_key=SECRET) == f
    assert type(f).load(path, secret_key=SECRET) == f
    with pytest.raises(SecretKeyError, match="built with a secret_key; pass the same secret_key to load it"):
        bloomkit.load(path)
    with pytest.raises(SecretKeyError, match="wrong secret_key: it does not match"):
        type(f).from_bytes(data, secret_key=OTHER)
    with pytest.raises(SecretKeyError, match="built without a secret_key; load it without one"):
        type(f).from_bytes(plain.to_bytes(), secret_key=SECRET)
    assert issubclass(SecretKeyError, ValueError)


@pytest.mark.parametrize("kind", FACTORIES)
def test_keyed_filters_refuse_pickling_and_copy_keeps_the_key(kind):
    f = FACTORIES[kind](range(100), secret_key=SECRET)
    for protocol in (2, 5):
        with pytest.raises(TypeError, match="cannot pickle a keyed .*secret_key is never serialized"):
            pickle.dumps(f, protocol=protocol)
    copy = f.copy()
    assert copy.keyed and copy == f and copy.to_bytes() == f.to_bytes()
    # Unkeyed filters still pickle.
    plain = FACTORIES[kind](range(100))
    assert pickle.loads(pickle.dumps(plain, protocol=5)) == plain


def test_keyed_and_unkeyed_filters_never_combine_or_compare_equal():
    a = BloomFilter(1000, layout="classic", secret_key=SECRET)
    b = BloomFilter(1000, layout="classic", secret_key=OTHER)
    plain = BloomFilter(1000, layout="classic")
    same = BloomFilter(1000, layout="classic", secret_key=SECRET)
    assert a != plain and a != b and a == same
    for other, message in [(plain, "same secret_key, or neither"), (b, "needs filters with the same secret_key")]:
        with pytest.raises(SecretKeyError, match=message):
            a | other
        with pytest.raises(SecretKeyError, match=message):
            a & other
    a.add("x")
    same.add("y")
    assert "x" in (a | same) and "y" in (a | same)
    c = CountingBloomFilter(100, secret_key=SECRET)
    with pytest.raises(SecretKeyError):
        c | CountingBloomFilter(100)


def test_counting_to_bloom_stays_keyed():
    c = CountingBloomFilter(1000, secret_key=SECRET)
    c.update(range(500))
    b = c.to_bloom()
    assert b.keyed and all(k in b for k in range(500))


@pytest.mark.parametrize(
    ("secret", "error", "message"),
    [
        ("a string of 32 characters long!!", TypeError, "secret_key must be bytes"),
        (12345, TypeError, "secret_key must be bytes"),
        (b"short", ValueError, "at least 16 bytes .* got 5"),
    ],
)
def test_bad_secret_keys_are_refused_before_anything_is_built(secret, error, message):
    for factory in FACTORIES.values():
        with pytest.raises(error, match=message):
            factory(secret_key=secret)
    with pytest.raises(error, match=message):
        BloomFilter.from_bytes(BloomFilter(10).to_bytes(), secret_key=secret)


def test_spark_hashing_rejects_secret_key():
    with pytest.raises(ValueError, match="secret_key is not supported with hashing='spark'"):
        BloomFilter(1000, hashing="spark", secret_key=SECRET)


def test_keyed_file_cannot_be_mapped(tmp_path):
    path = tmp_path / "k.bkf"
    BloomFilter(1000, layout="blocked512", secret_key=SECRET).save(path)
    with pytest.raises(ValueError, match="keyed filter .*cannot be opened as a file-backed filter"):
        BloomFilter.open(path)
    rotating = tmp_path / "r.bkf"
    bloomkit.RotatingBloomFilter(1000, window="1h", secret_key=SECRET).save(rotating)
    before = rotating.read_bytes()
    with pytest.raises(ValueError, match="keyed filter .*cannot be opened as a file-backed filter"):
        bloomkit.RotatingBloomFilter.open(rotating, "r+")
    assert rotating.read_bytes() == before


def test_keyed_row_keys_match_between_keyed_filters_and_differ_from_unkeyed():
    rows = _core.RowBatch([np.array([1, 2, 3, 1]), ["x", "y", "z", "x"]], ["a", "b"])
    f = BloomFilter(100, layout="classic", secret_key=SECRET)
    assert f.add_many(rows).tolist() == [False, False, False, True]
    same = BloomFilter(100, layout="classic", secret_key=SECRET)
    same.update(rows)
    g = BloomFilter(100, layout="classic")
    g.update(rows)
    assert same == f and f.to_bytes() != g.to_bytes()
