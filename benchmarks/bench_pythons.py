"""The same per-key and batch timings on each CPython, for ratios against 3.11.

.ci/pythons.sh runs it once in each version's virtualenv (the wheel built for
that version) and then once more with ``--compare`` over the lines they printed:

    python benchmarks/bench_pythons.py                  # one JSON line: this interpreter's ns/key
    python benchmarks/bench_pythons.py --compare FILE   # a table of FILE's lines, ratios to 3.11

Interleaved best-of-N, split_block, 200,000 keys per loop (1,000,000 per batch),
in CPU time of the process (``time.process_time``: both threads of a two-thread
batch count), so that runs on a shared, busy machine stay comparable.
Per-key loops include the interpreter's own loop, which is what a user's loop
costs; the int key's fast read differs per version (cpp/bindings/int_key.hpp).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time


def best_of(functions: dict, repeat: int) -> dict:
    best = {name: float("inf") for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            gc.disable()
            start = time.process_time()
            count = function()
            best[name] = min(best[name], (time.process_time() - start) / count * 1e9)
            gc.enable()
    return best


def measure(repeat: int) -> dict:
    import numpy as np

    import bloomkit
    from bloomkit import _core

    n, batch = 200_000, 1_000_000
    rng = np.random.default_rng(3)
    small = [int(v) for v in rng.integers(0, 2**30, size=n)]  # compact ints on 3.12+
    large = [int(v) for v in rng.integers(2**40, 2**63, size=n, dtype=np.int64)]
    strs = [f"https://example.com/item/{i}" for i in range(n)]
    array = rng.integers(0, 2**63, size=batch, dtype=np.uint64)

    def fresh():
        return bloomkit.BloomFilter(capacity=batch, error_rate=0.01, layout="split_block")

    def per_key_add(keys):
        def run():
            add = fresh().add
            for k in keys:
                add(k)
            return len(keys)

        return run

    def per_key_in(keys):
        f = fresh()
        f.update(keys)

        def run():
            found = 0
            for k in keys:
                found += k in f
            assert found == len(keys)
            return len(keys)

        return run

    def batch_add():
        fresh().update(array)
        return batch

    loaded = fresh()
    loaded.update(array)

    def batch_contains():
        assert loaded.contains_many(array).all()
        return batch

    def list_update():
        fresh().update(strs)
        return n

    timings = best_of(
        {
            "add int < 2**30": per_key_add(small),
            "add int >= 2**40": per_key_add(large),
            "in int >= 2**40": per_key_in(large),
            "add str": per_key_add(strs),
            "in str": per_key_in(strs),
            "update(list of str)": list_update,
            "update(uint64 array)": batch_add,
            "contains_many(uint64 array)": batch_contains,
        },
        repeat,
    )
    return {
        "python": "%d.%d" % sys.version_info[:2],
        "int_fast_path": _core._INT_FAST_PATH,
        "ns_per_key": {name: round(value, 1) for name, value in timings.items()},
    }


def compare(path: str) -> None:
    runs = [json.loads(line) for line in open(path) if line.startswith("{")]
    base = next((r for r in runs if r["python"] == "3.11"), runs[0])
    names = list(base["ns_per_key"])
    print(f"CPU ns/key (ratio to {base['python']}; < 1 is faster)")
    print("| operation | " + " | ".join(f"{r['python']} ({r['int_fast_path']})" for r in runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for name in names:
        cells = []
        for r in runs:
            value = r["ns_per_key"].get(name)
            cells.append("-" if value is None else f"{value:.1f} ({value / base['ns_per_key'][name]:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compare", metavar="FILE", help="print a table of the JSON lines in FILE")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
    else:
        print(json.dumps(measure(args.repeat)))


if __name__ == "__main__":
    main()
