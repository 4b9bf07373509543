"""One meaning for every key, whatever the entry point (docs/DESIGN.md, "Keys")."""

import numpy as np
import pytest

import bloomkit


def fresh():
    return bloomkit.BloomFilter(10_000, 0.01, seed=3)


def positions_of(key):
    """The filter bits one key sets, seen through a fresh filter's bytes."""
    f = fresh()
    f.add(key)
    return f.to_bytes()


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_numpy_integers_are_the_same_key_as_python_ints(dtype):
    info = np.iinfo(dtype)
    for value in {0, 5, int(info.max), int(info.min)}:
        expected = positions_of(value)
        assert positions_of(dtype(value)) == expected
        f = fresh()
        f.update(np.array([value], dtype=dtype))
        assert f.to_bytes() == expected


def test_equal_keys_across_kinds_hit_the_same_bits():
    assert positions_of(5) == positions_of(np.int32(5)) == positions_of(np.uint64(5))
    assert positions_of(-1) == positions_of(2**64 - 1) == positions_of(np.int64(-1))
    assert positions_of("é") == positions_of("é".encode()) == positions_of(bytearray("é".encode()))
    assert positions_of("é") == positions_of(memoryview("é".encode())) == positions_of(np.str_("é"))
    assert positions_of(5) == positions_of((5).to_bytes(8, "little"))


def key_collections():
    strings = [
        "",
        "a",
        "é",
        "日本",
        "🙂x",
        "https://example.com/?q=1",
        "trailing\x00nul\x00",
        "abcdé",
        "abcdefgh日本ijk",
        "https://ex.com/é/日本/🙂/end-of-path",
    ]
    blobs = [s.encode() for s in strings] + [b"\x00", b"ab\x00\x00"]
    ints = [0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 12345]
    return strings, blobs, ints


def expected_results(filter_keys, probe_keys):
    """Scalar reference: add one key at a time, probe one key at a time."""
    f = fresh()
    added = [f.add(k) for k in filter_keys]
    return f, added, [k in f for k in probe_keys]


def test_batch_results_equal_scalar_results_for_every_key_kind():
    strings, blobs, ints = key_collections()
    mixed = strings + blobs + ints + strings  # repeats exercise test-and-set
    f_ref, added_ref, _ = expected_results(mixed, [])
    f = fresh()
    assert f.add_many(mixed).tolist() == added_ref
    assert f == f_ref

    probes = mixed + ["absent", b"absent", 99]
    expected = [k in f_ref for k in probes]
    assert f.contains_many(probes).tolist() == expected
    assert f.contains_many(tuple(probes)).tolist() == expected
    assert f.contains_many(iter(probes)).tolist() == expected
    assert f.contains_many(np.array(probes, dtype=object)).tolist() == expected


def test_numpy_string_arrays_match_scalar_keys():
    strings, blobs, _ = key_collections()
    # NumPy strips trailing NULs from S and U elements; the keys are what it shows.
    f_ref = fresh()
    for s in np.array(strings):
        f_ref.add(str(s))
    for b in np.array(blobs):
        f_ref.add(bytes(b))
    f = fresh()
    f.update(np.array(strings))
    f.update(np.array(blobs))
    assert f == f_ref
    assert f.contains_many(np.array(strings)).all()
    assert f.contains_many(np.array(blobs, dtype="S80")).all()


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_numpy_integer_arrays_match_scalar_ints_including_strided(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    values = rng.integers(int(info.min), int(info.max), size=500, dtype=dtype, endpoint=True)
    f_ref = fresh()
    added_ref = [f_ref.add(int(v)) for v in values]
    f = fresh()
    assert f.add_many(values).tolist() == added_ref
    assert f == f_ref
    strided = np.repeat(values, 2)[::2]  # non-contiguous view, same values
    assert not strided.flags.c_contiguous
    assert f.contains_many(strided).all()
    swapped = values.astype(values.dtype.newbyteorder(">"))
    assert f.contains_many(swapped).all()


def test_integer_lists_match_arrays():
    values = list(range(-50, 50)) + [2**64 - 1, 2**63]
    f = fresh()
    f.update(values)
    g = fresh()
    g.update(np.array(values[:-2], dtype=np.int64))
    g.update(np.array(values[-2:], dtype=np.uint64))
    assert f == g


def test_pyarrow_arrays_match_python_keys():
    pa = pytest.importorskip("pyarrow")
    strings = ["a", "é", "", "https://x/1"] * 3
    for array in [pa.array(strings), pa.array(strings, pa.large_string()), pa.array(strings).slice(1, 6)]:
        f_ref, g = fresh(), fresh()
        f_ref.update(array.to_pylist())
        g.update(array)
        assert g == f_ref
    blobs = [s.encode() for s in strings]
    for array in [pa.array(blobs, pa.binary()), pa.array(blobs, pa.large_binary())]:
        f_ref, g = fresh(), fresh()
        f_ref.update(blobs)
        g.update(array)
        assert g == f_ref
    ints = pa.array([1, -2, 3], pa.int32())
    f_ref, g = fresh(), fresh()
    f_ref.update([1, -2, 3])
    g.update(ints)
    assert g == f_ref
    chunked = pa.chunked_array([["a", "b"], ["a", "c"]])
    assert fresh().add_many(chunked).tolist() == [False, False, True, False]
    assert fresh().add_many(pa.array(["a", "b"]).dictionary_encode()).tolist() == [False, False]


def test_pandas_series_are_batches():
    pd = pytest.importorskip("pandas")
    f = fresh()
    f.update(pd.Series(["a", "b"]))
    assert f.contains_many(pd.Series(["a", "b", "c"])).tolist() == [True, True, False]
    f.update(pd.Series([1, 2], dtype="int64"))
    assert f.contains_many(pd.Series([1, 2, 3])).tolist() == [True, True, False]


BAD_SCALARS = [
    (True, TypeError, "unsupported type 'bool'"),
    (None, TypeError, "unsupported type 'NoneType'"),
    (np.complex128(1), TypeError, "unsupported type 'complex128'"),
    (np.bool_(True), TypeError, "unsupported type 'bool"),
    (["a"], TypeError, "unsupported type 'list'"),
    (2**64, ValueError, r"outside \[-2\*\*63, 2\*\*64\)"),
    (-(2**63) - 1, ValueError, r"outside \[-2\*\*63, 2\*\*64\)"),
    ("\udc80", ValueError, "cannot be encoded as UTF-8"),
    (memoryview(b"abcdef")[::2], ValueError, "non-contiguous"),
]


@pytest.mark.parametrize("key, error, match", BAD_SCALARS)
def test_bad_scalar_keys_raise_and_change_nothing(key, error, match):
    f = fresh()
    f.update(["keep", 1])
    before = f.to_bytes()
    for operation in (f.add, f.contains, f.__contains__):
        with pytest.raises(error, match=match):
            operation(key)
    with pytest.raises(error, match=match):
        bloomkit.hash128(key)
    assert f.to_bytes() == before


@pytest.mark.parametrize("key, error, match", BAD_SCALARS)
def test_a_bad_key_inside_a_batch_names_its_index_and_inserts_nothing(key, error, match):
    f = fresh()
    f.update(["keep"])
    before = f.to_bytes()
    batch = ["new1", 7, b"new2", key, "new3"]
    for operation in (f.add_many, f.update, f.contains_many):
        with pytest.raises(error, match="key at index 3"):
            operation(batch)
        with pytest.raises(error, match="key at index 3"):
            operation(np.array(batch, dtype=object))
    assert f.to_bytes() == before


@pytest.mark.parametrize(
    "batch, error, match",
    [
        (np.zeros((2, 2), dtype=np.int64), ValueError, "1-D"),
        (np.array(5), ValueError, "1-D"),
        (np.zeros(3, dtype=np.float16), TypeError, "float key width of 2 bytes"),
        (np.zeros(3, dtype=np.complex64), TypeError, "dtype 'complex64'"),
        (np.zeros(3, dtype=bool), TypeError, "dtype 'bool'"),
        (np.array(["a", "\udc80"]), ValueError, "key at index 1"),
        (np.array(["a", "x", "b", "\U0010ffff", "\ud800", "y"])[::2], ValueError, "key at index 2"),
        ("abc", TypeError, "single 'str'"),
        (b"abc", TypeError, "single 'bytes'"),
        (5, TypeError, "iterable of keys"),
        (None, TypeError, "iterable of keys"),
    ],
)
def test_bad_batches_raise_and_change_nothing(batch, error, match):
    f = fresh()
    f.update(["keep"])
    before = f.to_bytes()
    for operation in (f.add_many, f.update, f.contains_many):
        with pytest.raises(error, match=match):
            operation(batch)
    assert f.to_bytes() == before


def test_pyarrow_nulls_are_rejected_before_inserting():
    pa = pytest.importorskip("pyarrow")
    f = fresh()
    before = f.to_bytes()
    with pytest.raises(ValueError, match="key at index 2 is null"):
        f.update(pa.array(["a", "b", None]))
    with pytest.raises(TypeError, match="pyarrow key type"):
        f.update(pa.array([[1]]))
    assert f.to_bytes() == before


def test_mutable_buffers_in_a_batch_are_copied_before_hashing():
    buffer = bytearray(b"original")
    f = fresh()
    f.update([buffer, "x"])
    buffer[:] = b"changed!"
    assert f.contains_many([b"original", b"changed!"]).tolist() == [True, False]


def test_empty_batches():
    f = fresh()
    assert f.add_many([]).tolist() == []
    assert f.contains_many(np.array([], dtype=np.uint64)).tolist() == []
    assert f.contains_many(np.array([], dtype="U3")).tolist() == []
    f.update(())
    assert f.fill_ratio == 0.0
