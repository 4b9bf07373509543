"""Binary format v2 (docs/FORMAT.md): round trips, validation, atomic saves, v1 compatibility."""

import os
import struct

import pytest

import bloomkit
from bloomkit import BloomFilter


def sample(seed=0):
    f = BloomFilter(5000, 0.01, seed=seed)
    f.update([f"key-{i}" for i in range(2500)])
    return f


def test_header_layout_matches_the_documentation():
    f = sample(seed=1234)
    data = f.to_bytes()
    magic, version, tag, params_length, payload_length = struct.unpack_from("<8sHHIQ", data, 0)
    assert magic == b"\x89BKF\r\n\x1a\n"
    assert (version, tag, params_length) == (2, 1, 40)
    assert payload_length == f.nbytes == 8 * ((f.num_bits + 63) // 64)
    # The payload starts at the first multiple of 64 after header + params.
    assert len(data) == 64 + payload_length + 8 and data[64 : 64 + payload_length] == f.to_bytes()[64:-8]
    num_bits, num_hashes, seed, capacity, error_rate, layout, reserved = struct.unpack_from("<QIIQdII", data, 24)
    assert (num_bits, num_hashes, seed, capacity, error_rate) == (f.num_bits, f.num_hashes, 1234, 5000, 0.01)
    assert (layout, reserved) == (["classic", "blocked512", "split_block"].index(f.layout), 0)
    (checksum,) = struct.unpack_from("<Q", data, len(data) - 8)
    assert checksum == bloomkit.hash128(data[:-8], 0x424B4631) & (2**64 - 1)


def test_save_and_load(tmp_path):
    f = sample()
    path = tmp_path / "seen.bkf"
    f.save(path)
    assert path.read_bytes() == f.to_bytes()
    assert BloomFilter.load(path) == f
    assert BloomFilter.load(str(path)) == f
    assert bloomkit.load(path) == f
    assert type(bloomkit.load(path)) is BloomFilter
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert [p.name for p in tmp_path.iterdir()] == ["seen.bkf"]  # no temporary left behind


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_failed_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "seen.bkf"
    old = sample(seed=1)
    old.save(path)
    new = sample(seed=2)

    def crash(*args, **kwargs):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        new.save(path)
    assert path.read_bytes() == old.to_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["seen.bkf"]


def test_load_rejects_missing_files_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        BloomFilter.load(tmp_path / "missing.bkf")
    with pytest.raises(TypeError, match="path or bytes"):
        bloomkit.load(42)
    with pytest.raises(TypeError, match="bytes-like"):
        BloomFilter.from_bytes("not bytes")


def corrupt(data, offset, value_bytes):
    data = bytearray(data)
    data[offset : offset + len(value_bytes)] = value_bytes
    return bytes(data)


def reseal(data):
    """Recompute the checksum so a test can reach the validation behind it."""
    body = data[:-8]
    checksum = bloomkit.hash128(body, 0x424B4631) & (2**64 - 1)
    return body + struct.pack("<Q", checksum)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d[:10], "shorter than the 32-byte minimum"),
        (lambda d: d[:-1], "do not match"),
        (lambda d: d + b"\0", "do not match"),
        (lambda d: corrupt(d, 0, b"\x88"), "bad magic"),
        (lambda d: reseal(corrupt(d, 8, struct.pack("<H", 3))), "unsupported format version 3"),
        (lambda d: reseal(corrupt(d, 8, struct.pack("<H", 0))), "unsupported format version 0"),
        (lambda d: reseal(corrupt(d, 56, struct.pack("<I", 3))), "unknown layout code 3"),
        (lambda d: reseal(corrupt(d, 60, struct.pack("<I", 1))), "reserved field is not zero"),
        (lambda d: reseal(corrupt(d, 10, struct.pack("<H", 4))), "holds a CuckooFilter, not a BloomFilter"),
        (lambda d: reseal(corrupt(d, 10, struct.pack("<H", 99))), "unknown filter type tag 99"),
        (lambda d: reseal(corrupt(d, 12, struct.pack("<I", 2**31))), "params length"),
        (lambda d: reseal(corrupt(d, 16, struct.pack("<Q", 2**62))), "do not match"),
        (lambda d: corrupt(d, 100, bytes([d[100] ^ 0x10])), "checksum mismatch"),
        (lambda d: reseal(corrupt(d, 24, struct.pack("<Q", 0))), r"num_bits must be in \[1, 2\*\*63\), got 0"),
        (lambda d: reseal(corrupt(d, 24, struct.pack("<Q", 2**60))), "needs"),
        (lambda d: reseal(corrupt(d, 32, struct.pack("<I", 0))), "num_hashes"),
        (lambda d: reseal(corrupt(d, 32, struct.pack("<I", 65))), "num_hashes"),
        (lambda d: reseal(corrupt(d, 40, struct.pack("<Q", 0))), "capacity"),
        (lambda d: reseal(corrupt(d, 48, struct.pack("<d", 1.0))), "error_rate"),
        (lambda d: reseal(corrupt(d, 48, struct.pack("<d", float("nan")))), "error_rate"),
    ],
)
def test_invalid_frames_raise_value_error_naming_the_problem(mutate, match):
    data = sample().to_bytes()
    with pytest.raises(ValueError, match=match):
        BloomFilter.from_bytes(mutate(data))


def test_padding_bits_beyond_num_bits_are_rejected():
    f = BloomFilter.from_params(100, 2)  # 100 bits in two words; 28 padding bits
    data = bytearray(f.to_bytes())
    data[-9] |= 0x80  # the top bit of the last word
    with pytest.raises(ValueError, match="beyond num_bits"):
        BloomFilter.from_bytes(reseal(bytes(data)))


def test_absurd_sizes_are_rejected_without_allocating():
    # A tiny frame claiming 2**63 - 1 bits (the most num_bits may be) must fail on the length check, not by
    # trying to allocate an exabyte.
    data = sample().to_bytes()
    header = data[:24]
    params = struct.pack("<QIIQdII", 2**63 - 1, 3, 0, 10, 0.01, 0, 0)  # 24 + 40: payload at 64, no padding
    forged = reseal(header[:12] + struct.pack("<IQ", len(params), 8) + params + b"\0" * 8 + b"\0" * 8)
    with pytest.raises(ValueError, match="payload is 8 bytes but num_bits"):
        BloomFilter.from_bytes(forged)


def test_nonzero_alignment_padding_is_rejected():
    # Cuckoo params are 32 bytes, so bytes 56..63 pad the payload to offset 64.
    data = bloomkit.CuckooFilter(100, 0.01).to_bytes()
    assert data[56:64] == bytes(8)
    with pytest.raises(ValueError, match="padding before the payload is not zero"):
        bloomkit.CuckooFilter.from_bytes(reseal(corrupt(data, 60, b"\x01")))


def test_pickle_carries_only_the_frame():
    import pickle
    import pickletools

    f = sample()
    dumped = pickle.dumps(f)
    opcodes = {op.name for op, _, _ in pickletools.genops(dumped)}
    assert "REDUCE" in opcodes
    assert f.to_bytes() in dumped
    assert pickle.loads(dumped) == f
