"""Figures in docs/integrations.md that follow from the code are computed here, not typed by hand."""

from __future__ import annotations

import pathlib

import bloomkit

DOC = (pathlib.Path(__file__).parent.parent / "docs" / "integrations.md").read_text(encoding="utf-8")


def _mib(filter) -> str:
    return f"{filter.nbytes / 2**20:.1f} MiB"


def test_spark_filter_sizes_are_the_computed_ones():
    default = _mib(bloomkit.BloomFilter(10_000_000, 0.01))
    classic = _mib(bloomkit.BloomFilter(10_000_000, 0.01, layout="classic"))
    assert (default, classic) == ("12.6 MiB", "11.4 MiB")
    assert f"200 × {default} (a 10 M-key, 1 % filter in the default\n  split_block layout)" in DOC
    # The 10 M-key runs: bloomkit's filter in the default layout, Spark's sized as the classic one (same m).
    assert f"Filters: bloomkit {default}, measured FPR 1.001 %" in DOC
    assert f"Spark's {classic}, 1.005 %" in DOC


def test_redis_shard_size_is_the_computed_one():
    nbytes = bloomkit.BloomFilter(1_000_000, 0.01).nbytes
    assert f"the default 1 % filter for 1 M keys is a\n{nbytes:,}-byte string" in DOC
