"""BLOOMKIT_REQUIRE_INTEGRATION=1 turns every kind of skip into a failure (tests/require_integration.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

MODULE_SKIP = "import pytest\npytest.importorskip('a_module_no_one_installed')\n\ndef test_never_runs():\n    pass\n"
RUNTIME_SKIP = "import pytest\n\ndef test_skips():\n    pytest.skip('no redis-server on PATH')\n"
PASSES = "def test_passes():\n    assert 1 + 1 == 2\n"
XFAIL = "import pytest\n\n@pytest.mark.xfail(reason='known')\ndef test_known():\n    assert False\n"


def run(tmp_path, source: str, require: bool):
    (tmp_path / "test_subject.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    env.pop("BLOOMKIT_REQUIRE_INTEGRATION", None)
    env.pop("PYTEST_ADDOPTS", None)  # CI's --basetemp is the outer run's: the inner one would empty it
    if require:
        env["BLOOMKIT_REQUIRE_INTEGRATION"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "require_integration",
         "--rootdir", str(tmp_path), str(tmp_path / "test_subject.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip


# pytest's exit codes: 1 some test failed, 2 a collection error interrupted the run, 5 no test ran.
@pytest.mark.parametrize(
    "source, exit_code", [(MODULE_SKIP, 2), (RUNTIME_SKIP, 1)], ids=["while-collecting", "at-run-time"]
)
def test_a_skip_fails_the_run_when_integration_is_required(tmp_path, source, exit_code):
    required = run(tmp_path, source, require=True)
    assert required.returncode == exit_code, required.stdout + required.stderr
    assert "BLOOMKIT_REQUIRE_INTEGRATION=1 forbids skipping" in required.stdout
    assert "a_module_no_one_installed" in required.stdout or "no redis-server on PATH" in required.stdout
    relaxed = run(tmp_path, source, require=False)
    # 5: no test ran, the whole module skipped
    assert relaxed.returncode in (0, 5) and "1 skipped" in relaxed.stdout, relaxed.stdout + relaxed.stderr


@pytest.mark.parametrize("source", [PASSES, XFAIL], ids=["a-pass", "an-xfail"])
def test_passes_and_expected_failures_stay_as_they_are(tmp_path, source):
    result = run(tmp_path, source, require=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "forbids skipping" not in result.stdout
