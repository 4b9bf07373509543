"""benchmarks/ stays navigable: one entry command knows every script, the README lists each
one, and every recorded report is named by date, what, commit and machine and is cited by
a decision in docs/decisions.md (a report no decision cites is pruned). Other docs and code
comments may cite reports too, but only ones that are kept."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import checkout_text_files

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
RESULTS = BENCH / "results"
# Modules the scripts import (a leading underscore), the entry itself, and the .cpp
# str_batch_floor.py compiles and runs.
HELPERS = {"run.py", "str_batch_floor.cpp"}
REPORT_NAME = re.compile(r"\d{4}-\d{2}-\d{2}-[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{7}-[a-z]+[0-9]+\.md")

pytestmark = pytest.mark.checkout  # the wheel's test run has tests/ without benchmarks/


def load_run():
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_every_script_is_a_suite_of_the_one_command_and_in_the_readme():
    suites = load_run().SUITES
    scripts = {p.name for p in BENCH.iterdir() if p.suffix in (".py", ".cpp") and not p.name.startswith("_")} - HELPERS
    assert scripts == {script for script, _ in suites.values()}
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    for name, (script, _) in suites.items():
        assert f"| `{name}` | `{script}`" in readme, f"benchmarks/README.md does not list {script}"
    for helper in (p.name for p in BENCH.glob("_*.py")):
        assert f"`{helper}`" in readme, f"benchmarks/README.md does not name the helper {helper}"


def test_only_run_py_calls_itself_the_one_command():
    claims = [
        p.name
        for p in BENCH.iterdir()
        if p.suffix in (".py", ".cpp")
        and re.search(r"the one command|one-command", p.read_text(encoding="utf-8"), re.I)
    ]
    assert claims == ["run.py"]


def reports() -> list[str]:
    return sorted(p.name for p in RESULTS.glob("*.md") if p.name != "README.md")


def test_reports_are_named_by_date_what_commit_machine_and_cited_by_a_decision():
    decisions = (REPO / "docs" / "decisions.md").read_text(encoding="utf-8")
    kept = reports()
    assert kept
    for name in kept:
        assert REPORT_NAME.fullmatch(name), f"{name} is not YYYY-MM-DD-<what>-<commit>-<machine>.md"
        assert f"benchmarks/results/{name}" in decisions, f"no decision in docs/decisions.md cites {name}: prune it"


def test_the_results_readme_lists_exactly_the_kept_reports():
    results_readme = (RESULTS / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([^`]+\.md)` \|", results_readme, re.M)
    assert sorted(listed) == reports()
    assert len(listed) == len(set(listed))


def test_every_report_a_doc_or_comment_cites_is_kept():
    # A full name (2026-11-26-spark-1e7-e8dbe69-epyc2.md) or a shortened one
    # (…-redis-window-a512aea-epyc2.md) must name a report that exists.
    kept = reports()
    dangling = []
    for path in checkout_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in re.findall(r"[0-9a-z-]*-[0-9a-f]{7}-[a-z]+[0-9]+\.md", text):
            if not any(report == name or report.endswith(name) for report in kept):
                dangling.append(f"{path.relative_to(REPO)}: {name}")
    assert not dangling, (
        "cited but not in benchmarks/results/ (cite a kept report or drop the citation):\n" + "\n".join(dangling)
    )


def test_report_path_and_header_name_date_commit_and_machine():
    sys.path.insert(0, str(BENCH))
    try:
        import _common
    finally:
        sys.path.remove(str(BENCH))
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    commit = head.stdout.strip()
    path = Path(_common.report_path("bloom-1e6", date="2026-01-02"))
    assert path.parent == RESULTS
    assert path.name == f"2026-01-02-bloom-1e6-{commit}-{_common.machine_tag()}.md"
    assert REPORT_NAME.fullmatch(path.name)
    header = _common.report_header("bloom-1e6", ["python", "benchmarks/run.py", "bloom"])
    assert header.startswith("# bloom-1e6\n")
    assert f"- commit: {commit}" in header and f"- machine: {_common.machine_tag()} (" in header
    assert re.search(r"^- date: \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$", header, re.M)
    with pytest.raises(ValueError, match="lower-case words joined by '-', got 'Bloom 1e6'"):
        _common.report_path("Bloom 1e6")
