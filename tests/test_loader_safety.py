"""Crafted frames (valid checksum, hostile fields) never crash, over-allocate or load (issue 10, defects 1, 2, 6).

Every frame here is built by support.make_frame, so the checksum passes and
the field-level validation is what is tested. Each loads through every
entry point a user has: from_bytes, bloomkit.load (bytes and file),
pickle.loads and the CLI.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import time

import pytest

import bloomkit
from support import make_frame, split_frame

U64_MAX = 2**64 - 1


def bloom_params(num_bits, num_hashes=7, seed=0, capacity=100, error_rate=0.01) -> bytes:
    """Bloom params of format version 1 (still loadable: docs/FORMAT.md, compatibility policy)."""
    return struct.pack("<QIIQd", num_bits, num_hashes, seed, capacity, error_rate)


def load_everywhere(frame: bytes, cls, tmp_path):
    """Every way a user loads a frame; each must raise ValueError (or MemoryError)."""
    errors = []
    path = tmp_path / "crafted.bkf"
    path.write_bytes(frame)
    for load in (
        lambda: cls.from_bytes(frame),
        lambda: bloomkit.load(frame),
        lambda: bloomkit.load(path),
        lambda: cls.load(path),
    ):
        try:
            result = load()
        except (ValueError, MemoryError) as error:
            errors.append(error)
        else:
            pytest.fail(f"crafted frame loaded as {type(result).__name__}")
    return errors


@pytest.mark.parametrize("num_bits", [U64_MAX, U64_MAX - 62, 2**64 - 64, 2**63])
def test_bloom_num_bits_near_2_64_is_rejected_not_a_segfault(num_bits, tmp_path):
    # words_for(num_bits) used to wrap to 0 words: an empty payload passed and
    # the first lookup read far outside the bit array.
    frame = make_frame(1, bloom_params(num_bits), b"", version=1)
    errors = load_everywhere(frame, bloomkit.BloomFilter, tmp_path)
    assert len(errors) == 4
    assert all(isinstance(e, ValueError) for e in errors)
    assert "num_bits must be in [1, 2**63)" in str(errors[0])


class Pickled:
    """Pickles exactly as a BloomFilter does, around any frame."""

    def __init__(self, frame):
        self.frame = frame

    def __reduce__(self):
        return (bloomkit.BloomFilter.from_bytes, (self.frame,))


def test_unpickling_a_crafted_frame_raises(tmp_path):
    frame = make_frame(1, bloom_params(U64_MAX), b"", version=1)
    payload = pickle.dumps(Pickled(frame))
    with pytest.raises(ValueError, match=r"num_bits must be in \[1, 2\*\*63\)"):
        pickle.loads(payload)


def test_scalable_slice_record_with_huge_num_bits_is_rejected():
    good = bloomkit.ScalableBloomFilter(100, 0.01)
    tag, params, payload = split_frame(good.to_bytes())
    record = bytearray(payload[:40])
    struct.pack_into("<Q", record, 0, U64_MAX)
    frame = make_frame(tag, params, bytes(record) + payload[40:40])
    with pytest.raises(ValueError, match=r"num_bits must be in \[1, 2\*\*63\)"):
        bloomkit.ScalableBloomFilter.from_bytes(frame)


def test_counting_filter_with_huge_num_bits_is_rejected():
    params = bloom_params(U64_MAX) + struct.pack("<II", 4, 0)
    with pytest.raises(ValueError, match=r"num_bits must be in \[1, 2\*\*63\)"):
        bloomkit.CountingBloomFilter.from_bytes(make_frame(2, params, b"", version=1))


def test_stored_capacity_is_bounded_like_the_constructor():
    frame = make_frame(1, bloom_params(64, capacity=2**63), b"\0" * 8, version=1)
    with pytest.raises(ValueError, match=r"capacity must be in \[1, 2\*\*63\)"):
        bloomkit.BloomFilter.from_bytes(frame)


def test_scalable_growth_to_an_impossible_slice_is_a_memory_error_not_an_oom_kill():
    # The 128-byte frame of the report: a valid filter whose stored growth is
    # 1e9, so the first add past the first slice asks for terabytes.
    # split_block: range(1000) has no false positive in its first slice, so it fills exactly.
    good = bloomkit.ScalableBloomFilter(1000, 0.01, layout="split_block")
    tag, params, payload = split_frame(good.to_bytes())
    patched = bytearray(params)
    struct.pack_into("<d", patched, 16, 1e9)
    crafted = bloomkit.ScalableBloomFilter.from_bytes(make_frame(tag, bytes(patched), payload))
    assert crafted.growth == 1e9
    crafted.update(range(1000))  # fills the first slice
    before = crafted.to_bytes()
    with pytest.raises(MemoryError, match=r"cannot allocate a bit array of \d+ bytes: only \d+ bytes of memory"):
        crafted.add("one more")
    assert crafted.to_bytes() == before  # unchanged by the failed growth


def test_mid_range_sizes_raise_memory_error_before_allocating():
    available = bloomkit._core.available_memory()
    capacity = int(available * 1.5 / 1.2)  # ~1.2 bytes per key at 1 %
    with pytest.raises(MemoryError, match="cannot allocate a bit array"):
        bloomkit.BloomFilter(min(capacity, 2**62), 0.01)
    with pytest.raises(MemoryError, match="cannot allocate a counter array"):
        bloomkit.CountingBloomFilter(min(capacity, 2**62) // 4, 0.01)
    with pytest.raises(MemoryError, match="cannot allocate a fingerprint table"):
        bloomkit.CuckooFilter(min(capacity, 2**47), 0.01)


def test_load_reads_the_header_first(tmp_path):
    # A large file that is not a filter fails after its first 24 bytes.
    path = tmp_path / "urls.txt"
    with open(path, "wb") as handle:
        handle.truncate(3 * 2**30)  # sparse: costs no disk
    start = time.perf_counter()
    with pytest.raises(ValueError, match="not a bloomkit filter: bad magic bytes"):
        bloomkit.load(path)
    assert time.perf_counter() - start < 1.0


def test_load_of_dev_zero_fails_fast():
    with pytest.raises(ValueError, match="not a bloomkit filter: bad magic bytes"):
        bloomkit.load("/dev/zero")


def test_load_rejects_a_file_shorter_or_longer_than_declared(tmp_path):
    frame = bloomkit.BloomFilter(100).to_bytes()
    path = tmp_path / "f.bkf"
    path.write_bytes(frame[:-1])
    with pytest.raises(
        ValueError, match=rf"declares a {len(frame)}-byte filter but the file has {len(frame) - 1} bytes"
    ):
        bloomkit.load(path)
    path.write_bytes(frame + b"x")
    with pytest.raises(ValueError, match="truncated or extended"):
        bloomkit.load(path)
    path.write_bytes(frame[:10])
    with pytest.raises(ValueError, match="shorter than the 24-byte header"):
        bloomkit.load(path)


def test_load_from_a_pipe_reads_exactly_the_declared_length(tmp_path):
    frame = bloomkit.BloomFilter(100).to_bytes()
    read_end, write_end = os.pipe()
    os.write(write_end, frame)
    os.close(write_end)
    try:
        loaded = bloomkit.load(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert loaded.to_bytes() == frame


def small_filters():
    filters = [
        bloomkit.BloomFilter(1000),
        bloomkit.CountingBloomFilter(1000),
        bloomkit.ScalableBloomFilter(100),
        bloomkit.CuckooFilter(1000, auto_grow=True),
    ]
    for f in filters:
        f.update(range(250))  # the scalable filter grows to 2 slices, the cuckoo filter stays in one stage
    return filters


def core_from_pipe(cls, data: bytes):
    """A filter built by the core's file constructor (``fd=``) from a pipe holding ``data``."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    try:
        instance = cls.__new__(cls)
        cls._core_class.__init__(instance, fd=read_end)
        return instance
    finally:
        os.close(read_end)


@pytest.mark.parametrize("filt", small_filters(), ids=lambda f: type(f).__name__)
def test_a_file_cut_anywhere_is_truncated_data_while_it_is_read(filt):
    # A pipe has no size to check up front, so each cut is found by the
    # streaming reader where it happens (frame_reader.hpp): in the params, an
    # array, the padding or the checksum; a longer stream is extended data.
    frame = filt.to_bytes()
    assert core_from_pipe(type(filt), frame) == filt
    parts = set()
    for cut in range(24, len(frame), max(1, len(frame) // 97)):
        with pytest.raises(ValueError, match="^truncated data while reading ") as error:
            core_from_pipe(type(filt), frame[:cut])
        parts.add(str(error.value).removeprefix("truncated data while reading "))
    with pytest.raises(ValueError, match="^truncated data while reading checksum$"):
        core_from_pipe(type(filt), frame[:-1])
    with pytest.raises(ValueError, match="^extended data: more bytes follow"):
        core_from_pipe(type(filt), frame + b"\0")
    array = {
        "BloomFilter": "bit array",
        "CountingBloomFilter": "counters",
        "ScalableBloomFilter": "bit array",
        "CuckooFilter": "fingerprint table",
    }[type(filt).__name__]
    assert {"params", array} <= parts, parts


def test_header_declaring_an_impossible_length_is_refused():
    header = b"\x89BKF\r\n\x1a\n" + struct.pack("<HHIQ", 1, 1, 32, U64_MAX - 10)
    with pytest.raises(ValueError, match="impossibly large"):
        bloomkit._core.frame_header(header)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bloomkit", *args], capture_output=True, text=True, timeout=60)


def test_cli_info_on_dev_zero_fails_fast():
    start = time.perf_counter()
    result = run_cli("info", "/dev/zero")
    assert result.returncode == 2
    assert "/dev/zero: not a bloomkit filter: bad magic bytes" in result.stderr
    assert result.stderr.count("not a") == 1  # issue 12: the phrase is said once
    assert time.perf_counter() - start < 20


def test_cli_query_with_a_crafted_filter_fails_cleanly(tmp_path):
    path = tmp_path / "crafted.bkf"
    path.write_bytes(make_frame(1, bloom_params(U64_MAX), b"", version=1))
    keys = tmp_path / "keys.txt"
    keys.write_text("a\nb\n")
    result = run_cli("query", str(path), str(keys))
    assert result.returncode == 2, result.stderr
    assert "num_bits must be in [1, 2**63)" in result.stderr
