import math

import pytest

import bloomkit
from bloomkit import calc


def test_seed_example_from_design():
    params = bloomkit.bloom_params(100, 0.05, "classic")
    assert params.num_hashes == 4
    assert params.num_bits == 624
    assert params.nbytes == 80
    assert params.bits_per_key == pytest.approx(6.24)
    assert params.error_rate == pytest.approx(calc.false_positive_rate(624, 100, 4))
    assert abs(params.error_rate - 0.05) < 0.001


@pytest.mark.parametrize("n, p", [(1000, 0.01), (10**6, 1e-3), (10**9, 1e-4), (12345, 0.2)])
def test_bloom_params_follow_the_formulas(n, p):
    params = calc.bloom_params(n, p, "classic")
    assert params.num_bits == math.ceil(-n * math.log(p) / math.log(2) ** 2)
    assert params.num_hashes == max(1, round(params.num_bits / n * math.log(2)))
    # The predicted rate with an integer k stays within 2 % of the request.
    assert params.error_rate == pytest.approx(p, rel=0.02)


def test_one_key_filter_is_valid():
    params = calc.bloom_params(1, 0.5, "classic")
    assert (params.num_bits, params.num_hashes) == (2, 1)
    assert params.error_rate < 0.5


def test_false_positive_rate_formula():
    assert calc.false_positive_rate(1000, 0, 3) == 0.0
    assert calc.false_positive_rate(1000, 100, 3) == pytest.approx((1 - math.exp(-0.3)) ** 3)
    with pytest.raises(ValueError, match="num_bits"):
        calc.false_positive_rate(0, 1, 1)
    with pytest.raises(ValueError, match="num_hashes"):
        calc.false_positive_rate(10, 1, 0)


@pytest.mark.parametrize("n, p", [(100, 0.05), (1000, 0.01), (10**6, 1e-3)])
def test_bloom_capacity_inverts_bloom_params(n, p):
    m = calc.bloom_params(n, p, "classic").num_bits
    capacity = calc.bloom_capacity(m, p)
    # It is the largest count whose predicted rate stays at or under p.
    k = max(1, round(m / capacity * math.log(2)))
    assert calc.false_positive_rate(m, capacity, k) <= p
    k_next = max(1, round(m / (capacity + 1) * math.log(2)))
    assert calc.false_positive_rate(m, capacity + 1, k_next) > p
    assert abs(capacity - n) <= 0.03 * n + 1


@pytest.mark.parametrize(
    "capacity, error_rate, error, match",
    [
        (0, 0.01, ValueError, "capacity"),
        (-5, 0.01, ValueError, "capacity"),
        (1.5, 0.01, ValueError, "capacity"),
        ("100", 0.01, TypeError, "capacity"),
        (True, 0.01, TypeError, "capacity"),
        (100, 0.0, ValueError, "error_rate"),
        (100, 1.0, ValueError, "error_rate"),
        (100, float("nan"), ValueError, "error_rate"),
        (100, "0.1", TypeError, "error_rate"),
        (100, 1e-30, ValueError, "hash functions"),
    ],
)
def test_bloom_params_rejects_impossible_parameters(capacity, error_rate, error, match):
    with pytest.raises(error, match=match):
        calc.bloom_params(capacity, error_rate, "classic")


def test_integral_float_capacity_is_accepted():
    assert calc.bloom_params(1e6, 0.01) == calc.bloom_params(1_000_000, 0.01)
