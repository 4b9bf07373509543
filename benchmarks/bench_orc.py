"""ORC stripe skipping: which stripes of many ORC files may hold any of a set of ids?

``--files`` ORC files of one stripe each (``--rows`` int64 ids per file, all
distinct, shuffled so min/max statistics cannot skip), written by pyarrow
with Bloom filters on ``id`` at ``--fpp`` (one per 10,000-row stride), in
``--compression`` (ZLIB by default, as Hive writes; pyarrow's own default
is uncompressed). The
query: ``--keys`` ids, of which ``--present`` are in the files (each in a
different file) and the rest in none. Compared in one run:

* ``bloomkit.orc.candidates(paths, "id", ids)`` (keys hashed once; per file:
  the tail, the stripe footer, the filter stream, a probe that stops at the
  first hit);
* a pyarrow ORC dataset scan with the filter ``id in ids``, file by file
  (``fragment.count_rows(filter=...)``; pyarrow does not use ORC's Bloom
  filters);
* reading each file's ``id`` column with ``pyarrow.orc`` and ``pc.is_in``.

The exact answer (the ``--present`` files) is printed beside each result,
and each route's process CPU time (all its threads) beside its wall time:
on a shared machine the wall-time ratio moves with the load (bloomkit's
second thread is worth less when other processes hold the cores), the CPU
one much less.

    python benchmarks/bench_orc.py --files 1000 --rows 10000 --keys 10000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import header, parse_count, print_machine, timed  # noqa: E402


def timed_with_cpu(fn) -> tuple:
    """(wall seconds, process CPU seconds over all threads, result) of one call of fn.

    The CPU clock is read inside the timed call, so timed()'s own garbage
    collection before it is not counted.
    """
    cpu = [0.0]

    def run():
        start = time.process_time()
        result = fn()
        cpu[0] = time.process_time() - start
        return result

    wall, result = timed(run)
    return wall, cpu[0], result


def write_files(folder: str, files: int, rows: int, fpp: float, seed: int, compression: str = "zlib") -> tuple:
    import pyarrow as pa
    import pyarrow.orc

    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows).astype(np.int64) * 2  # even ids are present; odd ones absent
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"part-{i:05d}.orc")
        table = pa.table({"id": ids[i * rows : (i + 1) * rows]})
        pyarrow.orc.write_table(table, path, compression=compression, bloom_filter_columns=[1], bloom_filter_fpp=fpp)
        paths.append(path)
    return paths, ids


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=parse_count, default=1000)
    parser.add_argument("--rows", type=parse_count, default=10_000, help="ids per file (one stripe)")
    parser.add_argument("--keys", type=parse_count, default=10_000, help="ids asked for")
    parser.add_argument("--present", type=int, default=10, help="of them, in the files (each in its own file)")
    parser.add_argument("--fpp", type=float, default=1e-5, help="the writer's false-positive rate per key")
    parser.add_argument(
        "--compression", default="zlib", help="the files' codec (pyarrow's default is uncompressed; Hive's ZLIB)"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.orc

    import bloomkit.orc

    info = header("bloomkit benchmark: skipping ORC stripes with their Bloom filters", args)
    print_machine(info, {"pyarrow": pa.__version__})
    folder = tempfile.mkdtemp(prefix="bloomkit-bench-orc-")
    try:
        t_write, (paths, ids) = timed(
            lambda: write_files(folder, args.files, args.rows, args.fpp, args.seed, args.compression)
        )
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
        t, cpu, found = timed_with_cpu(lambda: bloomkit.orc.candidates(paths, "id", keys))
        results.append(("bloomkit.orc.candidates", t, cpu, len({p for p, _ in found})))
        assert set(exact) <= {p for p, _ in found}, "bloomkit missed a file holding a key"

        dataset = ds.dataset(paths, format="orc")
        key_array = pa.array(keys)

        def pyarrow_scan():
            wanted = pc.field("id").isin(key_array)
            return {fragment.path for fragment in dataset.get_fragments() if fragment.count_rows(filter=wanted) > 0}

        t, cpu, files = timed_with_cpu(pyarrow_scan)
        results.append(("pyarrow ORC dataset scan, id in ids", t, cpu, len(files)))

        def column_reads():
            return {
                p for p in paths if pc.any(pc.is_in(pyarrow.orc.read_table(p, columns=["id"])["id"], key_array)).as_py()
            }

        t, cpu, files = timed_with_cpu(column_reads)
        results.append(("pyarrow.orc.read_table + is_in per file", t, cpu, len(files)))

        ours, our_cpu = results[0][1], results[0][2]
        fastest = min(results[1:], key=lambda r: r[1])
        print(f"| route | seconds | CPU seconds | files returned (exact: {len(exact)}) | vs bloomkit |")
        print("|---|---:|---:|---:|---:|")
        for name, seconds, cpu, count in results:
            print(f"| {name} | {seconds:.3f} | {cpu:.3f} | {count:,} | {seconds / ours:.1f}x |")
        print(
            f"\nbloomkit vs the fastest other route: {fastest[1] / ours:.1f}x "
            f"(its CPU time: {fastest[2] / our_cpu:.1f}x bloomkit's)"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
