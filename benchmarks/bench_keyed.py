"""Cost of keyed hashing (``secret_key=``): SipHash-2-4-128 vs MurmurHash3_x64_128.

Same filter, same keys, with and without a secret key; interleaved best-of-N so
both sides see the same machine noise. Reports ns per key and the keyed/unkeyed
ratio for integer keys (NumPy uint64), URL-like str keys (a list) and the same
strings as a NumPy 'U' array, for ``update`` and ``contains_many``.

    python benchmarks/bench_keyed.py [--keys 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

import bloomkit


def best_of(functions, repeat):
    """Interleaved best-of-``repeat`` seconds for each function."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for i, function in enumerate(functions):
            gc.disable()
            start = time.perf_counter()
            function()
            best[i] = min(best[i], time.perf_counter() - start)
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.keys
    rng = np.random.default_rng(1)
    inputs = {
        "uint64 array": rng.integers(0, 2**63, size=n, dtype=np.uint64),
        "str list": [f"https://example.com/item/{i}?ref={i * 7919 % 100003}" for i in range(n)],
    }
    inputs["str 'U' array"] = np.array(inputs["str list"])
    secret = bytes(range(32))
    print(f"{n:,} keys, best of {args.repeat}, layout=blocked512, capacity={n:,}, error_rate=0.01")
    print("| input | operation | unkeyed ns/key | keyed ns/key | keyed / unkeyed |")
    print("|---|---|---:|---:|---:|")
    for name, keys in inputs.items():
        plain = bloomkit.BloomFilter(n, 0.01, layout="blocked512")
        keyed = bloomkit.BloomFilter(n, 0.01, layout="blocked512", secret_key=secret)
        for operation in ("update", "contains_many"):
            times = best_of(
                [lambda f=plain: getattr(f, operation)(keys), lambda f=keyed: getattr(f, operation)(keys)],
                args.repeat,
            )
            a, b = (t / n * 1e9 for t in times)
            print(f"| {name} | {operation} | {a:.1f} | {b:.1f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
