"""Every limit is written once, in the core (sizing.hpp, exported through _core): the Python
checks accept exactly what the core accepts and say it in the core's words, and no Python
module carries its own copy of the number."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bloomkit
from bloomkit import _capacity, _core, calc, counting_bloom
from bloomkit.redis import _sized_geometry

PACKAGE = Path(bloomkit.__file__).resolve().parent


def core_error(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


def test_python_limits_are_the_cores():
    limits = _core.LIMITS
    assert calc.MAX_HASHES == _core.MAX_HASHES == limits["max_hashes"]
    assert calc.COUNTER_WIDTHS == _core.COUNTER_WIDTHS == tuple(limits["counter_widths"])
    assert calc.DEFAULT_COUNTER_BITS == _core.DEFAULT_COUNTER_BITS == bloomkit.CountingBloomFilter(10).counter_bits
    assert calc.MAX_CAPACITY == limits["max_capacity"]
    assert counting_bloom.COUNTER_WIDTHS is calc.COUNTER_WIDTHS
    assert _capacity.SINGLE_ADD_CHECK_INTERVAL == limits["capacity_check_interval"]


def test_the_hash_limit_is_checked_at_the_cores_bound_in_the_cores_words():
    top = calc.MAX_HASHES
    over = core_error(lambda: _core.BloomCore(1024, top + 1, 0, 10, 0.5, "classic"))
    assert over == f"num_hashes must be in [1, {top}], got {top + 1}"
    assert bloomkit.BloomFilter.from_params(1024, top).num_hashes == top
    assert _sized_geometry(100, 0.5, 0, None, top).num_hashes == top
    for check in (
        lambda: bloomkit.BloomFilter.from_params(1024, top + 1),
        lambda: _sized_geometry(100, 0.5, 0, None, top + 1),
        lambda: calc.classic_params_with_hashes(100, 0.5, top + 1),
        lambda: _core.classic_size_with_hashes(100, 0.5, top + 1),
    ):
        assert core_error(check) == over
    with pytest.raises(TypeError, match=rf"num_hashes must be an int in \[1, {top}\], got float"):
        calc.check_num_hashes(2.0)


@pytest.mark.parametrize("width", range(0, 34))
def test_counter_widths_accepted_exactly_where_the_core_accepts_them(width):
    def core():
        return _core.CountingBloomCore(64, 1, 0, 10, 0.5, width)

    try:
        core()
    except ValueError as error:
        with pytest.raises(ValueError) as python:
            calc.check_counter_bits(width)
        assert str(python.value) == str(error)
        with pytest.raises(ValueError, match=f"got {width}$"):
            bloomkit.CountingBloomFilter(10, counter_bits=width)
    else:
        assert calc.check_counter_bits(width) == width and width in calc.COUNTER_WIDTHS
        assert bloomkit.CountingBloomFilter(10, counter_bits=width).counter_bits == width


def test_capacity_bound_is_the_cores():
    top = calc.MAX_CAPACITY
    assert calc.check_capacity(top - 1) == top - 1
    with pytest.raises(ValueError) as below:
        calc.check_capacity(top)
    assert str(below.value) == f"capacity must be below {calc.power_of_two(top)}, got {top}"
    assert "capacity must be in [1, 2**63)" in core_error(lambda: _core.classic_size_with_hashes(top, 0.5, 1))
    assert calc.power_of_two(top) == "2**63" and calc.power_of_two(3 * 2**40) == "3,298,534,883,328"


# (capacity, error_rate, k, bits) from the Python formula the Redis filter used before its
# sizing moved into the core, m = ceil(-k n / log1p(-p ** (1 / k))): stored filters must keep
# their geometry, so the core's function must give the same bits.
REDIS_SIZES = [
    (1_000_000, 0.005, 2, 27_272_050),
    (1_000_000, 0.005, 1, 199_499_583),
    (1_000_000, 0.01, 3, 12_364_167),
    (100, 0.5, 64, 1_413),
    (1_000_000_000, 1e-6, 7, 46_790_761_706),
    (1, 0.999, 1, 1),
    (2**40, 0.01, 2, 20_871_416_980_282),
]


@pytest.mark.parametrize("capacity, error_rate, num_hashes, num_bits", REDIS_SIZES)
def test_redis_sizing_with_chosen_hashes_is_the_cores_and_unchanged(capacity, error_rate, num_hashes, num_bits):
    geometry = _sized_geometry(capacity, error_rate, 7, None, num_hashes)
    assert (geometry.num_bits, geometry.num_hashes, geometry.capacity) == (num_bits, num_hashes, capacity)
    params = calc.classic_params_with_hashes(capacity, error_rate, num_hashes)
    assert params.num_bits == num_bits and params.layout == "classic"
    # The prediction at capacity meets the request, and one bit fewer would not.
    assert params.error_rate <= error_rate
    if num_bits > 1:
        assert calc.false_positive_rate(num_bits - 1, capacity, num_hashes) > error_rate * (1 - 1e-12)


def test_redis_sizing_too_large_is_the_cores_message():
    message = core_error(lambda: _sized_geometry(2**62, 1e-12, 0, None, 1))
    assert message == (
        "capacity 4,611,686,018,427,387,904 at error_rate 1e-12 with 1 hashes needs "
        "4,611,686,018,425,082,060,990,786,306,048 bits; at most 2**63 - 1"
    )


# Literals that would restate a core limit in Python: its value in code, or its text in a message.
RESTATED_STRINGS = ("[1, 64]", "4, 8 or 16", "below 2**63", "2**48 buckets")
RESTATED_VALUES = (65536, (4, 8, 16))


def code_constants(tree: ast.AST):
    """Constants in code (docstrings left out: they describe, and the docs tests check them)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            yield node.lineno, node.value
        elif isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
            yield node.lineno, tuple(e.value for e in node.elts)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_python_module_restates_a_core_limit(path):
    found = [
        (line, value)
        for line, value in code_constants(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(value, str) and any(text in value for text in RESTATED_STRINGS))
        or (not isinstance(value, (str, bool)) and value in RESTATED_VALUES)
    ]
    assert not found, f"{path.name} restates a limit of the core (read it from bloomkit.calc): {found}"
