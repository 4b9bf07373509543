"""RotatingBloomFilter ("seen in the last W keys") vs the approaches people use without it.

A stream of URL-like str keys, a third of them repeats of a key seen within
the last window, goes through a test-and-set ("seen in the last W?") with:

- bloomkit ``RotatingBloomFilter(W, p, window=W, generations=g)``: batches
  (``add_many``, which rotates inside the batch exactly where single adds
  would) and per-key ``add``;
- two bloomkit ``BloomFilter`` swapped by hand every W keys (the usual
  hand-rolled window: seen = in current or in previous; add to current),
  batched with ``contains_many`` + ``add_many``; each at p/2 for W keys;
- the same pair of rbloom ``Bloom`` filters (per key; rbloom has no batch
  lookup);
- pyprobables ``RotatingBloomFilter`` (a queue of g Bloom filters of
  ceil(W / (g - 1)) keys at the same per-generation rate, rotated by
  count; pure Python, per key).

Reported per approach: ns/key of the test-and-set over the whole stream,
ns/key of lookups of fresh keys afterwards, the window's measured FPR on
those never-seen keys, how many of the last W distinct keys are still
reported (must be all), how many keys offered more than 2 W keys ago still
are (forgetting; ~FPR), and storage bytes. Every approach runs on one core
in this process, one after the other, in the same run: compare the ratios.

    python benchmarks/bench_rotating.py [--window 5e4] [--stream 1.5e5] [--probes 1e5]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import _common as C

GENERATIONS = 5


def stream_keys(count: int, window: int, seed: int = 7) -> list:
    """``count`` keys: two thirds new URLs, one third a repeat from the last ``window // 2`` offered."""
    import random

    rng = random.Random(seed)
    out: list = []
    fresh = 0
    for i in range(count):
        if i > 10 and rng.random() < 1 / 3:
            out.append(out[i - 1 - rng.randrange(min(i - 1, window // 2))])
        else:
            out.append(f"https://example.com/page/{fresh}")
            fresh += 1
    return out


class HandSwappedPair:
    """Two filters swapped every ``window`` keys: seen = in current or in previous."""

    def __init__(self, make, window: int):
        self.make, self.window = make, window
        self.current, self.previous, self.offered = make(), make(), 0

    def _rotate_if_due(self):
        if self.offered and self.offered % self.window == 0:
            self.previous, self.current = self.current, self.make()

    def add(self, key) -> bool:
        self._rotate_if_due()
        seen = key in self.current or key in self.previous
        self.current.add(key)
        self.offered += 1
        return seen

    def __contains__(self, key) -> bool:
        return key in self.current or key in self.previous


def bloomkit_pair_add_many(pair: HandSwappedPair, keys: list) -> int:
    """Batched test-and-set on a pair of bloomkit filters, rotating at every multiple of the window."""
    seen_count = 0
    i = 0
    while i < len(keys):
        pair._rotate_if_due()
        run = min(len(keys) - i, pair.window - pair.offered % pair.window)
        batch = keys[i : i + run]
        older = pair.previous.contains_many(batch)
        seen_count += int((pair.current.add_many(batch) | older).sum())
        pair.offered += run
        i += run
    return seen_count


def measure(name, make, run_stream, contains, nbytes, keys, probes, recent, old, out):
    C._progress(f"{name}: stream")
    f = make()
    start = time.perf_counter()
    run_stream(f, keys)
    stream_s = time.perf_counter() - start
    C._progress(f"{name}: lookups")
    start = time.perf_counter()
    false_positives = contains(f, probes)
    lookup_s = time.perf_counter() - start
    out.append(
        {
            "name": name,
            "stream_ns": stream_s / len(keys) * 1e9,
            "lookup_ns": lookup_s / len(probes) * 1e9,
            "fpr": false_positives / len(probes),
            "recent": contains(f, recent) / len(recent),
            "old": contains(f, old) / max(1, len(old)),
            "bytes": nbytes(f),
        }
    )


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=C.parse_count, default=50_000, help="W, keys (default 5e4)")
    parser.add_argument("--stream", type=C.parse_count, default=150_000, help="keys offered (default 1.5e5)")
    parser.add_argument("--probes", type=C.parse_count, default=100_000, help="never-seen lookups (default 1e5)")
    parser.add_argument("--error-rate", type=float, default=0.01, help="the window's rate p (default 0.01)")
    args = parser.parse_args(argv)
    W, p, g = args.window, args.error_rate, GENERATIONS
    info = C.machine_info()
    _, _, bloomkit = C.import_bloomkit("RotatingBloomFilter", "BloomFilter")
    rbloom, _ = C.import_peer("rbloom", "rbloom")
    probables, _ = C.import_peer("pyprobables", "probables")
    libs = dict(C.LIB_STATUS)
    print(f"# Rotating window: test-and-set over a stream, W = {W:,} keys, p = {p:g}, g = {g}")
    print()
    C.print_machine(info, libs)

    keys = stream_keys(args.stream, W)
    probes = [f"https://example.org/never/{i}" for i in range(args.probes)]
    # The last W keys offered (all must be found) and keys offered only more
    # than 2 W keys before the end (every approach here has forgotten them).
    recent = list(dict.fromkeys(keys[-W:]))
    late = set(keys[-2 * W :])
    old = [k for k in dict.fromkeys(keys[: max(0, len(keys) - 2 * W)]) if k not in late]
    rows: list = []
    p_g = 1 - (1 - p) ** (1 / g)
    per_generation = math.ceil(W / (g - 1))

    def count_in(f, ks):
        return sum(1 for k in ks if k in f)

    if bloomkit["RotatingBloomFilter"] is not None:
        Rotating, Bloom = bloomkit["RotatingBloomFilter"], bloomkit["BloomFilter"]

        def make_rotating():
            return Rotating(W, p, window=W, generations=g, layout="split_block")

        def batched(f, ks):
            for i in range(0, len(ks), 10_000):
                f.add_many(ks[i : i + 10_000])

        def per_key(f, ks):
            add = f.add
            for k in ks:
                add(k)

        def bulk_in(f, ks):
            return int(f.contains_many(ks).sum())

        measure(
            "bloomkit RotatingBloomFilter, add_many (10k batches)",
            make_rotating, batched, bulk_in, lambda f: f.nbytes, keys, probes, recent, old, rows,
        )  # fmt: skip
        measure(
            "bloomkit RotatingBloomFilter, add per key",
            make_rotating, per_key, count_in, lambda f: f.nbytes, keys, probes, recent, old, rows,
        )  # fmt: skip

        def make_pair():
            return HandSwappedPair(lambda: Bloom(W, p / 2, layout="split_block"), W)

        def pair_in(pair, ks):
            return int((pair.current.contains_many(ks) | pair.previous.contains_many(ks)).sum())

        measure(
            "2 bloomkit BloomFilters swapped by hand, batches",
            make_pair, bloomkit_pair_add_many, pair_in,
            lambda pair: pair.current.nbytes + pair.previous.nbytes, keys, probes, recent, old, rows,
        )  # fmt: skip
    if rbloom:

        def make_rbloom_pair():
            return HandSwappedPair(lambda: rbloom.Bloom(W, p / 2), W)

        def pair_per_key(pair, ks):
            add = pair.add
            for k in ks:
                add(k)

        measure(
            "2 rbloom Blooms swapped by hand, per key",
            make_rbloom_pair, pair_per_key, count_in,
            lambda pair: (pair.current.size_in_bits + pair.previous.size_in_bits) // 8, keys, probes, recent, old,
            rows,
        )  # fmt: skip
    if probables:

        mmh3, _ = C.import_peer("mmh3", "mmh3")

        def mmh3_hashes(key, depth=1):
            # pyprobables' default hash is FNV-1a in pure Python (about 10x
            # slower here); MurmurHash3 through mmh3, double hashing, is the
            # fast hash_function its documentation suggests.
            a, b = mmh3.hash64(key, signed=False)
            return [(a + i * b) & 0xFFFFFFFFFFFFFFFF for i in range(depth)]

        def make_probables():
            return probables.RotatingBloomFilter(
                est_elements=per_generation,
                false_positive_rate=p_g,
                max_queue_size=g,
                hash_function=mmh3_hashes if mmh3 else None,
            )

        def probables_stream(f, ks):
            add, check = f.add, f.check
            for k in ks:
                if not check(k):  # its add(key) also checks first; the answer is what a dedup needs
                    add(k, force=True)

        def probables_in(f, ks):
            check = f.check
            return sum(1 for k in ks if check(k))

        def probables_bytes(f):
            return sum(b.bloom_length for b in f._blooms)

        measure(
            "pyprobables RotatingBloomFilter, per key",
            make_probables, probables_stream, probables_in, probables_bytes, keys, probes, recent, old, rows,
        )  # fmt: skip

    print(f"Stream: {len(keys):,} str keys ({len(set(keys)):,} distinct); lookups: {len(probes):,} never-seen keys;")
    print(f"'last W found': of the {len(recent):,} distinct keys among the last W offered;")
    print(f"'forgotten': of the {len(old):,} keys offered only more than 2 W keys before the end, share still reported.")
    print()
    base = rows[0] if rows else None
    print("| approach | test-and-set ns/key | ratio | lookup ns/key | ratio | window FPR | last W found | old still reported | bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['name']} | {r['stream_ns']:.0f} | {r['stream_ns'] / base['stream_ns']:.2f} | {r['lookup_ns']:.0f} | "
            f"{r['lookup_ns'] / base['lookup_ns']:.2f} | {r['fpr']:.4%} | {r['recent']:.2%} | {r['old']:.4%} | "
            f"{r['bytes']:,} |"
        )
    print()
    print(
        f"Ratios are to the first row. The rotating filter keeps a key between W and W + W/{g - 1} keys; the "
        "hand-swapped pair between W and 2 W (it forgets at a swap, so its 'old' keys include ones still inside "
        "its longer reach); pyprobables rotates when its newest filter holds its share of new keys, so repeats do "
        "not move its window."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
