"""Jupyter: the example notebook runs headless, and filters display correctly."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bloomkit
from bloomkit import _display

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"


# ------------------------------------------------------------ the notebook


@pytest.fixture(scope="module")
def executed_notebook(tmp_path_factory):
    """Execute examples/notebook.ipynb with nbconvert in a kernel running this interpreter."""
    nbformat = pytest.importorskip("nbformat")
    directory = tmp_path_factory.mktemp("notebook")
    # A private kernelspec pinned to sys.executable: a "python3" kernel
    # installed elsewhere on the machine might not have bloomkit.
    kernel_dir = directory / "share" / "jupyter" / "kernels" / "bloomkit-test"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "bloomkit test",
                "language": "python",
            }
        )
    )
    output = directory / "executed.ipynb"
    env = {**os.environ, "JUPYTER_PATH": str(directory / "share" / "jupyter")}
    env.pop("MPLBACKEND", None)  # the kernel must use its inline backend to show figures
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            str(NOTEBOOK),
            "--output",
            str(output),
            "--ExecutePreprocessor.kernel_name=bloomkit-test",
            "--ExecutePreprocessor.timeout=120",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return nbformat.read(output, as_version=4)


def _outputs(notebook):
    for cell in notebook.cells:
        if cell.cell_type == "code":
            yield from cell.outputs


def test_notebook_runs_without_errors(executed_notebook):
    assert not [output for output in _outputs(executed_notebook) if output.output_type == "error"]


def test_notebook_dedup_numbers(executed_notebook):
    text = "".join(output.get("text", "") for output in _outputs(executed_notebook) if output.output_type == "stream")
    assert "repeats kept (must be 0): 0" in text
    match = re.search(r"new urls dropped \(false positives\): (\d+)\s+\(expected ([\d.]+) ± ([\d.]+)\)", text)
    assert match, text
    dropped, expected, sigma = int(match[1]), float(match[2]), float(match[3])
    assert expected - 5 * sigma <= dropped <= expected + 5 * sigma


def test_notebook_shows_the_filter_table_and_two_plots(executed_notebook):
    data = [output.get("data", {}) for output in _outputs(executed_notebook)]
    assert any("<caption" in item.get("text/html", "") and "BloomFilter" in item["text/html"] for item in data)
    pngs = [item["image/png"] for item in data if "image/png" in item]
    assert len(pngs) == 2  # each figure once: fpr_curve and bits_per_key


def test_shipped_notebook_is_executed():
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells and all(cell.execution_count for cell in code_cells)
    assert any("image/png" in output.get("data", {}) for cell in code_cells for output in cell.outputs)


# ------------------------------------------------------------- display


def _bits_set(f: bloomkit.BloomFilter) -> int:
    """Set bits counted from the serialized payload (docs/FORMAT.md), independent of the core's counter."""
    payload = f.to_bytes()[64:-8]  # format v2: the payload starts at offset 64
    return int(np.unpackbits(np.frombuffer(payload, dtype=np.uint8)).sum())


def _html_rows(html: str) -> dict:
    return dict(re.findall(r"<th[^>]*>([^<]*)</th><td[^>]*>([^<]*)</td>", html))


def _expected_rows(f: bloomkit.BloomFilter) -> dict:
    m, k = f.num_bits, f.num_hashes
    fill = _bits_set(f) / m
    estimate = -(m / k) * math.log1p(-min(_bits_set(f), m - 0.5) / m)
    # A blocked layout's rate is its block-load model at the estimated count (fill ** k understates it).
    fpr = (
        fill**k if f.layout == "classic" else bloomkit.calc.layout_false_positive_rate(f.layout, m, round(estimate), k)
    )
    return {
        "capacity": f"{f.capacity:,}",
        "error_rate": _display.format_value(f.error_rate),
        "layout": f.layout,
        "num_bits": f"{m:,}",
        "num_hashes": str(k),
        "nbytes": f"{_display.human_size(8 * ((m + 63) // 64))} ({8 * ((m + 63) // 64):,} B)",
        "fill_ratio": _display.format_value(fill),
        "estimated_count": f"{round(estimate):,}",
        "estimated_fpr": _display.format_value(fpr),
        "state": "within target" if fpr <= 2 * f.error_rate else "over capacity",
    }


def test_bloom_html_table_is_complete():
    f = bloomkit.BloomFilter(10_000, 0.01, seed=3)
    f.update(np.arange(4_000))
    html = f._repr_html_()
    assert "<caption" in html and "<b>BloomFilter</b>" in html
    rows = _html_rows(html)
    assert rows == {**_expected_rows(f), "seed": "3"}
    assert abs(int(rows["estimated_count"].replace(",", "")) - 4_000) < 4_000 * 0.03


def test_html_stays_correct_after_unions_and_loads(tmp_path):
    a = bloomkit.BloomFilter(20_000, 0.01)
    b = bloomkit.BloomFilter(20_000, 0.01)
    a.update([f"a{i}" for i in range(3_000)])
    b.update([f"b{i}" for i in range(5_000)])
    union = a | b
    assert _html_rows(union._repr_html_()) == {**_expected_rows(union), "seed": "0"}
    assert abs(len(union) - 8_000) < 8_000 * 0.03
    before = a._repr_html_()
    a |= b  # in place: the table must follow the new bits
    assert a._repr_html_() != before
    assert _html_rows(a._repr_html_()) == _html_rows(union._repr_html_())
    path = tmp_path / "u.bk"
    union.save(path)
    for loaded in (
        bloomkit.BloomFilter.load(path),
        bloomkit.load(path),
        bloomkit.BloomFilter.from_bytes(union.to_bytes()),
    ):
        assert loaded._repr_html_() == union._repr_html_()
        assert repr(loaded) == repr(union)


def test_repr_is_one_line():
    f = bloomkit.BloomFilter(1_000_000, 0.001)
    f.update(["x", "y"])
    text = repr(f)
    assert "\n" not in text
    assert text.startswith("<BloomFilter capacity=1,000,000 error_rate=0.001 ") and text.endswith(">")
    assert "estimated_count=2 " in text and "fill_ratio=" in text and "estimated_fpr=" in text
