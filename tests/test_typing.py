"""The stubs (python/bloomkit/*.pyi) match the runtime and catch misuse.

* ``mypy.stubtest bloomkit``: every public name, signature, default and
  class in the stubs agrees with the imported package (the allowlist holds
  one false alarm, explained in the file);
* ``mypy --strict tests/typing/sample_api.py``: the README's usage type-checks;
* ``mypy --strict tests/typing/misuse.py``: exactly the lines marked ``# E``
  are errors (a typo like ``f.add_manyy`` or a float key is caught).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

import bloomkit

TYPING = pathlib.Path(__file__).parent / "typing"
CONFIG = TYPING / "mypy.ini"


def run_mypy(tmp_path, *args, stubtest=False):
    env = dict(os.environ)
    package_root = pathlib.Path(bloomkit.__file__).resolve().parents[1]
    # An editable install imports bloomkit through a path hook mypy cannot
    # follow; point mypy at the source tree then (never at site-packages).
    if "site-packages" not in package_root.parts:
        env["MYPYPATH"] = str(package_root)
    if stubtest:
        command = [
            sys.executable,
            "-m",
            "mypy.stubtest",
            *args,
            "--mypy-config-file",
            str(CONFIG),
            "--allowlist",
            str(TYPING / "stubtest-allowlist.txt"),
        ]
    else:
        command = [
            sys.executable,
            "-m",
            "mypy",
            *args,
            "--config-file",
            str(CONFIG),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_stubs_match_the_runtime(tmp_path):
    result = run_mypy(tmp_path, "bloomkit", stubtest=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_sample_using_the_api_passes_strict(tmp_path):
    result = run_mypy(tmp_path, "--strict", str(TYPING / "sample_api.py"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_misuse_is_flagged_line_by_line(tmp_path):
    source = TYPING / "misuse.py"
    expected = {n for n, line in enumerate(source.read_text().splitlines(), 1) if "  # E: " in line}
    assert len(expected) >= 10
    result = run_mypy(tmp_path, "--strict", str(source))
    assert result.returncode == 1, result.stdout + result.stderr
    flagged = {int(m.group(1)) for m in re.finditer(r"misuse\.py:(\d+): error:", result.stdout)}
    assert flagged == expected, result.stdout


@pytest.mark.checkout
def test_the_stubs_type_lists_are_the_registrys():
    # tests/typing/stub_lists.py writes them from bloomkit._types.ROWS; a
    # registered type missing from (or left over in) a stub's list fails here.
    script = pathlib.Path(__file__).parent / "typing" / "stub_lists.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.checkout  # stub_lists reads the checkout's python/bloomkit/*.pyi
def test_a_core_class_without_its_stub_fails_the_stub_lists(tmp_path, monkeypatch):
    # _core.pyi names each type's core classes from the stub in the type's
    # own .pyi (class _CuckooCore in cuckoo.pyi); a registered class whose
    # core class is stubbed nowhere stops the generator with its name.
    monkeypatch.syspath_prepend(str(TYPING))
    import stub_lists

    from bloomkit import _types

    assert "CuckooCore = _CuckooCore" in stub_lists.core_classes_block(_types.ROWS).splitlines()
    for stub in stub_lists.PACKAGE.glob("*.pyi"):
        (tmp_path / stub.name).write_text(stub.read_text())
    cuckoo = tmp_path / "cuckoo.pyi"
    cuckoo.write_text(cuckoo.read_text().replace("class _CuckooCore(", "class _Cuckoo("))
    monkeypatch.setattr(stub_lists, "PACKAGE", tmp_path)
    with pytest.raises(SystemExit, match=r"cuckoo.pyi: CuckooFilter's core class _core.CuckooCore has no stub"):
        stub_lists.core_classes_block(_types.ROWS)
