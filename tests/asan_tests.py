"""The test files ``.ci/asan.sh`` runs against the ASan + UBSan build.

The tests that reach C++ with hostile, concurrent or misused input (loaders,
keys, the contract suite over every registered type, mapped files, misuse,
saves, fuzz regressions), plus each framed type's own tests: the
``tests/test_<row name>.py`` of every framed row of the registry
(python/bloomkit/_types.py), so a new type cannot be left out. Run as a
script (what asan.sh does, under the sanitized build) it prints the file
names; a framed row without its test file stops the run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bloomkit import _types

TESTS = Path(__file__).resolve().parent
ALWAYS = (
    "test_loader_safety.py",
    "test_misuse.py",
    "test_binary_keys.py",
    "test_fuzz_regressions.py",
    "test_format.py",
    "test_keys.py",
    "test_contract.py",
    "test_concurrency.py",
    "test_mmap.py",
    "test_save.py",
    "test_error_messages.py",
)


def test_files(rows=None) -> list:
    """``ALWAYS`` and ``test_<name>.py`` of every framed row (``rows``: the registry's by default)."""
    rows = _types.FRAMED if rows is None else rows
    missing = [row.name for row in rows if not (TESTS / f"test_{row.name}.py").is_file()]
    if missing:
        raise LookupError(f"asan: no tests/test_<name>.py for the registered type(s) {missing}")
    return [*ALWAYS, *(f"test_{row.name}.py" for row in rows)]


test_files.__test__ = False  # a helper, not a test, for pytest's collection


if __name__ == "__main__":
    try:
        print(" ".join(test_files()))
    except LookupError as error:
        sys.exit(str(error))
