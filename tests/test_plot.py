"""bloomkit.plot: figures with the right numbers, rendered headless (Agg)."""

from __future__ import annotations

import io
import math
import re
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import bloomkit  # noqa: E402
from bloomkit import _types  # noqa: E402
from support import FILTER_TYPES, fpr_upper_bound  # noqa: E402


def lines_by_label(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_fpr_curve_theory_matches_the_calculator():
    figure = bloomkit.plot.fpr_curve(100_000, 0.01)
    assert isinstance(figure, matplotlib.figure.Figure)
    (ax,) = figure.axes
    assert ax.get_yscale() == "log"
    params = bloomkit.bloom_params(100_000, 0.01)
    theory = next(line for label, line in lines_by_label(ax).items() if label.startswith("theory"))
    xs, ys = theory.get_data()
    assert xs[-1] == 200_000
    for x, y in zip(xs[::37], ys[::37]):
        assert y == pytest.approx(
            bloomkit.calc.layout_false_positive_rate(params.layout, params.num_bits, int(x), params.num_hashes)
        )


def test_fpr_curve_with_a_filter_measures_absent_keys():
    f = bloomkit.BloomFilter(50_000, 0.02)
    f.update(np.arange(50_000, dtype=np.uint64))  # probes must not reuse these integers
    figure = bloomkit.plot.fpr_curve(filter=f, num_items=50_000, probes=40_000)
    ax = figure.axes[0]
    measured = [c for c in ax.containers if "measured" in str(c.get_label())]
    assert len(measured) == 1
    x, y = measured[0].lines[0].get_data()
    predicted = bloomkit.calc.layout_false_positive_rate(f.layout, f.num_bits, 50_000, f.num_hashes)
    assert x[0] == 50_000
    assert 0 < y[0] <= fpr_upper_bound(predicted, 40_000)


def test_measure_fpr_of_empty_and_full_filters():
    empty = bloomkit.BloomFilter(1000, 0.01)
    assert bloomkit.plot.measure_fpr(empty, probes=10_000) == 0.0
    full = bloomkit.BloomFilter(20_000, 0.05)
    full.update([f"key-{i}" for i in range(20_000)])
    rate = bloomkit.plot.measure_fpr(full, probes=50_000)
    predicted = bloomkit.calc.layout_false_positive_rate(full.layout, full.num_bits, 20_000, full.num_hashes)
    sigma = math.sqrt(predicted * (1 - predicted) / 50_000)
    assert predicted - 5 * sigma <= rate <= fpr_upper_bound(predicted, 50_000)


def test_bits_per_key_formulas():
    figure = bloomkit.plot.bits_per_key([0.1, 0.01, 0.001])
    ax = figure.axes[0]
    lines = lines_by_label(ax)
    bloom = next(line for label, line in lines.items() if label.startswith("Bloom formula"))
    cuckoo = next(line for label, line in lines.items() if label.startswith("cuckoo formula"))
    assert bloom.get_ydata()[1] == pytest.approx(math.log2(100) / math.log(2))  # 9.585 bits at 1 %
    assert cuckoo.get_ydata()[1] == pytest.approx((math.log2(100) + 3) / 0.955)  # Fan et al., b=4
    assert bloomkit.plot.cuckoo_bits_per_key(0.01, bucket_size=2) == pytest.approx((math.log2(100) + 2) / 0.84)
    assert ax.xaxis_inverted()


def test_figures_render_and_stay_out_of_pyplot():
    before = plt.get_fignums()
    for figure in (bloomkit.plot.fpr_curve(10_000, 0.001), bloomkit.plot.bits_per_key()):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n" and len(buffer.getvalue()) > 10_000
    assert plt.get_fignums() == before  # closed in pyplot: shown once in Jupyter, freed normally


def test_plots_draw_into_given_axes():
    figure, (left, right) = plt.subplots(1, 2)
    try:
        assert bloomkit.plot.fpr_curve(1000, 0.01, ax=left) is figure
        assert bloomkit.plot.bits_per_key(ax=right) is figure
        assert left.get_lines() and right.get_lines()
    finally:
        plt.close(figure)


def test_bad_arguments():
    with pytest.raises(TypeError, match="fpr_curve needs capacity"):
        bloomkit.plot.fpr_curve()
    names = [row.class_name for row in _types.ROWS]  # every registered class, by name
    expected = f"fpr_curve needs a bloomkit filter ({', '.join(names[:-1])} or {names[-1]}), got object"
    with pytest.raises(TypeError, match=f"^{re.escape(expected)}$"):
        bloomkit.plot.fpr_curve(filter=object())
    with pytest.raises(ValueError, match="every rate in \\(0, 1\\)"):
        bloomkit.plot.bits_per_key([0.1, 1.5])
    with pytest.raises(ValueError, match="probes must be positive"):
        bloomkit.plot.measure_fpr(bloomkit.BloomFilter(10, 0.1), probes=0)


def test_missing_matplotlib_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"pip install 'bloomkit\[plot\]'"):
        bloomkit.plot.fpr_curve(1000, 0.01)


def test_bits_per_key_plots_bloomkits_real_sizing_and_its_crossover():
    rates = [0.01, 0.001, 1e-4]
    figure = bloomkit.plot.bits_per_key(rates, keys=100_000)
    lines = lines_by_label(figure.axes[0])
    real_bloom = next(line for label, line in lines.items() if label.startswith("bloomkit BloomFilter"))
    real_cuckoo = next(line for label, line in lines.items() if label.startswith("bloomkit CuckooFilter"))
    for i, rate in enumerate(rates):
        assert real_bloom.get_ydata()[i] == 8 * bloomkit.calc.bloom_params(100_000, rate).nbytes / 100_000
        assert real_cuckoo.get_ydata()[i] == 8 * bloomkit.calc.cuckoo_params(100_000, rate).nbytes / 100_000
    crossing = bloomkit.plot.sizing_crossover()
    assert 1e-5 < crossing.always_below <= crossing.first < 0.01

    def smaller(rate):
        return bloomkit.calc.cuckoo_params(10**6, rate).nbytes < bloomkit.calc.bloom_params(10**6, rate).nbytes

    # Below the crossover cuckoo is smaller at every rate; just above it, not.
    assert all(smaller(rate) for rate in np.logspace(math.log10(crossing.always_below), -7, 60))
    assert not smaller(crossing.always_below * 1.01)
    assert smaller(crossing.first) and not any(
        smaller(rate) for rate in np.logspace(-1, math.log10(crossing.first * 1.01), 60)
    )
    # The formula-only crossover (ε ≈ 0.0041 for b=4) is not what is labelled.
    texts = [text.get_text() for text in bloomkit.plot.bits_per_key().axes[0].texts]
    assert any(f"below ε ≈ {crossing.always_below:.2g}" in text for text in texts)


def test_bits_per_key_crossover_label_covers_no_curve_and_no_legend():
    figure = bloomkit.plot.bits_per_key()
    ax = figure.axes[0]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    (label,) = [text for text in ax.texts if "cuckoo smaller" in text.get_text()]
    box = label.get_window_extent(renderer)
    assert ax.get_window_extent(renderer).contains(box.x0, box.y0) and ax.get_window_extent(renderer).contains(
        box.x1, box.y1
    )
    for line in ax.get_lines():
        xy = line.get_xydata()
        if len(xy) < 10:  # the crossover's own vertical line is left of the label, checked below
            continue
        # Densify each curve tenfold so a segment crossing the box is caught between points.
        x = np.interp(np.linspace(0, len(xy) - 1, 10 * len(xy)), np.arange(len(xy)), np.log10(xy[:, 0]))
        y = np.interp(np.linspace(0, len(xy) - 1, 10 * len(xy)), np.arange(len(xy)), xy[:, 1])
        points = ax.transData.transform(np.column_stack([10.0**x, y]))
        inside = (
            (points[:, 0] >= box.x0) & (points[:, 0] <= box.x1) & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1)
        )
        assert not inside.any(), line.get_label()
    crossing = bloomkit.plot.sizing_crossover()
    line_x = ax.transData.transform([(crossing.always_below, 10.0)])[0, 0]
    assert not box.x0 <= line_x <= box.x1
    assert not box.overlaps(ax.get_legend().get_window_extent(renderer))
    plt.close(figure)


def test_fpr_curve_of_a_scalable_filter_is_its_compound_rate():
    s = bloomkit.ScalableBloomFilter(1000, 0.01)
    s.update(np.arange(20_000))
    figure = bloomkit.plot.fpr_curve(filter=s, probes=20_000)
    ax = figure.axes[0]
    curve = next(line for label, line in lines_by_label(ax).items() if label.startswith("compound FPR"))
    x, y = curve.get_xdata(), curve.get_ydata()
    assert x[-1] == 2 * len(s) and np.all(np.asarray(y) < 0.01)  # the bound holds however far it grows
    i = int(np.searchsorted(x, 20_000))
    assert y[i] == pytest.approx(s.estimated_fpr(), rel=0.2)  # same parameters, same chain
    assert "compound" in ax.get_title()


def test_fpr_curve_of_a_cuckoo_filter_is_load_against_fpr():
    c = bloomkit.CuckooFilter(20_000, 0.01)
    c.update(np.arange(15_000))
    ax = bloomkit.plot.fpr_curve(filter=c, probes=20_000).axes[0]
    curve = next(line for label, line in lines_by_label(ax).items() if label.startswith("bound"))
    x, y = curve.get_xdata(), curve.get_ydata()
    assert x[0] == 0 and x[-1] == 1
    assert y[-1] == pytest.approx(bloomkit.calc.cuckoo_false_positive_rate(c.fingerprint_bits, 4, 1.0))
    assert "load factor" in ax.get_xlabel()
    counting = bloomkit.CountingBloomFilter(5000, 0.01)
    counting.update(range(3000))
    assert bloomkit.plot.fpr_curve(filter=counting, probes=10_000).axes[0].get_lines()


def measured_x(ax):
    """The x of the measured point (an error bar's "o", or the "v" of a zero count)."""
    (x,) = {float(line.get_xdata()[0]) for line in ax.get_lines() if line.get_marker() in ("o", "v")}
    return x


@pytest.mark.parametrize("case", FILTER_TYPES, ids=lambda case: case.name)
def test_fpr_curve_draws_each_registered_type_with_its_own_model(case):
    # The model (the registry row's fpr_model) must predict the rate the filter
    # shows: at the measured point's x the first line, the theory, is within a
    # factor 1.5 of the rate measured on 100,000 absent keys when that counts
    # at least 100 false positives (its 95 % interval then under +-20 %;
    # every type here has 200-1,000); a rate too small to count must be
    # predicted as one (under 100 expected).
    probes = 100_000
    f = case.build(np.arange(20_000, dtype=np.uint64), 20_000, 0.01, 3)
    ax = bloomkit.plot.fpr_curve(filter=f, probes=probes).axes[0]
    theory = ax.get_lines()[0]
    x = measured_x(ax)
    predicted = float(np.interp(x, theory.get_xdata(), theory.get_ydata()))
    measured = bloomkit.plot.measure_fpr(f, probes)
    if measured * probes >= 100:
        assert measured / 1.5 < predicted < measured * 1.5, (case.row.fpr_model, predicted, measured)
    else:
        assert predicted * probes < 100, (case.row.fpr_model, predicted, measured)
    plt.close(ax.figure)


def test_fpr_curve_of_a_rotating_filter_is_its_window_rate():
    # 200,000 keys through a window of the last 100,000 in 5 generations: the
    # window's rate (all live generations OR-ed) is what it answers with, not
    # one Bloom table's rate at len(f) keys (0.92 before fpr_curve knew windows).
    r = bloomkit.RotatingBloomFilter(100_000, 0.01, window=100_000)
    r.update(np.arange(200_000))
    ax = bloomkit.plot.fpr_curve(filter=r, probes=100_000).axes[0]
    curve = next(line for label, line in lines_by_label(ax).items() if label.startswith("window rate"))
    newest = r.generations_info[-1].count
    assert measured_x(ax) == newest
    at_newest = float(np.interp(newest, curve.get_xdata(), curve.get_ydata()))
    measured = bloomkit.plot.measure_fpr(r, 100_000)
    assert measured < 0.0115 and at_newest == pytest.approx(measured, rel=0.2)
    share = next(line for label, line in lines_by_label(ax).items() if label.startswith("a generation's share"))
    assert share.get_xdata()[0] == 25_000  # ceil(100,000 / (5 - 1))
    estimate = next(line for label, line in lines_by_label(ax).items() if label.startswith("estimated_fpr()"))
    assert estimate.get_ydata()[0] == pytest.approx(r.estimated_fpr())
    assert "window" in ax.get_title()
    plt.close(ax.figure)


def test_fpr_curve_of_a_binary_fuse_filter_is_its_fixed_rate():
    f = bloomkit.BinaryFuseFilter.build(np.arange(50_000), fingerprint_bits=16)
    ax = bloomkit.plot.fpr_curve(filter=f, probes=100_000).axes[0]
    (theory,) = (line for label, line in lines_by_label(ax).items() if label.startswith("theory"))
    assert list(theory.get_ydata()) == [2.0**-16, 2.0**-16] and list(theory.get_xdata()) == [0, 100_000]
    assert measured_x(ax) == 50_000 and "frozen, error_rate 1.53e-05" in ax.get_title()
    plt.close(ax.figure)
