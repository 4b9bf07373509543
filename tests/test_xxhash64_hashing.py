"""hashing="xxhash64": BloomFilters whose keys' digests start as XXH64 (seed 42), as Spark's xxhash64 computes them.

docs/FORMAT.md, "Key hashing": d = XXH64(canonical bytes, 42), then
x = d + seed * 0x9E3779B97F4A7C15, h1 = fmix64(x), h2 = fmix64(x ^ 0xC2B2AE3D27D4EB4F);
every layout places bits from (h1, h2) as for MurmurHash3. The digests the
JVM computes are checked in tests/test_spark.py.
"""

from __future__ import annotations

import pickle
import struct

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xxhash

import bloomkit
from bloomkit import BloomFilter
from support import fmix64

MASK = 2**64 - 1
LAYOUTS = ("classic", "blocked512", "split_block")
HASHING_AT = 60  # the type-1 params' hashing field: header (24) + 32 common bytes + layout (4)
KEYS = [f"key-{i}" for i in range(3000)] + list(range(-1500, 1500)) + [b"\x00\xff" * 7, "日本語", ""]


def digest(key) -> int:
    """XXH64 of the key's canonical bytes under seed 42 (Spark's xxhash64), from the xxhash package."""
    return xxhash.xxh64_intdigest(bloomkit.canonical_bytes(key), seed=42)


def documented_pair(key, seed: int) -> tuple[int, int]:
    x = (digest(key) + seed * 0x9E3779B97F4A7C15) & MASK
    return fmix64(x), fmix64(x ^ 0xC2B2AE3D27D4EB4F)


def digests_of(keys) -> np.ndarray:
    return np.array([digest(k) for k in keys], dtype=np.uint64).view(np.int64)


def reseal(data: bytes) -> bytes:
    body = data[:-8]
    return body + struct.pack("<Q", bloomkit.hash128(body, 0x424B4631) & MASK)


def with_hashing_code(data: bytes, code: int) -> bytes:
    return reseal(data[:HASHING_AT] + struct.pack("<I", code) + data[HASHING_AT + 4 :])


def test_positions_follow_the_documented_derivation():
    salts = [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31]
    f = BloomFilter.from_params(256 * 1009, 8, layout="split_block", seed=77)
    g = BloomFilter(1009 * 20, 0.01, layout="split_block", seed=77, hashing="xxhash64")
    for key in ["a", "hello", 12345, -1, 2**64 - 1, 5.0, b"\x00" * 20, "日本", "x" * 100]:
        h1, h2 = documented_pair(key, 77)
        block = h1 * (g.num_bits // 256) >> 64
        low = fmix64(h2) & 0xFFFFFFFF
        expected = [256 * block + 32 * i + (((low * salts[i]) & 0xFFFFFFFF) >> 27) for i in range(8)]
        assert g._positions_many([key]).tolist() == [expected], key
        assert f._positions_many([key]).tolist() != [expected]


def test_the_seed_changes_every_position():
    a = BloomFilter(10_000, 0.01, hashing="xxhash64", seed=0)
    b = BloomFilter(10_000, 0.01, hashing="xxhash64", seed=1)
    same = (a._positions_many(KEYS[:1000]) == b._positions_many(KEYS[:1000])).all(axis=1)
    assert same.sum() <= 2  # independent positions: a whole row equal by chance about never


@pytest.mark.parametrize("layout", LAYOUTS)
def test_digests_are_the_keys(layout):
    by_keys = BloomFilter(len(KEYS), 0.01, layout=layout, seed=5, hashing="xxhash64")
    seen_by_keys = by_keys.add_many(KEYS)
    assert seen_by_keys.sum() <= 0.02 * len(KEYS)
    by_digests = BloomFilter(len(KEYS), 0.01, layout=layout, seed=5, hashing="xxhash64")
    digests = digests_of(KEYS)
    assert (by_digests.add_digests(digests) == seen_by_keys).all()  # the same test-and-set answers
    assert by_digests.to_bytes() == by_keys.to_bytes()
    assert by_digests.contains_digests(digests).all()
    absent = [f"absent-{i}" for i in range(20_000)]
    hits = by_keys.contains_digests(digests_of(absent))
    assert (hits == by_keys.contains_many(absent)).all()
    assert hits.mean() < 0.02  # 1 % target


def test_digests_in_every_array_form():
    digests = digests_of(KEYS[:500])
    expected = BloomFilter(1000, 0.01, hashing="xxhash64")
    expected.update_digests(digests)
    for form in (
        digests.view(np.uint64),
        digests[::1].copy()[::-1][::-1],
        digests.tolist(),
        pd.Series(digests),
        pa.array(digests),
        np.concatenate([digests, digests])[::2][: len(digests) // 2],  # strided, read in place
    ):
        f = BloomFilter(1000, 0.01, hashing="xxhash64")
        f.update_digests(form)
        if len(form) == len(digests):
            assert f == expected
        else:
            assert f.contains_digests(digests[::2][: len(form)]).all()


def test_two_thread_batches_match_small_batches():
    # 2**17 digests: above the two-thread threshold of a batch (parallel.hpp,
    # kMinParallelKeys = 2**16); chunks of 1,000 stay on one thread.
    rng = np.random.default_rng(7)
    digests = rng.integers(-(2**63), 2**63 - 1, size=1 << 17, dtype=np.int64)
    digests[-1000:] = digests[:1000]  # repeats: reported present the second time
    for layout in LAYOUTS:
        batch = BloomFilter(1 << 17, 0.01, layout=layout, hashing="xxhash64")
        seen = batch.add_digests(digests)
        chunked = BloomFilter(1 << 17, 0.01, layout=layout, hashing="xxhash64")
        seen_in_chunks = np.concatenate([chunked.add_digests(c) for c in np.array_split(digests, 132)])
        assert batch.to_bytes() == chunked.to_bytes()
        assert (seen == seen_in_chunks).all() and seen[-1000:].all()
        assert batch.contains_digests(digests).all()


def test_digests_are_refused_by_a_murmur_filter_and_bad_arrays_are_type_errors():
    f = BloomFilter(1000, 0.01)
    f.update(["a", "b"])
    before = f.to_bytes()
    with pytest.raises(ValueError, match="keys only of a filter built with hashing='xxhash64'"):
        f.add_digests(np.arange(3, dtype=np.int64))
    with pytest.raises(ValueError, match="hashing='xxhash64'"):
        f.contains_digests(np.arange(3, dtype=np.int64))
    g = BloomFilter(1000, 0.01, hashing="xxhash64")
    g.update(["a"])
    g_before = g.to_bytes()
    for bad, message in [
        (np.arange(3, dtype=np.int32), "1-D array of int64 or uint64.*int32"),
        (np.arange(3.0), "float64"),
        (np.zeros((2, 2), dtype=np.int64), "got 2-D"),
        (["a", "b"], "<U1"),
        ([2**70], "object"),
    ]:
        with pytest.raises(TypeError, match=message):
            g.add_digests(bad)
    with pytest.raises(TypeError, match="int64"):
        g.contains_digests(np.arange(3.0))
    assert f.to_bytes() == before and g.to_bytes() == g_before


def test_hashing_argument_is_checked():
    with pytest.raises(ValueError, match="hashing must be 'bloomkit', 'xxhash64', 'spark' or 'orc', got 'xxh64'"):
        BloomFilter(100, hashing="xxh64")
    with pytest.raises(ValueError, match="secret_key is not supported with hashing='xxhash64'"):
        BloomFilter(100, 0.01, hashing="xxhash64", secret_key=bytes(32))
    assert BloomFilter(100).hashing == "bloomkit"
    assert BloomFilter(100, hashing="xxhash64").hashing == "xxhash64"
    assert "seed=0 hashing=xxhash64 " in repr(BloomFilter(100, hashing="xxhash64"))
    assert "hashing" not in repr(BloomFilter(100))  # the default is not spelled out


# ------------------------------------------------------------------ frames


def test_frame_records_the_hashing():
    f = BloomFilter(1000, 0.01, hashing="xxhash64", seed=3)
    f.update(KEYS[:800])
    data = f.to_bytes()
    assert struct.unpack_from("<I", data, HASHING_AT) == (1,)
    assert struct.unpack_from("<I", BloomFilter(1000, 0.01, seed=3).to_bytes(), HASHING_AT) == (0,)
    # The same bits read as MurmurHash3: the hashing field is what the answers follow.
    as_murmur = BloomFilter.from_bytes(with_hashing_code(data, 0))
    assert as_murmur.hashing == "bloomkit" and as_murmur != f
    assert as_murmur.contains_many(KEYS[:800]).mean() < 0.5


@pytest.mark.parametrize("code", [2, 3, 2**31, 2**32 - 1])
def test_unknown_hashing_codes_are_rejected(code, tmp_path):
    data = with_hashing_code(BloomFilter(1000, 0.01, hashing="xxhash64").to_bytes(), code)
    with pytest.raises(ValueError, match=f"unknown hashing code {code} \\(0 = MurmurHash3, 1 = xxhash64\\)"):
        BloomFilter.from_bytes(data)
    path = tmp_path / "f.bkf"
    path.write_bytes(data)
    for load in (
        bloomkit.load,
        BloomFilter.load,
        lambda p: BloomFilter.open(p, "r"),
        lambda p: BloomFilter.open(p, "r+"),
    ):
        with pytest.raises(ValueError, match=f"unknown hashing code {code}"):
            load(path)
    assert path.read_bytes() == data


def test_other_types_keep_their_reserved_field():
    # Counting filters share the Bloom params' shape; their field stays reserved.
    data = bloomkit.CountingBloomFilter(100, 0.01).to_bytes()
    with pytest.raises(ValueError, match="reserved field is not zero"):
        bloomkit.CountingBloomFilter.from_bytes(with_hashing_code(data, 1))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trips_are_byte_exact(layout, tmp_path):
    f = BloomFilter(2000, 0.01, layout=layout, seed=11, hashing="xxhash64")
    f.update(KEYS[:1500])
    data = f.to_bytes()
    assert BloomFilter.from_bytes(data).to_bytes() == data
    for protocol in (2, 5):
        again = pickle.loads(pickle.dumps(f, protocol=protocol))
        assert again.hashing == "xxhash64" and again.to_bytes() == data
    assert f.copy().to_bytes() == data and f.copy().hashing == "xxhash64"
    path = tmp_path / "f.bkf"
    f.save(path)
    assert path.read_bytes() == data
    loaded = bloomkit.load(path)
    assert loaded.hashing == "xxhash64" and loaded.to_bytes() == data
    with BloomFilter.open(path, "r") as mapped:
        assert mapped.hashing == "xxhash64" and mapped.contains_many(KEYS[:1500]).all()
        assert mapped.contains_digests(digests_of(KEYS[:1500])).all()
    with BloomFilter.open(path, "r+") as writable:
        writable.update_digests(digests_of(["new-key"]))
    assert "new-key" in bloomkit.load(path)


def test_open_creates_an_xxhash64_file(tmp_path):
    path = tmp_path / "new.bkf"
    with BloomFilter.open(path, "w+", capacity=5000, error_rate=0.01, seed=4, hashing="xxhash64") as f:
        assert f.hashing == "xxhash64"
        f.update_digests(digests_of(KEYS[:3000]))
    expected = BloomFilter(5000, 0.01, seed=4, hashing="xxhash64")
    expected.update(KEYS[:3000])
    assert path.read_bytes() == expected.to_bytes()
    with pytest.raises(TypeError, match="hashing is for mode 'w\\+'; mode 'r' reads it from"):
        BloomFilter.open(path, "r", hashing="xxhash64")
    with pytest.raises(ValueError, match="hashing of a file must be 'bloomkit' or 'xxhash64', got 'spark'"):
        BloomFilter.open(tmp_path / "other.bkf", "w+", capacity=10, hashing="spark")
    assert not (tmp_path / "other.bkf").exists()


def test_filters_of_different_hashing_never_combine_or_compare_equal():
    a = BloomFilter(1000, 0.01, seed=1, layout="classic")
    b = BloomFilter(1000, 0.01, seed=1, layout="classic", hashing="xxhash64")
    a.update(["x"])
    b.update(["y"])
    before = (a.to_bytes(), b.to_bytes())
    for operation in (lambda: a | b, lambda: a & b, lambda: a.union(b), lambda: a.__ior__(b), lambda: a.__iand__(b)):
        with pytest.raises(ValueError, match="needs filters with equal hashing; got 'bloomkit' and 'xxhash64'"):
            operation()
    with pytest.raises(ValueError, match="union estimate needs filters with equal hashing"):
        bloomkit.estimate_union_size(a, b)
    assert (a.to_bytes(), b.to_bytes()) == before
    empty_a = BloomFilter(1000, 0.01, seed=1, layout="classic")
    empty_b = BloomFilter(1000, 0.01, seed=1, layout="classic", hashing="xxhash64")
    assert empty_a != empty_b  # same (empty) bits, different keys' positions
    c = BloomFilter(1000, 0.01, seed=1, layout="classic", hashing="xxhash64")
    c.update(["z"])
    assert "y" in (b | c) and "z" in (b | c)


def test_a_keyed_frame_with_xxhash64_is_refused(tmp_path):
    secret = bytes(range(32))
    keyed = BloomFilter(100, 0.01, secret_key=secret).to_bytes()
    at = HASHING_AT + 16  # after the keyed frame's key check
    forged = reseal(keyed[:at] + struct.pack("<I", 1) + keyed[at + 4 :])
    with pytest.raises(ValueError, match="secret_key is not supported with hashing='xxhash64'"):
        BloomFilter.from_bytes(forged, secret_key=secret)
