"""pandas and NumPy helpers: ``dedup_mask`` and ``contains_many`` on Series."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bloomkit
from bloomkit import _batch, _core

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

STRING_DTYPES = ["object", "string[python]", "string[pyarrow]", "str"]


def exact_first(values) -> np.ndarray:
    return ~pd.Series(list(values)).duplicated().to_numpy()


def sample_strings(rows=20_000, distinct=8_000, seed=0):
    rng = np.random.default_rng(seed)
    return [f"https://example.com/item/{i}" for i in rng.integers(0, distinct, size=rows)]


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_dedup_mask_on_string_series(dtype):
    values = sample_strings()
    series = pd.Series(values, dtype=dtype)
    mask = bloomkit.dedup_mask(series, error_rate=1e-9)
    # A pandas input gives a boolean Series on the input's index (like duplicated()).
    assert isinstance(mask, pd.Series) and mask.dtype == bool and mask.shape == (len(values),)
    assert mask.index.equals(series.index)
    assert np.array_equal(mask, exact_first(values))


@pytest.mark.parametrize("dtype", ["int64", "uint32", "Int64", "int64[pyarrow]"])
def test_dedup_mask_on_integer_series(dtype):
    values = np.random.default_rng(1).integers(0, 5_000, size=20_000)
    mask = bloomkit.dedup_mask(pd.Series(values, dtype=dtype), error_rate=1e-9)
    assert np.array_equal(mask, exact_first(values))


def test_dedup_mask_on_arrays_lists_and_indexes():
    values = sample_strings(5_000, 2_000, seed=2)
    expected = exact_first(values)
    for container in (values, np.array(values), np.array(values, dtype=object), pd.Index(values), pa.array(values)):
        assert np.array_equal(bloomkit.dedup_mask(container, error_rate=1e-9), expected), type(container)
    assert bloomkit.dedup_mask([]).shape == (0,)
    assert bloomkit.dedup_mask(pd.Series([], dtype="string[pyarrow]")).dtype == bool


def test_dedup_mask_on_dataframe_rows():
    frame = pd.DataFrame({"url": ["a", "b", "a", "a", "b"], "status": [200, 200, 200, 404, 200]})
    mask = bloomkit.dedup_mask(frame)
    assert mask.tolist() == (~frame.duplicated()).tolist() == [True, True, False, True, False]


def test_dedup_mask_is_one_call_into_the_core(monkeypatch):
    calls = []
    original = bloomkit.BloomFilter._add_many

    def counting(self, batch):
        calls.append(len(batch) if hasattr(batch, "__len__") else None)
        return original(self, batch)

    monkeypatch.setattr(bloomkit.BloomFilter, "_add_many", counting)
    values = sample_strings(30_000, 10_000)
    for dtype in STRING_DTYPES:
        calls.clear()
        bloomkit.dedup_mask(pd.Series(values, dtype=dtype))
        assert calls == [30_000], dtype


@pytest.mark.statistical
def test_dedup_mask_false_drops_within_bound():
    rows, distinct_pool, error_rate = 300_000, 200_000, 0.01
    values = np.random.default_rng(5).integers(0, distinct_pool, size=rows)
    mask = bloomkit.dedup_mask(pd.Series(values), error_rate=error_rate)
    exact = exact_first(values)
    assert not (mask & ~exact).any()  # a repeat is never kept
    params = bloomkit.bloom_params(rows, error_rate)
    rates = [
        bloomkit.calc.layout_false_positive_rate(params.layout, params.num_bits, i, params.num_hashes)
        for i in range(int(exact.sum()))
    ]
    mean, sigma = sum(rates), math.sqrt(sum(p * (1 - p) for p in rates))
    dropped = int((exact & ~mask).sum())
    assert mean - 5 * sigma <= dropped <= mean + 5 * sigma, (dropped, mean, sigma)


def test_dedup_mask_uses_the_given_capacity():
    values = [f"k{i}" for i in range(20_000)]  # all distinct
    assert bloomkit.dedup_mask(values, error_rate=1e-6).all()
    crowded = bloomkit.dedup_mask(values, capacity=100, error_rate=0.01)
    assert crowded.mean() < 0.5  # a filter sized for 100 keys fills up and drops new ones


def test_dedup_mask_rejects_missing_values():
    with pytest.raises(TypeError, match="key at index 1 has unsupported type 'NoneType'"):
        bloomkit.dedup_mask(pd.Series(["a", None], dtype="object"))
    with pytest.raises(ValueError, match="key at index 1 is null"):
        bloomkit.dedup_mask(pd.Series(["a", None], dtype="string[pyarrow]"))


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_contains_many_takes_a_series(dtype):
    f = bloomkit.BloomFilter(10_000, 1e-6)
    f.update([f"in-{i}" for i in range(1_000)])
    keys = [f"in-{i}" for i in range(0, 2_000, 7)] + [f"out-{i}" for i in range(300)]
    expected = np.array([key.startswith("in-") and int(key[3:]) < 1_000 for key in keys])
    series = pd.Series(keys, dtype=dtype, index=np.arange(len(keys)) * 3)  # the index plays no part
    assert np.array_equal(f.contains_many(series), expected)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint64", "Int32", "int64[pyarrow]"])
def test_contains_many_takes_an_integer_series(dtype):
    f = bloomkit.BloomFilter(10_000, 1e-6)
    f.update(list(range(0, 100, 2)))  # Python ints: the same keys as any NumPy/pandas integer
    series = pd.Series(np.arange(100), dtype=dtype)
    assert np.array_equal(f.contains_many(series), np.arange(100) % 2 == 0)


def test_arrow_backed_strings_take_the_arrow_path():
    # No Python str per row: the column's Arrow buffers go to C++ as an OffsetBatch.
    for series in (
        pd.Series(["a", "b"], dtype="string[pyarrow]"),
        pd.Series(["a", "b"], dtype=pd.ArrowDtype(pa.string())),
    ):
        batches = _batch.key_batches(series)
        assert [type(batch) for batch in batches] == [_core.OffsetBatch]
