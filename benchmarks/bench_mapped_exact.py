"""The cost and the effect of exact test-and-set on a file mapped "r+".

Part 1, cost (one process, no contention): ns/key of adding to a file mapped
"r+" with ``exact=True`` (the writer lock around each add and each 256-key
chunk of a batch, writer_lock.hpp) and ``exact=False`` (atomic ORs only), next
to an in-memory filter; per-key ``add`` of str keys, ``add_many`` of a list of
str and of a NumPy uint64 array. Runs alternate, best of ``--repeat``.

Part 2, effect: ``--procs`` processes add the same keys to a fresh file at
the same moment (a barrier) for ``--rounds`` rounds per layout; the report
gives the "new" answers summed over processes against the distinct keys,
with and without ``exact``. The filter is sized (1e-6 at 10x the keys) so a
sequential build reports every key new.

    python benchmarks/bench_mapped_exact.py > report.md
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time

import numpy as np

from bloomkit import BloomFilter

LAYOUTS = ["classic", "blocked512", "split_block"]


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cost(directory, n_batch, n_single, repeat, layout):
    ints = np.random.default_rng(1).integers(0, 2**63, n_batch, dtype=np.uint64)
    strs = [f"https://example.com/{i}" for i in range(n_batch)]
    singles = strs[:n_single]
    best = {}
    for r in range(repeat):
        for kind in ("in memory", "r+ exact=False", "r+ exact=True"):
            for what, data, per_key in (
                ("add (str, per key)", singles, True),
                ("add_many (list of str)", strs, False),
                ("add_many (NumPy uint64)", ints, False),
            ):
                path = os.path.join(directory, f"cost-{r}.bk")
                if kind == "in memory":
                    f = BloomFilter(2 * n_batch, 0.01, layout=layout)
                else:
                    BloomFilter.open(path, "w+", capacity=2 * n_batch, error_rate=0.01, layout=layout).close()
                    f = BloomFilter.open(path, "r+", exact=kind.endswith("True"))
                add = f.add
                seconds = _time((lambda: [add(k) for k in data]) if per_key else (lambda: f.add_many(data)))
                f.close()
                key = (what, kind)
                best[key] = min(best.get(key, float("inf")), seconds * 1e9 / len(data))
    return best


def _contend(path, batch, how, exact, barrier, results):
    with BloomFilter.open(path, "r+", exact=exact) as f:
        barrier.wait(60)
        if how == "batch":
            new = int((~f.add_many(batch)).sum())
        elif how == "small":
            new = sum(int((~f.add_many(batch[i : i + 997])).sum()) for i in range(0, len(batch), 997))
        else:
            new = sum(not f.add(k) for k in batch)
    results.put(new)


def contention(directory, procs, rounds, keys_per_round, exact, layout):
    ctx = multiprocessing.get_context("fork")
    ways = ["batch", "small", "single", "batch"]
    total_new = total_distinct = over = 0
    for r in range(rounds):
        batch = [f"k{r}-{i}" for i in range(keys_per_round)]
        path = os.path.join(directory, f"contend-{layout}-{exact}-{r}.bk")
        BloomFilter.open(path, "w+", capacity=10 * keys_per_round, error_rate=1e-6, layout=layout).close()
        barrier, results = ctx.Barrier(procs), ctx.Queue()
        workers = [
            ctx.Process(target=_contend, args=(path, batch, ways[(i + r) % len(ways)], exact, barrier, results))
            for i in range(procs)
        ]
        for w in workers:
            w.start()
        news = sum(results.get(timeout=300) for _ in workers)
        for w in workers:
            w.join()
        total_new += news
        total_distinct += keys_per_round
        over += news != keys_per_round
    return total_new, total_distinct, over


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--single", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--keys", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        print(f"# Exact test-and-set on a file mapped r+ ({os.cpu_count()} CPUs)\n")
        print("## Cost, one process, ns/key (best of", args.repeat, "), layout split_block\n")
        best = cost(directory, args.batch, args.single, args.repeat, "split_block")
        kinds = ("in memory", "r+ exact=False", "r+ exact=True")
        print("| operation | " + " | ".join(kinds) + " |\n|---|---|---|---|")
        for what in ("add (str, per key)", "add_many (list of str)", "add_many (NumPy uint64)"):
            print(f"| {what} | " + " | ".join(f"{best[(what, k)]:.1f}" for k in kinds) + " |")
        print(f"\n## Contention: {args.procs} processes x {args.rounds} rounds x {args.keys} keys, same keys\n")
        print("| layout | exact | 'new' answers | distinct keys | rounds with extra 'new' |\n|---|---|---|---|---|")
        for layout in LAYOUTS:
            for exact in (False, True):
                new, distinct, over = contention(directory, args.procs, args.rounds, args.keys, exact, layout)
                print(f"| {layout} | {exact} | {new} | {distinct} | {over} |", flush=True)


if __name__ == "__main__":
    main()
