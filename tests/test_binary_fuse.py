"""BinaryFuseFilter: built once from every key, then only queried (Graf & Lemire 2022)."""

from __future__ import annotations

import math
import pickle
import secrets
import struct

import numpy as np
import pytest

import bloomkit
from bloomkit import BinaryFuseFilter
from support import random_strings

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

HEADER = 24  # docs/FORMAT.md: params start here
KEYS = random_strings(20_000, seed=3, length=10)


@pytest.fixture(scope="module")
def small():
    return BinaryFuseFilter.build(KEYS)


def test_every_batch_input_builds_the_same_filter():
    ints = np.random.default_rng(1).integers(0, 2**63, size=50_000, dtype=np.int64)
    expected = BinaryFuseFilter.build(ints.tolist())
    for keys in (
        ints,
        ints.astype(np.uint64),
        pa.array(ints),
        pa.chunked_array([ints[:20_000], ints[20_000:]]),
        pd.Series(ints),
        tuple(ints.tolist()),
    ):
        assert BinaryFuseFilter.build(keys).to_bytes() == expected.to_bytes(), type(keys).__name__
    strings = KEYS[:5000]
    by_list = BinaryFuseFilter.build(strings)
    for keys in (
        np.array(strings),
        pa.array(strings),
        pa.chunked_array([strings[:10], strings[10:]]),
        pd.Series(strings),
    ):
        assert BinaryFuseFilter.build(keys) == by_list, type(keys).__name__
    pl = pytest.importorskip("polars")
    assert BinaryFuseFilter.build(pl.Series(strings)) == by_list


def test_freeze_reads_an_iterable_batch_by_batch_into_the_same_filter(monkeypatch):
    import bloomkit.binary_fuse as module

    monkeypatch.setattr(module, "FREEZE_BATCH", 1000)  # 20 batches of the generator below
    frozen = BinaryFuseFilter.freeze(key for key in KEYS)
    assert frozen == BinaryFuseFilter.build(KEYS) and len(frozen) == len(KEYS)
    assert len(BinaryFuseFilter.freeze(iter([]))) == 0


def test_no_false_negatives_over_a_million_keys_and_9_bits_per_key():
    keys = np.random.default_rng(7).integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    f = BinaryFuseFilter.build(keys)
    assert len(f) == len(np.unique(keys))
    assert f.contains_many(keys).all()
    # 1e6 keys: size factor max(1.125, 0.875 + 0.25) = 1.125, 1,125,000
    # cells rounded up to 138 segments of 2^13: 138 * 8192 * 8 bits / 1e6 keys = 9.04.
    assert f.array_length == 138 * 8192 and f.segment_length == 8192 and f.segment_count == 136
    assert f.bits_per_key == pytest.approx(9.044, abs=0.001)
    assert f.nbytes == 138 * 8192


@pytest.mark.statistical
@pytest.mark.parametrize("bits", [8, 16])
def test_false_positive_rate_on_ten_million_probes(bits):
    rng = np.random.default_rng(bits)
    keys = rng.integers(0, 2**63, size=1_000_000, dtype=np.uint64)
    f = BinaryFuseFilter.build(keys, fingerprint_bits=bits)
    probes = rng.integers(2**63, 2**64, size=10_000_000, dtype=np.uint64)  # disjoint from the keys
    hits = int(f.contains_many(probes).sum())
    p = 2.0**-bits  # 8 bits: 0.391 %, 16 bits: 0.00153 %
    sigma = math.sqrt(len(probes) * p * (1 - p))  # binomial: 198 hits at 8 bits, 12.4 at 16
    assert abs(hits - len(probes) * p) < 5 * sigma, hits
    if bits == 8:
        assert hits / len(probes) <= 0.0042


def test_duplicates_are_stored_once(small):
    assert len(BinaryFuseFilter.build(["a", "b", "a", "a"])) == 2
    repeated = BinaryFuseFilter.build(KEYS + KEYS[:7000] + [KEYS[0]] * 500)
    assert repeated == small and len(repeated) == len(KEYS)
    assert BinaryFuseFilter.build(list(reversed(KEYS))) == small  # the set decides, not the order


def test_a_pandas_series_with_duplicates_builds_the_filter_of_its_distinct_keys():
    # Duplicates are stored once and the filter is a function of the key set
    # (build's docstring, docs/RELIABILITY.md): a shuffled Series holding each
    # key 3 times (its index shuffled too) is the filter of the distinct keys.
    strings = random_strings(50_000, seed=17, length=12)
    ints = np.unique(np.random.default_rng(17).integers(-(2**63), 2**63 - 1, size=50_000, dtype=np.int64))
    assert len(set(strings)) == 50_000 and len(ints) == 50_000
    for distinct, series in (
        (strings, pd.Series(strings * 3).sample(frac=1.0, random_state=17)),
        (ints, pd.Series(np.tile(ints, 3), dtype=np.int64).sample(frac=1.0, random_state=18)),
    ):
        assert len(series) == 150_000 and series.nunique() == 50_000 and not series.index.is_monotonic_increasing
        f = BinaryFuseFilter.build(series)
        assert len(f) == 50_000
        assert f.contains_many(distinct).all() and f.contains_many(series).all()
        assert f.to_bytes() == BinaryFuseFilter.build(distinct).to_bytes(), series.dtype


def test_empty_and_tiny_sets():
    empty = BinaryFuseFilter.build([])
    assert len(empty) == 0 and empty.array_length == 12
    for n in (1, 2, 3, 17):
        keys = [f"k{i}" for i in range(n)]
        f = BinaryFuseFilter.build(keys, fingerprint_bits=16)
        assert all(k in f for k in keys) and len(f) == n


def test_it_is_immutable_and_says_to_build(small):
    before = small.to_bytes()
    for call in (
        lambda: small.add("x"),
        lambda: small.add_many(["x"]),
        lambda: small.update(["x"]),
        lambda: small.clear(),
    ):
        with pytest.raises(TypeError, match=r"BinaryFuseFilter is immutable: \w+\(\) is not supported; .*build"):
            call()
    with pytest.raises(TypeError, match=r"use BinaryFuseFilter\.build\(keys\)"):
        BinaryFuseFilter(100)
    assert small.to_bytes() == before


def test_bad_arguments_are_refused_before_hashing():
    for bits in (7, 12, 32, True, "8"):
        with pytest.raises(ValueError, match=r"fingerprint_bits must be 8 or 16, got"):
            BinaryFuseFilter.build(["a"], fingerprint_bits=bits)
    with pytest.raises(ValueError, match=r"seed"):
        BinaryFuseFilter.build(["a"], seed=-1)
    with pytest.raises(TypeError):
        BinaryFuseFilter.build(["a", object()])


def test_bytes_files_and_load_round_trip_byte_exactly(small, tmp_path):
    data = small.to_bytes()
    assert BinaryFuseFilter.from_bytes(data).to_bytes() == data
    assert bloomkit.load(data) == small and type(bloomkit.load(data)) is BinaryFuseFilter
    path = tmp_path / "set.bkf"
    small.save(path)
    assert path.read_bytes() == data
    assert BinaryFuseFilter.load(path) == small and bloomkit.load(path) == small
    assert small.copy() == small and small.copy().to_bytes() == data
    assert struct.unpack_from("<H", data, 10)[0] == 6  # the type tag


def test_protocol_5_pickles_view_the_fingerprints_in_place():
    f = BinaryFuseFilter.build(np.arange(200_000, dtype=np.uint64))  # 226 KB: past the 64 KiB view threshold
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(stream) < 400
    view = buffers[0].raw()
    assert view.readonly and view.nbytes == f.nbytes
    data = f.to_bytes()
    assert data[-8 - view.nbytes : -8] == view.tobytes()
    assert pickle.loads(stream, buffers=buffers) == f
    del f  # the view keeps the fingerprints alive
    assert len(view.tobytes()) == view.nbytes


def test_open_maps_the_file_read_only(small, tmp_path):
    path = tmp_path / "set.bkf"
    small.save(path)
    mapped = BinaryFuseFilter.open(path, verify=True)
    assert mapped.mapped and not small.mapped
    assert mapped == small and mapped.contains_many(KEYS).all()
    probes = random_strings(5000, seed=4, length=11)
    assert (mapped.contains_many(probes) == small.contains_many(probes)).all()
    with pytest.raises(TypeError, match="immutable"):
        mapped.add("x")
    assert pickle.loads(pickle.dumps(mapped, protocol=5)) == small
    copy = mapped.copy()
    del mapped
    assert not copy.mapped and copy == small
    assert path.read_bytes() == small.to_bytes()


def test_open_refuses_other_files_clearly(tmp_path):
    bloom = bloomkit.BloomFilter(100, 0.01)
    bloom.save(tmp_path / "bloom.bkf")
    with pytest.raises(ValueError, match="data holds a BloomFilter, not a BinaryFuseFilter"):
        BinaryFuseFilter.open(tmp_path / "bloom.bkf")
    (tmp_path / "junk").write_bytes(b"x" * 100)
    with pytest.raises(ValueError, match="not a bloomkit filter"):
        BinaryFuseFilter.open(tmp_path / "junk")
    with pytest.raises(FileNotFoundError):
        BinaryFuseFilter.open(tmp_path / "missing")


def resealed(data: bytes, offset: int, fmt: str, value) -> bytes:
    """``data`` with a params field rewritten and the checksum recomputed (a hostile writer)."""
    out = bytearray(data)
    struct.pack_into(fmt, out, HEADER + offset, value)
    return reseal(out)


def resealed_at(data: bytes, position: int, byte: int) -> bytes:
    """``data`` with the byte at ``position`` replaced and the checksum recomputed."""
    out = bytearray(data)
    out[position] = byte
    return reseal(out)


def reseal(out: bytearray) -> bytes:
    body = bytes(out[:-8])
    out[-8:] = struct.pack("<Q", bloomkit.hash128(body, 0x424B4631) & (2**64 - 1))
    return bytes(out)


def test_hostile_frames_are_refused_with_clear_errors(small, tmp_path):
    data = small.to_bytes()
    assert resealed(data, 0, "<Q", len(small)) == data  # the resealing is right
    cases = [
        (resealed(data, 0, "<Q", 2**40), "a binary fuse filter holds at most 2\\*\\*31 distinct keys"),
        (resealed(data, 0, "<Q", len(small) * 3), "segment geometry .* does not match"),
        (resealed(data, 20, "<I", 2**30), "segment geometry"),
        (resealed(data, 24, "<I", 2**31), "segment geometry"),
        (resealed(data, 28, "<B", 4), "fingerprint_bits must be 8 or 16, got 4"),
        (resealed(data, 28, "<B", 16), "payload is .* bytes but the parameters need"),
        (data[:-1], "truncated or extended data"),
        (data + b"\0", "truncated or extended data"),
        (data[:-20] + bytes([data[-20] ^ 1]) + data[-19:], "checksum mismatch: the data is corrupt"),
    ]
    for blob, message in cases:
        with pytest.raises(ValueError, match=message):
            BinaryFuseFilter.from_bytes(blob)
        path = tmp_path / "hostile.bkf"
        path.write_bytes(blob)
        with pytest.raises(ValueError, match=message):
            BinaryFuseFilter.load(path)
    # Non-zero padding after the last fingerprint is corruption too: one key,
    # 12 one-byte cells, 4 bytes of padding to the 16-byte payload.
    one = BinaryFuseFilter.build(["x"])
    assert one.array_length == 12 and one.nbytes == 16
    with pytest.raises(ValueError, match="padding after the fingerprints is not zero"):
        BinaryFuseFilter.from_bytes(resealed_at(one.to_bytes(), len(one.to_bytes()) - 9, 1))


def test_keyed_filters_need_their_key(tmp_path):
    key = secrets.token_bytes(32)
    f = BinaryFuseFilter.build(KEYS[:1000], secret_key=key)
    assert f.keyed and all(k in f for k in KEYS[:1000])
    assert f != BinaryFuseFilter.build(KEYS[:1000])
    data = f.to_bytes()
    with pytest.raises(bloomkit.SecretKeyError, match="built with a secret_key"):
        BinaryFuseFilter.from_bytes(data)
    assert BinaryFuseFilter.from_bytes(data, secret_key=key) == f
    path = tmp_path / "keyed.bkf"
    f.save(path)
    assert BinaryFuseFilter.open(path, secret_key=key) == f
    with pytest.raises(bloomkit.SecretKeyError, match="wrong secret_key"):
        BinaryFuseFilter.open(path, secret_key=secrets.token_bytes(32))
    with pytest.raises(TypeError, match="cannot pickle a keyed BinaryFuseFilter"):
        pickle.dumps(f)


def test_repr_and_notebook_display(small):
    text = repr(small)
    assert text.startswith("<BinaryFuseFilter keys=20,000 fingerprint_bits=8 error_rate=0.003906 bits_per_key=")
    assert "segment_length=1,024" in text and text.endswith("mapped=False state=frozen>")
    html = small._repr_html_()
    assert "BinaryFuseFilter" in html and "segment_length" in html
    assert small.error_rate == small.estimated_fpr() == 2**-8 and not small.over_capacity


def test_seed_changes_the_filter_not_the_answers():
    a, b = BinaryFuseFilter.build(KEYS, seed=1), BinaryFuseFilter.build(KEYS, seed=2)
    assert a != b and a.seed == 1 and b.seed == 2
    assert a.contains_many(KEYS).all() and b.contains_many(KEYS).all()
