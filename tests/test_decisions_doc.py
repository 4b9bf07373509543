"""docs/decisions.md keeps decisions, not lab notes.

Each top-level entry (a ``- **…**`` bullet and its indented continuation lines) is one
decision: the choice, the alternatives, the deciding figure and where it is proven. The
runs that led to a figure live in git history and ``benchmarks/results/``. So an entry
stays short, and an entry that states a measured figure names its proof: a committed
report (``benchmarks/results/<name>.md``, in full), a test (``tests/…``) or the CI
script that measures it (``.ci/…``), and that file exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import checkout_text_files

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "decisions.md"
MAX_ENTRY_LINES = 10

# A number with a unit of time, size or ratio: "7.2 ns/key", "0.3 s", "1,005 s", "+1.6 GB",
# "1.16×", "3 %", "148 CPU-s", "25 µs". Binary sizes (MiB, GiB) are left out: there they
# mostly name limits and alignments, not measurements.
FIGURE = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:ns/key|ns|µs|ms|s|min|CPU-s|KB|MB|GB|×|%)(?![\w/])")
REPORT = re.compile(r"benchmarks/results/([0-9A-Za-z_.-]+\.md)")
TEST = re.compile(r"(tests/[0-9A-Za-z_./-]+?)(?:::|[`,;)\s]|$)")
CI_SCRIPT = re.compile(r"(\.ci/[0-9A-Za-z_.-]+)")

pytestmark = pytest.mark.checkout  # the wheel's test run has tests/ without docs/


def entries(text: str) -> list[tuple[int, list[str]]]:
    """Top-level bullets with their continuation lines, as (first line number, lines)."""
    found: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("- "):
            current = [line]
            found.append((number, current))
        elif current is not None and line.startswith("  ") and line.strip():
            current.append(line)
        else:
            current = None
    return found


def proofs(entry: str) -> list[Path]:
    """The files an entry names as its proof (reports, tests, CI scripts)."""
    named = [REPO / "benchmarks" / "results" / m for m in REPORT.findall(entry)]
    named += [REPO / m for m in TEST.findall(entry)]
    named += [REPO / m for m in CI_SCRIPT.findall(entry)]
    return named


@pytest.fixture(scope="module")
def doc_entries():
    found = entries(DOC.read_text(encoding="utf-8"))
    assert len(found) > 100, "docs/decisions.md should hold well over 100 decisions"
    return found


def test_every_entry_is_short(doc_entries):
    long = [
        f"line {n}: {len(lines)} lines, {lines[0][:60]!r}" for n, lines in doc_entries if len(lines) > MAX_ENTRY_LINES
    ]
    assert not long, (
        f"entries longer than {MAX_ENTRY_LINES} lines (lab notes go to benchmarks/results/):\n" + "\n".join(long)
    )


def test_every_entry_with_a_measured_figure_names_its_proof(doc_entries):
    with_figures = [(n, "\n".join(lines)) for n, lines in doc_entries if FIGURE.search("\n".join(lines))]
    # The rule is not vacuous: most decisions were settled by a figure.
    assert len(with_figures) > 50
    unproven = [f"line {n}: {text.splitlines()[0][:60]!r}" for n, text in with_figures if not proofs(text)]
    assert not unproven, "entries stating a figure but citing no report, test or CI script:\n" + "\n".join(unproven)


def test_every_named_proof_exists(doc_entries):
    missing = sorted(
        {str(p.relative_to(REPO)) for _, lines in doc_entries for p in proofs("\n".join(lines)) if not p.exists()}
    )
    assert not missing, f"docs/decisions.md names files that do not exist: {missing}"


def test_a_short_reference_to_a_report_is_not_a_citation():
    # "…binary-fuse-4f0103b…" is not a report name; a citation names the file in full.
    text = DOC.read_text(encoding="utf-8")
    assert "…" + "binary" not in text
    assert not re.search(r"…[a-z0-9-]*-[0-9a-f]{7}[-…]", text), "cite reports by their full name"


def test_headings_and_entries_other_files_quote_exist():
    """`docs/decisions.md, "File-backed filters"` in a doc or a comment names a heading or an entry."""
    flat = " ".join(DOC.read_text(encoding="utf-8").split()).lower()
    quoted = set()
    for path in checkout_text_files():
        if path != Path(__file__):
            for name in re.findall(r'decisions\.md,? "([^"\n]+)"', path.read_text(encoding="utf-8", errors="replace")):
                quoted.add((path.relative_to(REPO).as_posix(), name))
    assert quoted, "no file quotes an entry of docs/decisions.md any more: check the pattern"
    missing = sorted((path, name) for path, name in quoted if " ".join(name.split()).lower() not in flat)
    assert not missing, f"quoted in these files but not in docs/decisions.md: {missing}"
