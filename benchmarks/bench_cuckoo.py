#!/usr/bin/env python3
"""bloomkit.CuckooFilter vs bloomkit.BloomFilter and peer cuckoo filters, in one run.

For each capacity N (``--sizes``, default 1e6), key kind and requested false-positive
rate (``--error-rates``, default 0.01): insert N keys, look up present and absent
keys (the absent ones give the measured FPR), delete every key, and report
throughput and bits per key (filter bytes * 8 / keys inserted). bloomkit's
BloomFilter at the same requested rate is the space/speed reference (no delete).

    python benchmarks/bench_cuckoo.py
    python benchmarks/bench_cuckoo.py --error-rates 0.01,0.001 --json cuckoo.json

bloomkit classes that are not importable yet are skipped with a message; the
script then runs against the peers only.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

BUCKET_SIZE = 4
# Peers take a number of *buckets*, not keys: size them for N keys at this load
# factor (the load bloomkit's design targets, and one both peers reach with b=4).
PEER_LOAD = 0.95


def peer_buckets(n: int) -> int:
    return math.ceil(n / (BUCKET_SIZE * PEER_LOAD))


def bloomkit_specs(bk, CuckooFilter, BloomFilter) -> list[C.Spec]:
    specs: list[C.Spec] = []
    lists = {"u64": "list", "str": "list"}
    arrays = {"u64": "np", "str": "np"}
    if CuckooFilter is not None:
        def make(n, p):
            return CuckooFilter(n, error_rate=p, bucket_size=BUCKET_SIZE)

        common = dict(library="bloomkit", make=make, bits=lambda f: f.nbytes * 8,
                      clone=lambda f: f.copy(), is_bloomkit=True)
        specs.append(C.Spec(
            api="CuckooFilter.add(k) / k in f / remove(k)", style="per-key",
            insert=lambda f, ks: C.loop_call(f.add, ks), contains=C.loop_in,
            remove=lambda f, ks: C.loop_call(f.remove, ks), forms=lists, **common))
        specs.append(C.Spec(
            api="CuckooFilter.update / contains_many / remove_many (ndarray)",
            style="batch (NumPy)",
            insert=lambda f, ks: f.update(ks), contains=lambda f, ks: f.contains_many(ks),
            remove=lambda f, ks: f.remove_many(ks), forms=arrays, **common))
    if BloomFilter is not None:
        # The reference: a Bloom filter at the same requested FPR (it cannot delete).
        # Not a ratio base: ratios are vs bloomkit's CuckooFilter.
        common = dict(library="bloomkit BloomFilter", make=lambda n, p: BloomFilter(n, error_rate=p),
                      bits=lambda f: f.nbytes * 8, note="reference: Bloom filter, same requested FPR")
        specs.append(C.Spec(api="BloomFilter.add(k) / k in f", style="per-key",
                            insert=lambda f, ks: C.loop_call(f.add, ks), contains=C.loop_in,
                            forms=lists, **common))
        specs.append(C.Spec(api="BloomFilter.update / contains_many (ndarray)", style="batch (NumPy)",
                            insert=lambda f, ks: f.update(ks),
                            contains=lambda f, ks: f.contains_many(ks), forms=arrays, **common))
    return specs


def peer_specs() -> list[C.Spec]:
    specs: list[C.Spec] = []

    probables, _ = C.import_peer("pyprobables", "probables")
    if probables:
        def make_pp(n, p):
            # init_error_rate picks the fingerprint width for the rate; capacity = buckets.
            return probables.CuckooFilter.init_error_rate(
                p, capacity=peer_buckets(n), bucket_size=BUCKET_SIZE)

        specs.append(C.Spec(
            "pyprobables", "CuckooFilter.init_error_rate(...): add(k) / k in f / remove(k)", "per-key",
            make_pp, lambda f, ks: C.loop_call(f.add, ks), C.loop_in,
            {"u64": "bytes", "str": "list"}, slow=True,
            remove=lambda f, ks: C.loop_call(f.remove, ks),
            bits=lambda f: f.capacity * f.bucket_size * f.fingerprint_size_bits,
            note={
                "u64": "keys must be str or bytes: uint64 keys are passed as 8-byte little-endian "
                       "bytes. bits/key is nominal (buckets are Python lists). pyprobables 0.7.0 "
                       "derives both bucket indices from the fingerprint alone "
                       "(`idx_1 = fingerprint % capacity`), so with the ~10-bit fingerprint chosen "
                       "for 1% it holds at most 2^bits distinct keys and then reports everything present",
                "str": "bits/key is nominal (buckets are Python lists). pyprobables 0.7.0 derives "
                       "both bucket indices from the fingerprint alone "
                       "(`idx_1 = fingerprint % capacity`), so with the ~10-bit fingerprint chosen "
                       "for 1% it holds at most 2^bits distinct keys and then reports everything present",
            }))

    scf, _ = C.import_peer("scalable-cuckoo-filter", "cuckoo.filter")
    if scf:
        specs.append(C.Spec(
            "scalable-cuckoo-filter", "BCuckooFilter.insert(k) / k in f / delete(k)", "per-key",
            lambda n, p: scf.BCuckooFilter(capacity=peer_buckets(n), error_rate=p,
                                           bucket_size=BUCKET_SIZE),
            lambda f, ks: C.loop_call(f.insert, ks), C.loop_in,
            {"u64": "bytes", "str": "list"}, slow=True,
            remove=lambda f, ks: C.loop_call(f.delete, ks),
            bits=lambda f: len(f.buckets),
            note={"u64": "bitarray-backed fixed-size filter (the package's ScalableCuckooFilter chains "
                         "these); keys must be str or bytes: uint64 keys are passed as 8-byte "
                         "little-endian bytes",
                  "str": "bitarray-backed fixed-size filter (the package's ScalableCuckooFilter chains "
                         "these)"}))
    return specs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    C.Options.add_to(ap)
    args = ap.parse_args(argv)

    info = C.header("bloomkit benchmark: CuckooFilter vs BloomFilter and peers", args)
    bk, _, classes = C.import_bloomkit("CuckooFilter", "BloomFilter")
    specs = bloomkit_specs(bk, classes["CuckooFilter"], classes["BloomFilter"]) + peer_specs()
    specs = C.select_specs(specs, args.libs)
    C.print_machine(info, C.LIB_STATUS)
    C.explain_columns(
        f"Peers are sized in buckets for N keys at load {PEER_LOAD} with {BUCKET_SIZE} slots per "
        "bucket. \"delete\" removes every inserted key from a copy of the filled filter. "
        "\"vs bloomkit\" is relative to bloomkit's CuckooFilter.")

    all_rows = C.run_grid(specs, args, "CuckooFilter", f"{int(args.probes):,} absent probes per filter.",
                          with_remove=True)
    if args.json:
        C.write_json(args.json, "bench_cuckoo.py", info, args, all_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
