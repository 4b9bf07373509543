"""Memory figures quoted in the README, docs, docstrings and the notebook are computed here from
bloomkit's own sizing: each figure is formatted from the code and must appear verbatim, so a sizing
change that moves one fails here until the text is updated."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import bloomkit
from bloomkit import calc

REPO = Path(__file__).resolve().parents[1]
# Docstrings are read from the bloomkit that is imported (a checkout's or an
# installed wheel's, .ci/wheel.sh), the rest from the files beside tests/.
PACKAGE = Path(bloomkit.__file__).resolve().parent


def flat(text: str) -> str:
    """Text with comment markers dropped and whitespace runs (line breaks) as one space."""
    return " ".join(text.replace("//", " ").split())


def text_of(path: str) -> str:
    if path.endswith(".ipynb"):
        cells = json.loads((REPO / path).read_text(encoding="utf-8"))["cells"]
        return flat("\n".join("".join(cell["source"]) for cell in cells))
    if path.startswith("python/bloomkit/"):
        return flat((PACKAGE / path.removeprefix("python/bloomkit/")).read_text(encoding="utf-8"))
    return flat((REPO / path).read_text(encoding="utf-8"))


def bytes_per_key(error_rate, capacity=10**6, layout=None) -> float:
    return calc.bloom_params(capacity, error_rate, layout).nbytes / capacity


def default_at_1e6_per_url() -> str:
    scrapy = pytest.importorskip("bloomkit.scrapy")
    return f"{bytes_per_key(scrapy.DEFAULT_ERROR_RATE, scrapy.DEFAULT_CAPACITY):.1f}"


def stricter_rate_costs() -> str:
    # The CLI's dedup default (0.001) against the library default (0.01).
    return f"{100 * (calc.bloom_params(10**6, 0.001).nbytes / calc.bloom_params(10**6, 0.01).nbytes - 1):.0f}"


FIGURES = [
    # (file, text with {} for the figure, the figure computed from the code)
    (
        "README.md",
        "0.1 % false-positive rate takes {} MiB",
        lambda: f"{calc.bloom_params(10**8, 1e-3).nbytes / 2**20:.0f}",
    ),
    ("python/bloomkit/scrapy.py", "the default filter {} bytes)", default_at_1e6_per_url),
    ("docs/integrations.md", "the default filter {} bytes (1e-6)", default_at_1e6_per_url),
    ("docs/integrations.md", "({} bytes per key at 1 %", lambda: f"{bytes_per_key(0.01):.1f}"),
    ("docs/cli.md", "at {} bytes per\n  distinct line", lambda: f"{bytes_per_key(0.001):.1f}"),
    ("docs/cli.md", "at {} bytes per line a 10× stricter rate", lambda: f"{bytes_per_key(0.001):.1f}"),
    ("docs/cli.md", "default costs {} % more memory", stricter_rate_costs),
    ("docs/notebook.md", "memory ~{} bytes per row at 0.001", lambda: f"{bytes_per_key(0.001):.1f}"),
    ("examples/notebook.ipynb", "memory ~{} bytes per row at 0.001", lambda: f"{bytes_per_key(0.001):.1f}"),
    (
        "python/bloomkit/dedup.py",
        "(about {} bytes per row at ``error_rate=0.001``)",
        lambda: f"{bytes_per_key(0.001):.1f}",
    ),
    (
        "python/bloomkit/counting_bloom.py",
        "about {} counters per key, i.e. 4.8 bytes per key",
        lambda: f"{calc.bloom_params(10**6, 0.01, 'classic').bits_per_key:.1f}",
    ),
    (
        "python/bloomkit/counting_bloom.py",
        "9.6 counters per key, i.e. {} bytes per key with 4-bit counters",
        lambda: f"{calc.bloom_params(10**6, 0.01, 'classic').bits_per_key * 4 / 8:.1f}",
    ),
]


@pytest.mark.parametrize("path, template, figure", FIGURES, ids=[f"{p}:{t[:30]}" for p, t, _ in FIGURES])
def test_memory_figure_in_the_docs_is_the_codes(path, template, figure):
    expected = flat(template.format(figure()))
    assert expected in text_of(path), f"{path} should say {expected!r}"


def overheads(error_rate, capacity=10**6) -> dict:
    return {
        p.layout: p.num_bits / calc.bloom_params(capacity, error_rate, "classic").num_bits - 1
        for p in calc.layout_table(capacity, error_rate)
    }


def test_layout_overheads_in_decisions_and_the_core_comment():
    # The "Default layout" decision and sizing.hpp quote the layouts' overhead
    # against classic at 1e6 keys.
    decisions = text_of("docs/decisions.md")
    core = text_of("cpp/include/bloomkit/sizing.hpp")
    for layout in ("blocked512", "split_block"):
        figures = " / ".join(f"{100 * overheads(p)[layout]:+.1f} %" for p in (1e-2, 1e-3, 1e-4, 1e-6))
        assert f"{layout} {figures}" in decisions
    one, tenth, sixth = overheads(1e-2), overheads(1e-3), overheads(1e-6)
    split, blocked = (
        f"+{100 * one['split_block']:.1f} % at 1 %, +{100 * tenth['split_block']:.1f} % at 0.1 %, "
        f"+{100 * sixth['split_block']:.0f} % at 1e-6",
        f"+{100 * one['blocked512']:.1f} %, +{100 * tenth['blocked512']:.1f} %, +{100 * sixth['blocked512']:.0f} %",
    )
    assert split in core and blocked in core


@pytest.mark.parametrize(
    "label, rate", [("0.03", 0.03), ("0.01", 0.01), ("0.003", 0.003), ("0.001", 0.001), ("1e-4", 1e-4), ("1e-6", 1e-6)]
)
def test_cuckoo_against_bloom_table(label, rate):
    cuckoo = calc.cuckoo_params(10**6, rate)
    bloom = calc.bloom_params(10**6, rate, "classic")
    lines = (REPO / "docs/cuckoo.md").read_text(encoding="utf-8").splitlines()
    (row,) = [line for line in lines if line.startswith(f"| {label} | {cuckoo.fingerprint_bits} | ")]
    assert f" | {8 * cuckoo.nbytes / 10**6:.2f} | " in row
    assert row.endswith(f" | {bloom.bits_per_key:.2f} ({bloom.num_hashes}) |")


@pytest.fixture(scope="module")
def crossover():
    plot = pytest.importorskip("bloomkit.plot")
    return plot.sizing_crossover()


def test_cuckoo_crossover_quoted_in_the_notebook_and_its_doc(crossover):
    below, first = f"{crossover.always_below:.2g}", f"{crossover.first:.2g}"
    doc = text_of("docs/notebook.md")
    assert f"smaller at every rate below ε ≈ {below} and alternates with the Bloom filter from ε ≈ {first}" in doc
    notebook = text_of("examples/notebook.ipynb")
    assert f"smaller below ε ≈ {below}" in notebook and f"from ε ≈ {first}" in notebook
    # The formulas alone (Bloom log2(1/ε)/ln 2, cuckoo (log2(1/ε) + 3)/0.955) cross where
    # log2(1/ε) (1/ln 2 - 1/0.955) = 3/0.955.
    formula = 2.0 ** -((3 / 0.955) / (1 / math.log(2) - 1 / 0.955))
    assert f"The formulas alone would say {formula:.2g}" in doc
    assert f"the formulas alone would say {formula:.2g}" in notebook
