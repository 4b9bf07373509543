"""dedup_mask against pandas duplicated()/drop_duplicates and polars is_first_distinct.

Each case runs in a fresh subprocess: the data is built first, then the
process's peak-RSS counter is reset (``/proc/self/clear_refs``, Linux) and
the one operation runs; we report its wall time and its peak RSS growth
over the RSS before it (transient memory: hash tables, digests, masks).
Rounds are interleaved (every case once per round) and the best time and
the smallest growth of the rounds are reported.

    python benchmarks/bench_dedup.py [--rows 5000000] [--rounds 2] [--out FILE]

Data: URL-like strings ``https://example.com/item/<id>`` with ids drawn
from 2**21 values (about 1.8M distinct among 5M rows), and an int64
"status" column with 3 values for the two-key-column frames.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

CASES = {
    # name: (data kind, tool)
    "Series object: dedup_mask": ("series_object", "bloomkit"),
    "Series object: ~duplicated()": ("series_object", "duplicated"),
    "Series string[pyarrow]: dedup_mask": ("series_arrow", "bloomkit"),
    "Series string[pyarrow]: ~duplicated()": ("series_arrow", "duplicated"),
    "DataFrame, 1 key column: dedup_mask(subset=)": ("frame1", "bloomkit"),
    "DataFrame, 1 key column: ~duplicated(subset=)": ("frame1", "duplicated"),
    "DataFrame, 1 key column: drop_duplicates(subset=)": ("frame1", "drop_duplicates"),
    "DataFrame, 2 key columns: dedup_mask(subset=)": ("frame2", "bloomkit"),
    "DataFrame, 2 key columns: ~duplicated(subset=)": ("frame2", "duplicated"),
    "DataFrame, 2 key columns: drop_duplicates(subset=)": ("frame2", "drop_duplicates"),
    "polars Series: dedup_mask": ("polars_series", "bloomkit"),
    "polars Series: is_first_distinct()": ("polars_series", "polars"),
    "polars DataFrame, 2 key columns: dedup_mask": ("polars_frame2", "bloomkit"),
    "polars DataFrame, 2 key columns: is_first_distinct()": ("polars_frame2", "polars"),
    # A column read from Parquet arrives in chunks: in place (ChunkedBatch) vs one chunk,
    # and vs combining the chunks first (what bloomkit did before reading them in place).
    "pyarrow, 1 chunk: dedup_mask": ("arrow_single", "bloomkit"),
    "pyarrow, 39 chunks: dedup_mask": ("arrow_chunked", "bloomkit"),
    "pyarrow, 39 chunks: combine_chunks + dedup_mask": ("arrow_chunked", "combined"),
    "pyarrow, 1 chunk: dedup_mask(keep='last')": ("arrow_single", "bloomkit_last"),
    "pyarrow, 39 chunks: dedup_mask(keep='last')": ("arrow_chunked", "bloomkit_last"),
}


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def _data(kind: str, rows: int):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = np.random.default_rng(0).integers(0, 2**21, size=rows)
    urls = pc.binary_join_element_wise("https://example.com/item/", pa.array(ids).cast(pa.string()), "")
    status = pa.array(np.array([200, 404, 500])[ids % 3])
    if kind == "arrow_single":
        return urls
    if kind == "arrow_chunked":
        size = -(-rows // 39)  # 39 chunks, as 5M rows read from Parquet
        return pa.chunked_array([urls[i : i + size] for i in range(0, rows, size)])
    if kind.startswith("polars"):
        import polars as pl

        if kind == "polars_series":
            return pl.Series("url", urls)
        return pl.DataFrame({"url": urls, "status": status})
    import pandas as pd

    if kind == "series_object":
        return pd.Series(urls.to_numpy(zero_copy_only=False), dtype=object)
    if kind == "series_arrow":
        return pd.Series(pd.arrays.ArrowStringArray(urls))
    frame = pd.DataFrame({"url": urls.to_numpy(zero_copy_only=False), "status": status.to_numpy()})
    frame["url"] = frame["url"].astype(object)
    frame["payload"] = np.arange(rows, dtype=np.float64)
    return frame


def _operation(kind: str, tool: str, data):
    import bloomkit

    subset = ["url"] if kind == "frame1" else ["url", "status"]
    if tool == "combined":
        return lambda: bloomkit.dedup_mask(data.combine_chunks())
    if tool == "bloomkit_last":
        return lambda: bloomkit.dedup_mask(data, keep="last")
    if tool == "bloomkit":
        if kind.startswith("frame"):
            return lambda: bloomkit.dedup_mask(data, subset=subset)
        return lambda: bloomkit.dedup_mask(data)
    if tool == "duplicated":
        if kind.startswith("frame"):
            return lambda: ~data.duplicated(subset=subset)
        return lambda: ~data.duplicated()
    if tool == "drop_duplicates":
        return lambda: data.drop_duplicates(subset=subset)
    if tool == "polars":
        import polars as pl

        if kind == "polars_series":
            return lambda: data.is_first_distinct()
        return lambda: data.select(pl.struct("url", "status").is_first_distinct()).to_series()
    raise ValueError(tool)


def run_case(name: str, rows: int) -> dict:
    kind, tool = CASES[name]
    data = _data(kind, rows)
    operation = _operation(kind, tool, data)
    before = _rss_kib("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    result = operation()
    seconds = time.perf_counter() - start
    peak = _rss_kib("VmHWM")
    kept = int(len(result) if tool == "drop_duplicates" else result.sum())
    return {"case": name, "seconds": seconds, "peak_growth_mib": (peak - before) / 1024, "kept": kept}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", help="write the Markdown report here too")
    parser.add_argument("--only", help="run only the cases whose name contains this text (e.g. pyarrow)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: run one case in this process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.rows)))
        return 0

    best: dict = {}
    names = [name for name in CASES if args.only is None or args.only in name]
    for round_number in range(args.rounds):
        for name in names:
            output = subprocess.run(
                [sys.executable, __file__, "--case", name, "--rows", str(args.rows)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            result = json.loads(output.strip().splitlines()[-1])
            print(
                f"round {round_number + 1}: {name}: {result['seconds']:.2f} s, +{result['peak_growth_mib']:.0f} MiB",
                file=sys.stderr,
            )
            previous = best.get(name)
            if previous is None:
                best[name] = result
            else:
                previous["seconds"] = min(previous["seconds"], result["seconds"])
                previous["peak_growth_mib"] = min(previous["peak_growth_mib"], result["peak_growth_mib"])

    import pandas
    import polars

    import bloomkit

    lines = [
        f"# dedup_mask vs pandas and polars, {args.rows:,} rows",
        "",
        f"`python benchmarks/bench_dedup.py --rows {args.rows} --rounds {args.rounds}"
        + (f" --only {args.only}" if args.only else "")
        + f"` on {platform.machine()}, "
        f"{os.cpu_count()} cores (shared), Python {platform.python_version()}, bloomkit {bloomkit.__version__}, "
        f"pandas {pandas.__version__}, polars {polars.__version__}. Each case in a fresh process; best of "
        f"{args.rounds} interleaved rounds. Peak RSS growth = peak RSS during the call minus RSS before it. "
        "`kept` = rows marked first (dedup_mask at its default error_rate 0.001 may drop a few new rows).",
        "",
        "| case | seconds | peak RSS growth | kept | time vs pandas/polars |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, result in best.items():
        group = name.split(":")[0]
        peers = [r for n, r in best.items() if n.split(":")[0] == group and not CASES[n][1].startswith("bloomkit")]
        ratio = ""
        if CASES[name][1].startswith("bloomkit") and peers:
            fastest = min(peers, key=lambda r: r["seconds"])
            ratio = f"{fastest['seconds'] / result['seconds']:.2f}x faster than {fastest['case'].split(': ')[1]}"
        lines.append(
            f"| {name} | {result['seconds']:.2f} | {result['peak_growth_mib']:+.0f} MiB | {result['kept']:,} | {ratio} |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
