"""Parquet file skipping: which of many files may hold any of a set of ids?

``--files`` Parquet files of one row group each (``--rows`` int64 ids per
file, all distinct, shuffled so min/max statistics cannot skip), written by
pyarrow with a Bloom filter on ``id`` at ``--fpp``. The query: ``--keys``
ids, of which ``--present`` are in the files (each in a different file) and
the rest in none. Compared in one run:

* ``bloomkit.parquet.candidates(paths, "id", ids)`` (keys hashed once; per
  file: footer, filter read, a probe that stops at the first hit);
* DuckDB's ``parquet_bloom_probe`` for each id over all the files (one
  query per id, as the function takes one value) — measured on
  ``--duckdb-keys`` ids and scaled to ``--keys`` (the per-id cost does not
  depend on which ids);
* a pyarrow dataset scan with the filter ``id in ids``, file by file
  (``fragment.count_rows(filter=...)``);
* DuckDB's own scan ``SELECT DISTINCT filename FROM read_parquet(...) WHERE
  id IN (...)`` (which may use the Bloom filters itself).

The exact answer (the ``--present`` files) is printed beside each result:
the Bloom routes answer with false positives (about ``1 - (1 - fpp)^keys`` of
the other files), the scans exactly.

    python benchmarks/bench_parquet.py --files 1000 --rows 10000 --keys 10000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import header, parse_count, print_machine, timed  # noqa: E402


def write_files(folder: str, files: int, rows: int, fpp: float, seed: int) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows).astype(np.int64) * 2  # even ids are present; odd ones absent
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"part-{i:05d}.parquet")
        table = pa.table({"id": ids[i * rows : (i + 1) * rows]})
        pq.write_table(table, path, bloom_filter_options={"id": {"ndv": rows, "fpp": fpp}})
        paths.append(path)
    return paths, ids


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=parse_count, default=1000)
    parser.add_argument("--rows", type=parse_count, default=10_000, help="ids per file (one row group)")
    parser.add_argument("--keys", type=parse_count, default=10_000, help="ids asked for")
    parser.add_argument("--present", type=int, default=10, help="of them, in the files (each in its own file)")
    parser.add_argument("--fpp", type=float, default=1e-5, help="the writer's false-positive rate per key")
    parser.add_argument("--duckdb-keys", type=int, default=20, help="ids probed with parquet_bloom_probe")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    import bloomkit.parquet

    info = header("bloomkit benchmark: skipping Parquet files with their Bloom filters", args)
    print_machine(info, {"pyarrow": pa.__version__, "duckdb": duckdb.__version__})
    folder = tempfile.mkdtemp(prefix="bloomkit-bench-parquet-")
    try:
        t_write, (paths, ids) = timed(lambda: write_files(folder, args.files, args.rows, args.fpp, args.seed))
        rng = np.random.default_rng(args.seed + 1)
        holders = rng.choice(args.files, size=args.present, replace=False)
        present = np.array([ids[h * args.rows + rng.integers(args.rows)] for h in holders], dtype=np.int64)
        absent = rng.choice(args.files * args.rows, size=args.keys - args.present, replace=False) * 2 + 1
        keys = rng.permutation(np.concatenate([present, absent.astype(np.int64)]))
        exact = sorted(paths[h] for h in holders)
        size = sum(os.path.getsize(p) for p in paths)
        print(
            f"\n{args.files} files x {args.rows:,} ids ({size / 1e6:.1f} MB, written in {t_write:.1f} s); "
            f"{args.keys:,} ids asked, {args.present} present (in {len(exact)} files)\n"
        )

        results = []
        t, found = timed(lambda: bloomkit.parquet.candidates(paths, "id", keys))
        results.append(("bloomkit.parquet.candidates", t, len({p for p, _ in found}), ""))
        assert set(exact) <= {p for p, _ in found}, "bloomkit missed a file holding a key"

        con = duckdb.connect()
        glob = os.path.join(folder, "*.parquet")
        sample = keys[: args.duckdb_keys].tolist()

        def duckdb_probe_loop():
            maybe = set()
            for key in sample:
                rows = con.execute(
                    "SELECT file_name FROM parquet_bloom_probe(?, 'id', ?) WHERE NOT bloom_filter_excludes",
                    [glob, key],
                ).fetchall()
                maybe.update(r[0] for r in rows)
            return maybe

        t, maybe = timed(duckdb_probe_loop)
        scaled = t * args.keys / len(sample)
        results.append(
            (
                "DuckDB parquet_bloom_probe per id",
                scaled,
                None,
                f"{len(sample)} ids in {t:.2f} s, scaled x{args.keys / len(sample):.0f}",
            )
        )

        dataset = ds.dataset(paths, format="parquet")
        key_array = pa.array(keys)

        def pyarrow_scan():
            wanted = pc.field("id").isin(key_array)
            return {fragment.path for fragment in dataset.get_fragments() if fragment.count_rows(filter=wanted) > 0}

        t, files = timed(pyarrow_scan)
        results.append(("pyarrow dataset scan, id in ids", t, len(files), ""))

        con.register("wanted", pa.table({"id": keys}))

        def duckdb_scan():
            rows = con.execute(
                f"SELECT DISTINCT filename FROM read_parquet('{glob}', filename=true) WHERE id IN (SELECT id FROM wanted)"
            ).fetchall()
            return {r[0] for r in rows}

        t, files = timed(duckdb_scan)
        results.append(("DuckDB scan, id IN (SELECT ...)", t, len(files), ""))

        ours = results[0][1]
        fastest_other = min(r[1] for r in results[1:])
        print(f"| route | seconds | files returned (exact: {len(exact)}) | vs bloomkit | note |")
        print("|---|---:|---:|---:|---|")
        for name, seconds, count, note in results:
            shown = "-" if count is None else f"{count:,}"
            print(f"| {name} | {seconds:.3f} | {shown} | {seconds / ours:.1f}x | {note} |")
        print(f"\nbloomkit vs the fastest other route: {fastest_other / ours:.1f}x")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
