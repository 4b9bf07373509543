"""The filter-type registry (bloomkit/_types.py) and every list derived from it.

A registered type missing from any derived list, or a core whose type list
(``_core.filter_types()``) disagrees with the registry, fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bloomkit
from bloomkit import _core, _types
from bloomkit._frozen import FrozenMixin
from bloomkit.cli import _filters
from support import FILTER_CASES, FILTER_TYPES, growable

ROOT = Path(__file__).resolve().parent.parent
ROW_IDS = [pytest.param(row, id=row.name) for row in _types.ROWS]


def test_rows_are_unique_and_each_names_its_class():
    assert len({row.name for row in _types.ROWS}) == len(_types.ROWS)
    assert len({row.class_name for row in _types.ROWS}) == len(_types.ROWS)
    tags = [row.tag for row in _types.FRAMED]
    assert len(set(tags)) == len(tags) and all(isinstance(tag, int) and 0 < tag < 2**14 for tag in tags)
    assert all(row.tag is None for row in _types.ROWS if not row.framed)
    for row in _types.ROWS:
        assert (row.cls.__module__, row.cls.__name__) == (row.module, row.class_name)
        assert _types.row_of(row.cls) is row


def test_the_core_and_the_registry_list_the_same_framed_types():
    core = list(_core.filter_types())
    assert core == sorted(core, key=lambda pair: pair[1])  # tag order
    assert core == [(row.class_name, row.tag) for row in sorted(_types.FRAMED, key=lambda row: row.tag)]


def test_a_disagreeing_core_is_an_import_error(monkeypatch):
    real = _types._core_types()
    monkeypatch.setattr(_types, "_core_types", lambda: (*real, ("QuotientFilter", 9)))
    with pytest.raises(ImportError, match=r"the C\+\+ core .* has \[\('QuotientFilter', 9\)\] that python/bloomkit/"):
        _types.check_core_agrees()
    monkeypatch.setattr(_types, "_core_types", lambda: real[1:])
    first = _types.FRAMED[0]
    with pytest.raises(ImportError, match=re.escape(f"_types.py has [{(first.class_name, first.tag)!r}]")):
        _types.check_core_agrees()


@pytest.mark.parametrize("row", ROW_IDS)
def test_capability_flags_match_the_class(row):
    cls = row.cls
    assert callable(getattr(cls, "add", None)) and callable(getattr(cls, "contains", None))
    for method in ("remove", "discard", "count", "remove_many"):
        assert hasattr(cls, method) == row.removable, method
    assert hasattr(cls, "open") == row.mappable
    if row.mutable and not row.keyed:  # a keyed row's filter is checked keyed below
        assert "secret_key" not in inspect.signature(cls).parameters
    if row.keyed:
        assert row.make(100, 0.01, 1, secret_key=bytes(range(16))).keyed
    else:
        with pytest.raises(TypeError, match=f"{row.class_name} takes no secret_key"):
            row.make(100, 0.01, 1, secret_key=bytes(range(16)))
    assert hasattr(cls, "union") == row.mergeable
    assert issubclass(cls, FrozenMixin) == (not row.mutable)  # the refusals of a frozen type
    assert callable(getattr(cls, row.first_seen, None)) or not row.mutable  # a frozen type takes no keys
    for variant in row.variants or (None,):
        f = row.build(["a", "b"], 100, 0.01, 1, variant)
        assert type(f) is cls and f.contains_many(["a", "b"]).all()
    with pytest.raises(ValueError, match=f"{row.class_name} has no variant 'no-such-variant'"):
        row.make(100, 0.01, 0, "no-such-variant")


def test_load_dispatches_every_framed_tag_through_the_registry(tmp_path):
    for row in _types.FRAMED:
        frame = row.build(["x"], 100).to_bytes()
        path = tmp_path / f"{row.name}.bkf"
        path.write_bytes(frame)
        assert type(bloomkit.load(frame)) is row.cls and type(bloomkit.load(path)) is row.cls
    with pytest.raises(ValueError, match="filter type tag 9 is not available in this build of bloomkit"):
        _types.row_for_tag(9)


def test_every_type_is_in_every_derived_list():
    names = {row.name for row in _types.ROWS}
    classes = {row.class_name for row in _types.ROWS}
    # The package exports (runtime and stub).
    assert classes <= set(bloomkit.__all__)
    assert all(getattr(bloomkit, row.class_name) is row.cls for row in _types.ROWS)
    # The stub ships in the package (the wheel's test run has no python/ beside tests/).
    stub = Path(bloomkit.__file__).with_name("__init__.pyi").read_text()
    assert classes <= set(re.findall(r'"(\w+)"', stub[stub.index("__all__") :]))
    # The command line offers every type bloomkit.load reads back.
    assert _filters.TYPE_NAMES == [row.name for row in _types.FRAMED]
    # The contract suite's cases: every type in every variant.
    assert {case.row.name for case in FILTER_CASES} == names == {case.row.name for case in FILTER_TYPES}
    for row in _types.ROWS:
        assert {case.variant for case in FILTER_CASES if case.row is row} == set(row.variants or (None,))
    # Doctests, golden files and the fuzz corpus.
    import test_doctests

    assert {row.module for row in _types.ROWS} <= set(test_doctests.MODULES)
    sys.path.insert(0, str(ROOT / "tests" / "golden"))
    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import make_corpus
        import make_golden
    finally:
        sys.path.remove(str(ROOT / "tests" / "golden"))
        sys.path.remove(str(ROOT / "fuzz"))
    cases = {(row.name, variant) for row in _types.ROWS for variant in row.variants or (None,)}
    framed = {(row.name, variant) for row in _types.FRAMED for variant in row.variants or (None,)}
    golden = make_golden.golden_filters()
    assert {make_golden.generic_name(_types.BY_NAME[n], v) for n, v in framed} <= set(golden)
    seeds = make_corpus.seed_filters()
    assert {make_corpus.generic_name(_types.BY_NAME[n], v) for n, v in cases} <= set(seeds)


@pytest.mark.checkout
def test_the_sanitizer_run_takes_every_framed_type():
    # .ci/asan.sh runs what `python tests/asan_tests.py` prints: the fixed
    # list and tests/test_<row name>.py of every framed row; a row without
    # that file stops the script (and fails here first, in the ordinary suite).
    import asan_tests

    files = asan_tests.test_files()
    assert "test_contract.py" in files and len(files) == len(set(files))
    assert [f"test_{row.name}.py" for row in _types.FRAMED] == files[-len(_types.FRAMED) :]
    assert all((ROOT / "tests" / name).is_file() for name in files)
    printed = subprocess.run([sys.executable, str(ROOT / "tests" / "asan_tests.py")], capture_output=True, text=True)
    assert printed.returncode == 0 and printed.stdout.split() == files, printed.stderr
    quotient = dataclasses.replace(_types.FRAMED[0], name="quotient")
    with pytest.raises(LookupError, match=re.escape("no tests/test_<name>.py for the registered type(s) ['quotient']")):
        asan_tests.test_files([*_types.FRAMED, quotient])
    assert '"$python" tests/asan_tests.py)"' in (ROOT / ".ci" / "asan.sh").read_text()


def attribute_sniffs(source: str, names: set) -> list:
    """``hasattr(x, "name")`` and ``getattr(x, "name", default)`` calls on another object, for ``name`` in ``names``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        sniff = (node.func.id == "hasattr" and len(node.args) == 2) or (
            node.func.id == "getattr" and len(node.args) == 3
        )
        if not sniff or (isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
            continue
        name = node.args[1]
        if isinstance(name, ast.Constant) and name.value in names:
            found.append(f"line {node.lineno}: {node.func.id}(..., {name.value!r})")
    return found


def test_nothing_outside_the_registry_sniffs_a_type_by_its_attributes():
    # What a filter can do (merge, window, fill figure, layout, FPR model...)
    # comes from its registry row: no module asks an object whether it has a
    # public attribute of some filter class. Reading inputs (Arrow's
    # __arrow_c_stream__, a stream's read1) is not a filter attribute.
    names = {
        name for row in _types.ROWS for name in dir(row.cls) if not name.startswith("_") and not hasattr(object, name)
    }
    assert {"union", "window", "layout", "load_factor", "num_slices", "capacity"} <= names
    package = Path(bloomkit.__file__).parent
    sniffs = {
        str(path.relative_to(package)): found
        for path in sorted(package.rglob("*.py"))
        if path.name != "_types.py" and (found := attribute_sniffs(path.read_text(encoding="utf-8"), names))
    }
    assert sniffs == {}
    assert attribute_sniffs('hasattr(f, "union") or getattr(g, "layout", "classic")', names) == [
        "line 1: hasattr(..., 'union')",
        "line 1: getattr(..., 'layout')",
    ]
    source = inspect.getsource(_filters)
    assert "hasattr" not in source and "_exact_len_label" not in source


@pytest.mark.filterwarnings("ignore::bloomkit.CapacityWarning")  # past capacity on purpose
@pytest.mark.parametrize("row", [param for param in ROW_IDS if param.values[0].mutable])
def test_growable_filters_take_keys_past_their_capacity(row):
    # support.growable reads the registry: a growable row starts small and
    # grows, a row that refuses keys when full gets its unbounded_options
    # (cuckoo: auto_grow); without them a cuckoo filter of 100 keys raises
    # FilterFullError long before 5,000.
    f = growable(row.cls, 100, first_slice=50)
    keys = np.arange(5_000, dtype=np.uint64)
    f.update(keys)
    assert f.contains_many(keys).all()
    if row.unbounded_options:
        full = row.make(100, 0.01)
        with pytest.raises(bloomkit.FilterFullError):
            full.update(keys)


def test_spark_ships_the_mappable_rows_that_do_not_forget():
    # might_contain ships a filter that loads from its frame and maps a file
    # read-only; a windowed row is refused (a shipped copy never forgets).
    from bloomkit import _spark_ship

    shippable = [row.class_name for row in _types.FRAMED if row.mappable and not row.windowed]
    assert list(_spark_ship._SHIPPABLE) == shippable and {"BloomFilter", "BinaryFuseFilter"} <= set(shippable)
    for row in _types.ROWS:
        f = row.build(["a"], 100)
        if row.class_name in shippable:
            assert _spark_ship._payload(f) == (row.class_name, None)
        elif row.name != "spark":
            with pytest.raises(TypeError) as refused:
                _spark_ship._payload(f)
            assert str(refused.value) == (
                f"might_contain needs a bloomkit {', '.join(shippable)} or SparkBloomFilter, got {row.class_name}"
            )


def test_a_row_with_an_fpr_model_nothing_draws_is_refused():
    row = _types.BY_NAME["bloom"]
    with pytest.raises(ValueError, match=r"bloom: fpr_model 'collision' is not one of \('bloom', 'chain'"):
        dataclasses.replace(row, fpr_model="collision")
