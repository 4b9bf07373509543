"""BloomFilter specifics; the behaviour every filter shares is in tests/test_contract.py."""

import numpy as np
import pytest

import bloomkit
from bloomkit import BloomFilter
from support import BLOOM_SUMMARY_LABELS, run_threads


def test_add_is_test_and_set():
    f = BloomFilter(1000, 0.01)
    assert f.add("x") is False
    assert f.add("x") is True
    assert "x" in f and f.contains("x")
    assert "y" not in f


def test_add_many_has_sequential_semantics():
    f = BloomFilter(1000, 0.01)
    result = f.add_many(["x", "x", "y", b"x", 1, np.uint8(1)])
    assert result.dtype == np.bool_
    assert result.tolist() == [False, True, False, True, False, True]
    assert f.update(["z"]) is None
    assert f.contains_many(["x", "y", "z", "w"]).tolist() == [True, True, True, False]


def test_parameters_are_exposed():
    f = BloomFilter(100, 0.05, seed=9, layout="classic")
    params = bloomkit.bloom_params(100, 0.05, "classic")
    assert (f.num_bits, f.num_hashes) == (params.num_bits, params.num_hashes) == (624, 4)
    assert (f.capacity, f.error_rate, f.seed) == (100, 0.05, 9)
    assert f.nbytes == params.nbytes == 80


@pytest.mark.parametrize("layout", bloomkit.calc.LAYOUTS)
def test_fill_ratio_estimated_fpr_and_len(layout):
    f = BloomFilter(10_000, 0.01, layout=layout)
    assert (f.fill_ratio, f.estimated_fpr(), len(f)) == (0.0, 0.0, 0)
    f.update(range(5000))
    assert 0 < f.fill_ratio < 1
    if layout == "classic":
        assert f.estimated_fpr() == pytest.approx(f.fill_ratio**f.num_hashes)
    else:
        # fill ** k ignores the uneven block loads and understates a blocked filter's rate.
        model = bloomkit.calc.layout_false_positive_rate(layout, f.num_bits, len(f), f.num_hashes)
        assert f.estimated_fpr() == pytest.approx(model)
        assert f.estimated_fpr() > f.fill_ratio**f.num_hashes
    assert abs(len(f) - 5000) < 150


@pytest.mark.parametrize("layout", bloomkit.calc.LAYOUTS)
def test_estimated_fpr_matches_the_measured_rate(layout):
    f = BloomFilter(20_000, 0.01, layout=layout)
    f.update(np.arange(20_000, dtype=np.uint64))
    absent = np.arange(1 << 40, (1 << 40) + 400_000, dtype=np.uint64)
    measured = np.count_nonzero(f.contains_many(absent)) / len(absent)
    predicted = f.estimated_fpr()
    sigma = (predicted * (1 - predicted) / len(absent)) ** 0.5
    # len(f) itself carries ~1 % noise at 20,000 keys: allow that plus 5 sigma.
    assert abs(measured - predicted) <= 0.05 * predicted + 5 * sigma, (measured, predicted)


def test_from_params():
    f = BloomFilter.from_params(1 << 20, 5, seed=3)
    assert (f.num_bits, f.num_hashes, f.seed) == (1 << 20, 5, 3)
    assert f.capacity == round((1 << 20) * 0.6931471805599453 / 5)
    assert f.error_rate == pytest.approx(bloomkit.false_positive_rate(1 << 20, f.capacity, 5))
    f.update(range(100))
    assert f.contains_many(range(100)).all()
    with pytest.raises(ValueError, match="num_hashes"):
        BloomFilter.from_params(1000, 0)
    with pytest.raises(ValueError, match="num_hashes"):
        BloomFilter.from_params(1000, 65)
    with pytest.raises(ValueError, match="num_bits"):
        BloomFilter.from_params(0, 3)
    with pytest.raises(TypeError, match="num_hashes"):
        BloomFilter.from_params(1000, 2.0)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((0,), {}, ValueError, "capacity"),
        ((-1,), {}, ValueError, "capacity"),
        ((None,), {}, TypeError, "capacity"),
        ((100, 0), {}, ValueError, r"error_rate must be in \(0, 1\)"),
        ((100, 1.5), {}, ValueError, "error_rate"),
        ((100, 0.01), {"seed": -1}, ValueError, r"seed must be in \[0, 2\*\*32\)"),
        ((100, 0.01), {"seed": 2**32}, ValueError, "seed"),
        ((100, 0.01), {"seed": "s"}, TypeError, "seed"),
    ],
)
def test_constructor_rejects_impossible_parameters(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        BloomFilter(*args, **kwargs)


def build(keys, capacity=20_000, seed=0, layout=None):
    f = BloomFilter(capacity, 0.01, seed=seed, layout=layout)
    f.update(keys)
    return f


def test_union_equals_filter_of_union_of_keys_byte_for_byte():
    a_keys = [f"a{i}" for i in range(5000)]
    b_keys = [f"b{i}" for i in range(5000)] + a_keys[:1000]
    a, b = build(a_keys), build(b_keys)
    expected = build(a_keys + b_keys)
    assert (a | b).to_bytes() == expected.to_bytes()
    assert a.union(b) == expected
    c = a.copy()
    c |= b
    assert c == expected
    assert a == build(a_keys)  # operands untouched


def test_intersection_keeps_common_keys():
    common = [f"c{i}" for i in range(2000)]
    a = build(common + [f"a{i}" for i in range(3000)])
    b = build(common + [f"b{i}" for i in range(3000)])
    both = a & b
    assert both.contains_many(common).all()
    assert a.intersection(b) == both
    c = a.copy()
    c &= b
    assert c == both


@pytest.mark.parametrize(
    "other",
    [
        BloomFilter(20_000, 0.001, layout="classic"),
        BloomFilter(20_001, 0.01, layout="classic"),
        BloomFilter(20_000, 0.01, seed=1, layout="classic"),
        BloomFilter.from_params(BloomFilter(20_000, 0.01, layout="classic").num_bits, 3),
    ],
)
def test_incompatible_union_and_intersection_raise_value_error(other):
    a = build(["x"], layout="classic")
    before = a.to_bytes()
    message = "equal num_bits, num_hashes and seed"
    with pytest.raises(ValueError, match=message):
        a | other
    with pytest.raises(ValueError, match=message):
        a & other
    with pytest.raises(ValueError, match=message):
        a.union(other)
    with pytest.raises(ValueError, match=message):
        a.intersection(other)
    with pytest.raises(ValueError):
        a |= other
    with pytest.raises(ValueError):
        bloomkit.estimate_union_size(a, other)
    assert a.to_bytes() == before


def test_set_algebra_rejects_non_filters():
    a = build(["x"])
    with pytest.raises(TypeError):
        a | {"x"}
    with pytest.raises(TypeError, match="BloomFilter"):
        a.union("x")
    with pytest.raises(TypeError, match="BloomFilter"):
        bloomkit.jaccard(a, "x")


def test_repr_is_one_line_and_html_has_every_field():
    f = build([f"k{i}" for i in range(1000)])
    text = repr(f)
    assert "\n" not in text and text.startswith("<BloomFilter ")
    for field in (
        "capacity=20,000",
        "error_rate=0.01",
        f"num_bits={f.num_bits:,}",
        f"num_hashes={f.num_hashes}",
        "estimated_count=",
    ):
        assert field in text
    html = f._repr_html_()
    for label in BLOOM_SUMMARY_LABELS:
        assert f"<th style='text-align:left'>{label}</th>" in html
    assert f"{len(f):,}" in html


def test_html_stays_correct_after_union_and_load():
    a, b = build([f"a{i}" for i in range(4000)]), build([f"b{i}" for i in range(4000)])
    merged = a | b
    assert f"{len(merged):,}" in merged._repr_html_()
    assert abs(len(merged) - 8000) < 300
    loaded = BloomFilter.from_bytes(merged.to_bytes())
    assert loaded._repr_html_() == merged._repr_html_()


def test_user_subclasses_keep_the_fast_paths_and_round_trip():
    class Seen(BloomFilter):
        pass

    f = Seen(1000, 0.01)
    assert f.add("a") is False and "a" in f and f.contains("a")
    assert type(f.copy()) is Seen and type(Seen.from_bytes(f.to_bytes())) is Seen
    assert Seen.__contains__(f, "a") is True


def test_an_instance_whose_init_never_ran_raises_instead_of_crashing():
    hollow = BloomFilter.__new__(BloomFilter)
    for operation in (lambda: "a" in hollow, lambda: hollow.add("a"), lambda: hollow.contains("a")):
        with pytest.raises(TypeError, match="not initialised"):
            operation()


def test_union_while_another_thread_inserts():
    a = BloomFilter(500_000, 0.01)
    b = BloomFilter(500_000, 0.01)
    b.update(np.arange(100_000, dtype=np.int64))
    keys = np.arange(100_000, 400_000, dtype=np.int64)

    def writer():
        for j in range(0, len(keys), 5000):
            a.update(keys[j : j + 5000])

    def unioner():
        for _ in range(50):
            a.__ior__(b)

    run_threads([writer, unioner])
    assert a.contains_many(keys).all()
    assert a.contains_many(np.arange(100_000, dtype=np.int64)).all()
