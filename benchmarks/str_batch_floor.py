#!/usr/bin/env python3
"""The floor of a str-list batch: what each piece of ``f.update(list_of_str)`` costs.

Compiles ``str_batch_floor.cpp`` (next to this file) against the repository's
C++ headers with the system C++ compiler, then times, on the same fresh
URL-like str objects (new objects every round, as a crawler meets them),
interleaved best-of-N:

- the stages of the C++ file (list walk; + reading every byte; + a strong
  reference per item; + MurmurHash3; + a split-block insert per key; hashed
  in chunks with prefetching as bloomkit's batch loops do);
- bloomkit's ``update(list)`` and ``contains_many(list)``;
- abloom's ``update(list)`` (CPython's ``hash(str)``, SipHash-1-3) when installed.

    python benchmarks/str_batch_floor.py [--keys 1e6] [--repeats 5]

Prints ns/key per stage, so the report can state the floor.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

import bloomkit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGES = ("walk", "read", "incref", "murmur", "probe", "batched")


def build_extension(directory: str):
    """Compile str_batch_floor.cpp into ``directory`` and import it."""
    source = os.path.join(HERE, "str_batch_floor.cpp")
    target = os.path.join(directory, "str_batch_floor_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    command = [
        os.environ.get("CXX", "c++"),
        "-O3",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-I" + sysconfig.get_paths()["include"],
        "-I" + os.path.join(ROOT, "cpp", "include"),
        source,
        "-o",
        target,
    ]
    subprocess.run(command, check=True)
    spec = importlib.util.spec_from_file_location("str_batch_floor_ext", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def url_keys(count: int) -> list:
    """The URL keys of benchmarks/_common.py's url_keys, as a list of str."""
    mult = 2654435761
    return [f"https://example.com/path/{i}/item?id={(i * mult) & 0xFFFFFFFF}" for i in range(count)]


def renew(keys: list) -> None:
    keys[:] = [key.encode().decode() for key in keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=float, default=1e6)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = int(args.keys)
    keys = url_keys(n)
    probe = bloomkit.BloomFilter(n, 0.01, layout="split_block")
    bits, k = probe.num_bits, probe.num_hashes
    with tempfile.TemporaryDirectory() as directory:
        ext = build_extension(directory)
        runs = {f"stage {s}": (lambda s=s: ext.run_stage(keys, s, bits, k)) for s in STAGES}

        def bloomkit_update():
            bloomkit.BloomFilter(n, 0.01, layout="split_block").update(keys)

        filled = bloomkit.BloomFilter(n, 0.01, layout="split_block")
        filled.update(keys)
        runs["bloomkit update(list)"] = bloomkit_update
        runs["bloomkit contains_many(list)"] = lambda: filled.contains_many(keys)
        try:
            import abloom

            runs["abloom update(list)"] = lambda: abloom.BloomFilter(n, 0.01).update(keys)
        except ImportError:
            pass
        best = {name: float("inf") for name in runs}
        names = list(runs)
        for r in range(args.repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                renew(keys)
                gc.collect()
                gc.disable()
                try:
                    start = time.perf_counter()
                    runs[name]()
                    best[name] = min(best[name], time.perf_counter() - start)
                finally:
                    gc.enable()
    print(
        f"n = {n:,} URL-like str (fresh objects each round), best of {args.repeats}; "
        f"load average {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}"
    )
    print()
    print("| piece | ns/key |")
    print("|---|---:|")
    for name in names:
        print(f"| {name} | {best[name] / n * 1e9:.1f} |")


if __name__ == "__main__":
    main()
