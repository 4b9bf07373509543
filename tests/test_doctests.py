"""The examples in docstrings are run, so they cannot drift from the code."""

import doctest
import importlib

import pytest

from bloomkit import _types

# Every filter type's module (bloomkit/_types.py) and the modules of the package's functions.
MODULES = [
    "bloomkit",
    "bloomkit.calc",
    *(row.module for row in _types.ROWS),
    "bloomkit.dedup",
    "bloomkit._window",
    "bloomkit.parquet",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
