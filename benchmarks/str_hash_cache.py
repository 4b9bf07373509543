#!/usr/bin/env python3
"""How much of a hash(str)-based peer's str speed is CPython's cached str hash.

CPython stores a str's hash in the object the first time ``hash()`` runs, so
a peer that hashes with ``hash(key)`` (abloom) pays for hashing only once per
str object. ``bench_speed.py`` reuses one key list across its best-of-N
rounds, so from the second round on such a peer hashes nothing; a crawler
meets every URL as a new object. bloomkit hashes the UTF-8 bytes with
MurmurHash3 every time, cached or not. This times ``update(list)`` on fresh
str objects and on objects whose hash is already cached.

    python benchmarks/str_hash_cache.py [--keys 1e6]
"""

from __future__ import annotations

import argparse
import time

import bloomkit


def fresh_urls(count: int) -> list:
    return [f"https://example.com/path/{i}/item?id={i * 7}" for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=float, default=1e6)
    count = int(parser.parse_args().keys)
    import abloom

    makers = {"abloom": lambda: abloom.BloomFilter(count, 0.01), "bloomkit": lambda: bloomkit.BloomFilter(count, 0.01)}
    print("| library | str objects | update(list) ns/key |")
    print("|---|---|---:|")
    for library, make in makers.items():
        for cached in (False, True):
            keys = fresh_urls(count)
            if cached:
                for key in keys:
                    hash(key)
            target = make()
            start = time.perf_counter()
            target.update(keys)
            elapsed = time.perf_counter() - start
            label = "hash already cached" if cached else "fresh"
            print(f"| {library} | {label} | {elapsed / count * 1e9:.1f} |")


if __name__ == "__main__":
    main()
