"""Keyed hashing (secret_key=): SipHash-2-4-128 and keyed filters (docs/RELIABILITY.md)."""

from pathlib import Path

import pytest

from bloomkit import _core

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

