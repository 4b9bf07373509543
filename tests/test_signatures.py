"""Every public method of every filter type has a signature inspect can read, equal to its stub.

The methods are found with ``dir()`` on each class of the filter table (so a
new method or a new type is covered without editing this file); the stubs
are read from the package's ``.pyi`` files, following each stub class's bases
the way the runtime follows the MRO. Methods bound in C++ get their text
signature from ``cpp/bindings/text_signature.hpp`` (pybind11's) or
``fast_methods.hpp`` (the METH_O single-key methods).
"""

from __future__ import annotations

import ast
import inspect
from functools import lru_cache
from pathlib import Path

import pytest

import bloomkit
from support import FILTER_TYPES

STUB_DIR = Path(bloomkit.__file__).parent
P = inspect.Parameter


@lru_cache(maxsize=None)
def stub_classes() -> dict[str, list[tuple[str, ast.ClassDef]]]:
    """Class name -> [(stub module stem, class definition)] over every .pyi of the package."""
    index: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for path in sorted(STUB_DIR.glob("*.pyi")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                index.setdefault(node.name, []).append((path.stem, node))
    return index


def stub_class(module: str, name: str) -> ast.ClassDef:
    candidates = stub_classes()[name]
    for stem, node in candidates:
        if stem == module:
            return node
    assert len(candidates) == 1, f"{name} is defined in several stubs: {[s for s, _ in candidates]}"
    return candidates[0][1]


def base_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):  # _core.BloomCore
        return expr.attr
    return None  # Generic[...] and the like hold no methods


def stub_method(cls: type, name: str) -> list[ast.FunctionDef]:
    """The stub definitions (several when overloaded) of `name` as `cls` sees it."""
    seen: set[int] = set()
    todo = [stub_class(cls.__module__.rsplit(".", 1)[-1], cls.__name__)]
    while todo:
        node = todo.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        found = [d for d in node.body if isinstance(d, ast.FunctionDef) and d.name == name]
        if found:
            return found
        for base in node.bases:
            base_id = base_name(base)
            if base_id is not None and base_id in stub_classes():
                todo.append(stub_class("", base_id))
    raise AssertionError(f"{cls.__name__}.{name} has no stub")


def decorators(definition: ast.FunctionDef) -> set[str]:
    return {d.id for d in definition.decorator_list if isinstance(d, ast.Name)}


def stub_parameters(definition: ast.FunctionDef) -> list[tuple[str, inspect._ParameterKind, bool]]:
    """(name, kind, has a default) of each parameter after self/cls."""
    a = definition.args
    rows: list[tuple[str, inspect._ParameterKind, bool]] = []
    positional = a.posonlyargs + a.args
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    for i, (arg, has_default) in enumerate(zip(positional, defaults)):
        # Before PEP 570 stubs spelled positional-only as a leading "__".
        old_style = arg.arg.startswith("__") and not arg.arg.endswith("__")
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) or old_style else P.POSITIONAL_OR_KEYWORD
        rows.append((arg.arg, kind, has_default))
    if a.vararg:
        rows.append((a.vararg.arg, P.VAR_POSITIONAL, False))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        rows.append((arg.arg, P.KEYWORD_ONLY, default is not None))
    if a.kwarg:
        rows.append((a.kwarg.arg, P.VAR_KEYWORD, False))
    return rows if "staticmethod" in decorators(definition) else rows[1:]


def runtime_parameters(signature: inspect.Signature) -> list[tuple[str, inspect._ParameterKind, bool]]:
    return [(p.name, p.kind, p.default is not P.empty) for p in signature.parameters.values()]


def public_methods(cls: type) -> list[str]:
    names = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        if isinstance(static, property) or inspect.isclass(static) or not callable(getattr(cls, name)):
            continue
        names.append(name)
    return names


def same(stub_rows, runtime_rows) -> bool:
    if len(stub_rows) != len(runtime_rows):
        return False
    for (s_name, s_kind, s_default), (r_name, r_kind, r_default) in zip(stub_rows, runtime_rows):
        # A positional-only parameter's name is not part of the interface.
        if s_kind != r_kind or s_default != r_default or (s_kind != P.POSITIONAL_ONLY and s_name != r_name):
            return False
    return True


ROWS = [pytest.param(row, id=row.name) for row in FILTER_TYPES]


@pytest.mark.parametrize("row", ROWS)
def test_every_public_method_has_the_signature_of_its_stub(row):
    methods = public_methods(row.cls)
    # The ones bound in C++ are among them (they had no signature before).
    assert {"add", "contains", "clear", "to_bytes"} <= set(methods)
    for name in methods:
        static = inspect.getattr_static(row.cls, name)
        signature = inspect.signature(getattr(row.cls, name))
        runtime = runtime_parameters(signature)
        if not isinstance(static, (classmethod, staticmethod)) and not inspect.ismethod(getattr(row.cls, name)):
            assert runtime and runtime[0][0] == "self", f"{name}{signature}"
            runtime = runtime[1:]  # the stub's self is dropped too
        definitions = stub_method(row.cls, name)
        assert any(same(stub_parameters(d), runtime) for d in definitions), (
            f"{row.cls.__name__}.{name}{signature} differs from its stub: {[stub_parameters(d) for d in definitions]}"
        )


@pytest.mark.parametrize("row", ROWS)
def test_methods_bound_in_cpp_show_their_parameters(row):
    f = row.make(100, 0.01, 0)
    assert str(inspect.signature(f.clear)) == "()"
    assert str(inspect.signature(f.to_bytes)) == "()"
    assert str(inspect.signature(f.add)) == "(key, /)"
    assert str(inspect.signature(type(f).clear)) == "(self)"
    # help() and IDEs show the docstring after the signature header.
    assert type(f).clear.__doc__ and "--" not in type(f).clear.__doc__.splitlines()[0]


def test_core_keyword_only_and_default_parameters_are_spelled_out():
    core = bloomkit._core
    write_frame = inspect.signature(core.BloomCore._write_frame)
    assert list(write_frame.parameters) == ["self", "fd"]
    assert str(inspect.signature(core.hash128)).startswith("(key")
