#!/usr/bin/env python3
"""bloomkit.BloomFilter vs peer Bloom filter libraries, in one run.

For each capacity N (``--sizes``, default 1e6) and key kind (NumPy uint64 keys,
URL-like Python str keys): build a filter of capacity N at error_rate 0.01 (``--error-rates``), time
insert, lookup of present keys and lookup of absent keys (>= 200,000 probes, which
also give the measured false-positive rate), and print a Markdown table.

    python benchmarks/bench_bloom.py                      # N = 1e6, both key kinds
    python benchmarks/bench_bloom.py --sizes 1e6,1e7 --json bloom.json

See benchmarks/README.md for what is measured and the caveats.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402


def bloomkit_specs(BloomFilter) -> list[C.Spec]:
    if BloomFilter is None:
        return []
    make = lambda n, p: BloomFilter(n, error_rate=p)  # noqa: E731
    bits = lambda f: f.nbytes * 8  # noqa: E731
    common = dict(library="bloomkit", make=make, bits=bits, is_bloomkit=True)
    return [
        C.Spec(api="f.add(k) / k in f", style="per-key",
               insert=lambda f, ks: C.loop_call(f.add, ks),
               contains=C.loop_in, forms={"u64": "list", "str": "list"}, **common),
        C.Spec(api="f.update(list) / f.contains_many(list)", style="batch (list)",
               insert=lambda f, ks: f.update(ks),
               contains=lambda f, ks: f.contains_many(ks),
               forms={"u64": "list", "str": "list"}, **common),
        C.Spec(api="f.update(ndarray) / f.contains_many(ndarray)", style="batch (NumPy)",
               insert=lambda f, ks: f.update(ks),
               contains=lambda f, ks: f.contains_many(ks),
               forms={"u64": "np", "str": "np"}, **common),
    ]


def peer_specs() -> list[C.Spec]:
    specs: list[C.Spec] = []

    rbloom, _ = C.import_peer("rbloom", "rbloom")
    if rbloom:
        make = lambda n, p: rbloom.Bloom(n, p)  # noqa: E731  (hash_func=None: Python's hash())
        bits = lambda f: f.size_in_bits  # noqa: E731
        specs += C.list_peer_specs("rbloom", "Bloom", make, bits)

    abloom, _ = C.import_peer("abloom", "abloom")
    if abloom:
        make = lambda n, p: abloom.BloomFilter(n, p)  # noqa: E731
        bits = lambda f: f.bit_count  # noqa: E731
        specs += C.list_peer_specs("abloom", "BloomFilter", make, bits)

    pbf, _ = C.import_peer("pybloomfiltermmap3", "pybloomfilter")
    if pbf:
        make = lambda n, p: pbf.BloomFilter(n, p, None)  # noqa: E731  (None: in-memory)
        bits = lambda f: f.num_bits  # noqa: E731
        specs += C.list_peer_specs("pybloomfiltermmap3", "BloomFilter", make, bits)

    fb, _ = C.import_peer("fastbloom-rs", "fastbloom_rs")
    if fb:
        # PyFilterBuilder/PyBloomFilter are the exported Rust classes (the BloomFilter
        # wrapper adds a Python-level isinstance dispatch per call). add_int takes a
        # C long, so uint64 keys are passed as the same 64 bits, signed.
        make = lambda n, p: fb.PyFilterBuilder(n, p).build_bloom_filter()  # noqa: E731
        bits = lambda f: f.config().size()  # noqa: E731
        specs += [
            C.Spec("fastbloom-rs", "add_int/add_str(k), contains_int/_str(k)", "per-key", make,
                   lambda f, ks: C.loop_call(f.add_int if isinstance(ks[0], int) else f.add_str, ks),
                   lambda f, ks: C.loop_pred(
                       f.contains_int if isinstance(ks[0], int) else f.contains_str, ks),
                   {"u64": "i64", "str": "list"}, bits=bits,
                   note={"u64": "add_int takes a C long: uint64 keys are passed as the same 64 bits, signed"}),
            C.Spec("fastbloom-rs", "add_*_batch(list) / contains_*_batch(list)", "batch (list)", make,
                   lambda f, ks: (f.add_int_batch if isinstance(ks[0], int) else f.add_str_batch)(ks),
                   lambda f, ks: (f.contains_int_batch if isinstance(ks[0], int)
                                  else f.contains_str_batch)(ks),
                   {"u64": "i64", "str": "list"}, bits=bits,
                   note={"u64": "add_int takes a C long: uint64 keys are passed as the same 64 bits, signed"}),
        ]

    probables, _ = C.import_peer("pyprobables", "probables")
    if probables:
        specs.append(C.Spec(
            "pyprobables", "BloomFilter.add(k) / k in f", "per-key",
            lambda n, p: probables.BloomFilter(est_elements=n, false_positive_rate=p),
            lambda f, ks: C.loop_call(f.add, ks), C.loop_in,
            {"u64": "bytes", "str": "list"}, slow=True, bits=lambda f: f.number_bits,
            note={"u64": "keys must be str or bytes: uint64 keys are passed as 8-byte little-endian bytes"}))

    pbl, _ = C.import_peer("pybloom-live", "pybloom_live")
    if pbl:
        specs.append(C.Spec(
            "pybloom-live", "BloomFilter.add(k) / k in f", "per-key",
            lambda n, p: pbl.BloomFilter(n, p),
            lambda f, ks: C.loop_call(f.add, ks), C.loop_in,
            {"u64": "list", "str": "list"}, slow=True, bits=lambda f: f.num_bits))

    # Python's set: the exact baseline (no false positives, ~tens of bytes per key).
    C.LIB_STATUS["set"] = "built-in"
    specs += [
        C.Spec("set", "s.add(k) / k in s", "per-key", lambda n, p: set(),
               lambda s, ks: C.loop_call(s.add, ks), C.loop_in,
               {"u64": "list", "str": "list"}, exact=True),
        C.Spec("set", "s.update(list)", "batch (list)", lambda n, p: set(),
               lambda s, ks: s.update(ks), None,
               {"u64": "list", "str": "list"}, exact=True,
               note="no batch lookup API"),
    ]
    return specs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    C.Options.add_to(ap)
    args = ap.parse_args(argv)

    info = C.header("bloomkit benchmark: BloomFilter vs peers", args)
    _, _, classes = C.import_bloomkit("BloomFilter")
    specs = bloomkit_specs(classes["BloomFilter"]) + peer_specs()
    specs = C.select_specs(specs, args.libs)
    C.print_machine(info, C.LIB_STATUS)
    C.explain_columns()

    all_rows = C.run_grid(specs, args, "BloomFilter", f"{int(args.probes):,} absent probes per filter.")
    if args.json:
        C.write_json(args.json, "bench_bloom.py", info, args, all_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
