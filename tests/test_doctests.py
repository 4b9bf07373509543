"""The examples in docstrings are run, so they cannot drift from the code."""

import doctest
import importlib

import pytest

MODULES = [
    "bloomkit",
    "bloomkit.calc",
    "bloomkit.bloom",
    "bloomkit.counting_bloom",
    "bloomkit.scalable_bloom",
    "bloomkit.cuckoo",
    "bloomkit.dedup",
    "bloomkit._window",
    "bloomkit.rotating_bloom",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
