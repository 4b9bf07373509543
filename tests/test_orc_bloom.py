"""OrcBloomFilter (``BloomFilter(..., hashing="orc")``) against ORC's own Java BloomFilter.

ORC's ``org.apache.orc.util.BloomFilterUtf8`` runs in a JVM through
tests/orc_jvm/OrcBloomCheck.java, compiled here with javac against the
orc-core and orc-format jars pyspark ships (no Spark session: one ``java``
run builds or queries a filter over a whole key file). For 100,000 keys of
each type ORC's writers add (longs, doubles, strings, binary) and a mix of
them: the JVM's serialized message and bloomkit's are byte-equal in both
encodings, and each side answers the other's filter exactly as its owner
does, for present and absent keys.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

import bloomkit
from bloomkit.orc_bloom import OrcBloomFilter, orc_bloom_params
from support import random_strings

pytestmark = pytest.mark.integration

HERE = os.path.dirname(__file__)
N = 100_000
KIND = {"long": 0, "double": 1, "string": 2, "binary": 3}


@pytest.fixture(scope="module")
def orc_java(tmp_path_factory):
    """Run OrcBloomCheck in a JVM: orc_java("build"|"test", *args)."""
    pyspark = pytest.importorskip("pyspark")
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("a JDK (java, javac) is needed to run ORC's Java BloomFilter")
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "orc-*.jar"))
    if not any("orc-core" in jar for jar in jars):
        pytest.skip("pyspark ships no orc-core jar")
    classes = str(tmp_path_factory.mktemp("orc_jvm"))
    source = os.path.join(HERE, "orc_jvm", "OrcBloomCheck.java")
    classpath = os.pathsep.join([classes, *jars])
    subprocess.run([javac, "-cp", classpath, "-d", classes, source], check=True, capture_output=True)

    def run(*args):
        subprocess.run([java, "-cp", classpath, "OrcBloomCheck", *map(str, args)], check=True, capture_output=True)

    return run


def key_file(path, keys) -> str:
    """Write (kind, value) records as OrcBloomCheck reads them."""
    out = bytearray()
    for kind, value in keys:
        if kind == "long":
            out += struct.pack("<bq", 0, value)
        elif kind == "double":
            out += struct.pack("<bd", 1, value)
        else:
            raw = value.encode() if kind == "string" else value
            out += struct.pack("<bi", KIND[kind], len(raw)) + raw
    path.write_bytes(bytes(out))
    return str(path)


def java_build(orc_java, tmp_path, n, fpp, keys) -> tuple[bytes, bytes]:
    """(utf8bitset message, legacy bitset message) of ORC's BloomFilterUtf8(n, fpp) holding keys."""
    keys_path = key_file(tmp_path / "build.keys", keys)
    orc_java("build", n, repr(fpp), keys_path, tmp_path / "built")
    return (tmp_path / "built.utf8").read_bytes(), (tmp_path / "built.legacy").read_bytes()


def java_test(orc_java, tmp_path, message: bytes, keys) -> np.ndarray:
    """ORC's testLong/testDouble/testString/test answer for each key, on the message read back by ORC."""
    (tmp_path / "filter.pb").write_bytes(message)
    keys_path = key_file(tmp_path / "test.keys", keys)
    orc_java("test", tmp_path / "filter.pb", keys_path, tmp_path / "answers")
    return np.frombuffer((tmp_path / "answers").read_bytes(), dtype=np.uint8).astype(bool)


def values(keys):
    return [value for _, value in keys]


rng = np.random.default_rng(28)
LONGS = [("long", int(v)) for v in rng.integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64)] + [
    ("long", v) for v in (0, 1, -1, 2**63 - 1, -(2**63))
]
DOUBLES = [("double", float(v)) for v in rng.normal(0, 1e6, size=N)] + [
    ("double", v) for v in (0.0, -0.0, 1.0, math.inf, -math.inf, math.nan, 5e-324)
]
STRINGS = [("string", s) for s in random_strings(N, seed=29, length=14)] + [
    ("string", s) for s in ("", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "é", "日本語", "🙂 emoji")
]
BINARY = [("binary", bytes(rng.integers(0, 256, size=i % 23, dtype=np.uint8))) for i in range(N)]
ABSENT = {
    "long": [("long", int(v)) for v in rng.integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64)],
    "double": [("double", float(v)) for v in rng.normal(0, 1e6, size=N)],
    "string": [("string", s) for s in random_strings(N, seed=30, length=18)],
    "binary": [("binary", bytes(rng.integers(0, 256, size=23 + i % 9, dtype=np.uint8))) for i in range(N)],
}
PRESENT = {"long": LONGS, "double": DOUBLES, "string": STRINGS, "binary": BINARY}


@pytest.mark.parametrize("kind", ["long", "double", "string", "binary"])
def test_same_keys_same_bytes_as_orc_java_and_same_answers(orc_java, tmp_path, kind):
    keys = PRESENT[kind]
    utf8, legacy = java_build(orc_java, tmp_path, len(keys), 0.01, keys)
    mine = bloomkit.BloomFilter(len(keys), 0.01, hashing="orc")
    assert isinstance(mine, OrcBloomFilter)
    mine.update(values(keys))
    assert mine.to_orc_bytes() == utf8
    assert mine.to_orc_bytes(legacy_bitset=True) == legacy
    # ORC -> bloomkit: every present key found; absent keys answered as ORC answers.
    from_java = bloomkit.BloomFilter.from_orc_bytes(utf8)
    assert from_java == mine and bloomkit.BloomFilter.from_orc_bytes(legacy) == mine
    assert from_java.contains_many(values(keys)).all()
    probe = keys[:1000] + ABSENT[kind]
    java_answers = java_test(orc_java, tmp_path, utf8, probe)
    np.testing.assert_array_equal(from_java.contains_many(values(probe)), java_answers)
    false_positives = java_answers[1000:].mean()
    assert 0.003 < false_positives < 0.02, false_positives  # the 1% filter is a real filter on both sides


def test_batch_inputs_hash_as_orc_scalars():
    # NumPy arrays (int64, uint64, float64, float32), pyarrow strings/binary
    # and Python lists give the same pairs as one key at a time.
    pa = pytest.importorskip("pyarrow")
    longs = np.array([v for _, v in LONGS[:2000]], dtype=np.int64)
    doubles = np.array([v for _, v in DOUBLES[-7:]] + [1.5, -2.25], dtype=np.float64)
    strings = [s for _, s in STRINGS[-9:]]
    for batch, scalars in [
        (longs, [int(v) for v in longs]),
        (longs.view(np.uint64), [int(v) % 2**64 for v in longs]),
        (doubles, [float(v) for v in doubles]),
        (doubles.astype(np.float32), [float(np.float32(v)) for v in doubles]),
        (pa.array(strings), strings),
        (pa.array([s.encode() for s in strings], pa.binary()), [s.encode() for s in strings]),
        (np.array(strings), strings),
    ]:
        one = OrcBloomFilter(5000, 0.01)
        expected = [one.add(key) for key in scalars]
        many = OrcBloomFilter(5000, 0.01)
        assert many.add_many(batch).tolist() == expected
        assert many.to_orc_bytes() == one.to_orc_bytes()


def test_a_mixed_filter_round_trips_through_orc_java(orc_java, tmp_path):
    keys = LONGS[:25_000] + DOUBLES[:25_000] + STRINGS[:25_000] + BINARY[:25_000]
    mine = OrcBloomFilter(len(keys), 0.05)
    mine.update(values(keys))
    utf8, _ = java_build(orc_java, tmp_path, len(keys), 0.05, keys)
    assert mine.to_orc_bytes() == utf8
    # bloomkit -> ORC: ORC reads bloomkit's message and finds every key; an
    # int and the float of the same value are different keys on both sides.
    probe = keys + [("double", float(v)) for _, v in LONGS[:1000]]
    java_answers = java_test(orc_java, tmp_path, mine.to_orc_bytes(legacy_bitset=True), probe)
    assert java_answers[: len(keys)].all()
    np.testing.assert_array_equal(mine.contains_many(values(probe)), java_answers)


SIZES = [(1, 0.5), (1, 0.01), (2, 0.05), (7, 0.05), (64, 0.05), (100, 1e-6), (1000, 0.5), (1000, 0.05)]
SIZES += [(1000, 0.01), (1000, 0.001), (12_345, 0.05), (12_345, 1e-6), (10**6, 0.01), (10**6, 1e-6)]


@pytest.mark.parametrize(("capacity", "error_rate"), SIZES)
def test_sizing_is_orc_java_sizing(orc_java, tmp_path, capacity, error_rate):
    utf8, _ = java_build(orc_java, tmp_path, capacity, error_rate, [])
    java = OrcBloomFilter.from_orc_bytes(utf8)
    assert orc_bloom_params(capacity, error_rate) == (java.num_bits, java.num_hashes)
    assert OrcBloomFilter(capacity, error_rate).to_orc_bytes() == utf8


def test_sizing_adds_a_word_when_the_bits_are_a_multiple_of_64():
    # nb = (int)(-n ln p / ln2^2); ORC adds 64 - nb % 64 even when that is 64.
    n, p = 1, math.exp(-64 * math.log(2) ** 2)  # nb is 63 or 64 depending on rounding
    nb = int(-n * math.log(p) / (math.log(2) * math.log(2)))
    assert orc_bloom_params(n, p)[0] == nb + 64 - nb % 64
    assert orc_bloom_params(1000, 0.01) == (9600, 7)  # nb = 9585
    with pytest.raises(ValueError, match="ORC's filters hold at most 2,147,483,584"):
        orc_bloom_params(10**9, 1e-9)


# -- hostile and truncated messages: a clear ValueError, nothing allocated first
def small_message(**kwargs) -> bytes:
    f = OrcBloomFilter(20, 0.05)
    f.update(["a", 1, 2.0])
    return f.to_orc_bytes(**kwargs)


def test_every_truncation_of_a_utf8bitset_message_is_refused():
    message = small_message()
    for end in range(len(message)):
        with pytest.raises(ValueError, match="invalid ORC BloomFilter: "):
            OrcBloomFilter.from_orc_bytes(message[:end])


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (b"", "no num_hash_functions"),
        (b"\x1a\x08" + bytes(8), "no num_hash_functions"),
        (b"\x08\x00\x1a\x08" + bytes(8), r"num_hash_functions must be in \[1, 65536\], got 0"),
        (b"\x08\x81\x80\x04\x1a\x08" + bytes(8), "got 65537"),
        (b"\x08" + b"\xff" * 9 + b"\x01\x1a\x08" + bytes(8), "got 18446744073709551615"),
        (b"\x08" + b"\xff" * 10 + b"\x01", "a varint longer than 10 bytes"),
        (b"\x08\x03", "the bitset must hold 1 to 33554431 64-bit words, got 0"),
        (b"\x08\x03\x1a\x0c" + bytes(12), "utf8bitset of 12 bytes, not whole 64-bit words"),
        (b"\x08\x03\x1a\x08" + bytes(8) + b"\x11" + bytes(8), "words in both bitset and utf8bitset"),
        (b"\x08\x03\x1a\xff\xff\xff\xff\x0f", "field 3 claims 4294967295 bytes but 0 are left"),
        (b"\x08\x03\x12\x05" + bytes(5), "packed bitset of 5 bytes"),
        (b"\x08\x03\x0b", "wire type 3, which ORC does not use"),
        (b"\x08\x03\x11" + bytes(5), "truncated while reading a fixed64 field"),
        (b"\x00\x03", "field number 0 is invalid"),
        (b"\x0a\x01\x03\x1a\x08" + bytes(8), "num_hash_functions is not a varint"),
    ],
)
def test_hostile_messages_are_refused_with_the_reason(message, why):
    with pytest.raises(ValueError, match=why):
        OrcBloomFilter.from_orc_bytes(message)


def test_a_bitset_beyond_orcs_int_bit_count_is_refused_before_allocating():
    # 2**25 words = 2**31 bits: ORC's numBits (a Java int) cannot hold it. The
    # length is checked against the bytes present, and the word count
    # against ORC's bound, before the words are allocated.
    claim = b"\x08\x03\x1a" + bytes([0x80, 0x80, 0x80, 0x80, 0x01])  # 2**28 bytes
    with pytest.raises(ValueError, match="claims 268435456 bytes but 0 are left"):
        OrcBloomFilter.from_orc_bytes(claim)
    with pytest.raises(ValueError, match="got 33554432"):
        OrcBloomFilter.from_orc_bytes(b"\x08\x03\x1a\x80\x80\x80\x80\x01" + bytes(2**28))


def test_packed_bitsets_and_unknown_fields_read_like_protobuf():
    f = OrcBloomFilter.from_orc_bytes(small_message())
    words = small_message()[4:]  # after the tag, k, utf8bitset tag and its 1-byte length
    assert len(words) == f.nbytes
    packed = b"\x08" + bytes([f.num_hashes]) + b"\x12" + bytes([len(words)]) + words
    assert OrcBloomFilter.from_orc_bytes(packed) == f
    extra = b"\x48\x05" + small_message() + b"\x25" + bytes(4)  # field 9 varint, field 4 fixed32
    assert OrcBloomFilter.from_orc_bytes(extra) == f
    assert OrcBloomFilter.from_orc_bytes(small_message(legacy_bitset=True)) == f


def test_orc_hashing_takes_no_secret_key_and_names_the_choices():
    with pytest.raises(ValueError, match="secret_key is not supported with hashing='orc'"):
        bloomkit.BloomFilter(100, hashing="orc", secret_key=b"k" * 32)
    with pytest.raises(ValueError, match="hashing must be 'bloomkit', 'spark' or 'orc', got 'hive'"):
        bloomkit.BloomFilter(100, hashing="hive")
    with pytest.raises(TypeError, match="OrcBloomFilter has no secret_key \\(ORC's hashing is not keyed\\)"):
        OrcBloomFilter.from_bytes(small_message(), secret_key=b"k" * 32)
