#!/usr/bin/env python3
"""bloomkit CountingBloomFilter and ScalableBloomFilter vs peers, in one run.

Counting: for each capacity N (``--sizes``, default 1e6) and key kind, insert N keys
into a counting Bloom filter of capacity N at error_rate 0.01, look up present and
absent keys (absent ones give the measured FPR), then delete every key from a copy.
Peers: pyprobables CountingBloomFilter, fastbloom-rs counting filter.

Scalable: start a growing filter at ``--initial-capacity`` C (default 10,000), insert
10*C keys, measure the FPR, insert up to 100*C keys, measure lookups and the FPR
again. Peers: pybloom-live ScalableBloomFilter, pyprobables ExpandingBloomFilter.

    python benchmarks/bench_counting_scalable.py
    python benchmarks/bench_counting_scalable.py --only scalable --initial-capacity 1e5

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

LISTS = {"u64": "list", "str": "list"}
ARRAYS = {"u64": "np", "str": "np"}

# --------------------------------------------------------------------------------------
# counting Bloom filters
# --------------------------------------------------------------------------------------


def counting_specs(CountingBloomFilter) -> list[C.Spec]:
    specs: list[C.Spec] = []
    if CountingBloomFilter is not None:
        common = dict(library="bloomkit", make=lambda n, p: CountingBloomFilter(n, error_rate=p),
                      bits=lambda f: f.nbytes * 8, clone=lambda f: f.copy(), is_bloomkit=True)
        specs.append(C.Spec(api="add(k) / k in f / remove(k)", style="per-key",
                            insert=lambda f, ks: C.loop_call(f.add, ks), contains=C.loop_in,
                            remove=lambda f, ks: C.loop_call(f.remove, ks), forms=LISTS, **common))
        specs.append(C.Spec(api="update / contains_many / remove_many (list)", style="batch (list)",
                            insert=lambda f, ks: f.update(ks),
                            contains=lambda f, ks: f.contains_many(ks),
                            remove=lambda f, ks: f.remove_many(ks),
                            forms=LISTS, **common))
        specs.append(C.Spec(api="update / contains_many / remove_many (ndarray)",
                            style="batch (NumPy)",
                            insert=lambda f, ks: f.update(ks),
                            contains=lambda f, ks: f.contains_many(ks),
                            remove=lambda f, ks: f.remove_many(ks),
                            forms=ARRAYS, **common))

    fb, _ = C.import_peer("fastbloom-rs", "fastbloom_rs")
    if fb:
        def make_fb(n, p):
            b = fb.PyFilterBuilder(n, p)
            b.enable_repeat_insert(True)  # the CountingBloomFilter wrapper's default
            return b.build_counting_bloom_filter()

        def clone_fb(f):  # Rust object: no deepcopy; round-trip through its bytes
            return fb.PyCountingBloomFilter.from_bytes(f.get_bytes(), f.hashes(), True)

        def is_int(ks):
            return isinstance(ks[0], int)

        note = {"u64": "4-bit counters; add_int takes a C long: uint64 keys are passed as the "
                       "same 64 bits, signed",
                "str": "4-bit counters"}
        common = dict(library="fastbloom-rs", make=make_fb, forms={"u64": "i64", "str": "list"},
                      bits=lambda f: len(f.get_bytes()) * 8, clone=clone_fb, note=note)
        specs.append(C.Spec(
            api="add_int/_str(k), contains_int/_str(k), remove_int/_str(k)", style="per-key",
            insert=lambda f, ks: C.loop_call(f.add_int if is_int(ks) else f.add_str, ks),
            contains=lambda f, ks: C.loop_pred(f.contains_int if is_int(ks) else f.contains_str, ks),
            remove=lambda f, ks: C.loop_call(f.remove_int if is_int(ks) else f.remove_str, ks),
            **common))
        specs.append(C.Spec(
            api="add_*_batch / contains_*_batch (list)", style="batch (list)",
            insert=lambda f, ks: (f.add_int_batch if is_int(ks) else f.add_str_batch)(ks),
            contains=lambda f, ks: (f.contains_int_batch if is_int(ks) else f.contains_str_batch)(ks),
            **common))

    probables, _ = C.import_peer("pyprobables", "probables")
    if probables:
        specs.append(C.Spec(
            "pyprobables", "CountingBloomFilter.add(k) / k in f / remove(k)", "per-key",
            lambda n, p: probables.CountingBloomFilter(est_elements=n, false_positive_rate=p),
            lambda f, ks: C.loop_call(f.add, ks), C.loop_in, {"u64": "bytes", "str": "list"},
            slow=True, remove=lambda f, ks: C.loop_call(f.remove, ks),
            bits=lambda f: f.bloom_length * 32,
            note={"u64": "32-bit counters; keys must be str or bytes: uint64 keys are passed as "
                         "8-byte little-endian bytes",
                  "str": "32-bit counters"}))
    return specs


# --------------------------------------------------------------------------------------
# scalable Bloom filters
# --------------------------------------------------------------------------------------


def scalable_specs(ScalableBloomFilter) -> list[C.Spec]:
    specs: list[C.Spec] = []
    if ScalableBloomFilter is not None:
        common = dict(library="bloomkit", is_bloomkit=True, bits=lambda f: f.nbytes * 8,
                      make=lambda c, p: ScalableBloomFilter(c, error_rate=p),
                      note="growth=2, tightening=0.85 (defaults)")
        specs.append(C.Spec(api="ScalableBloomFilter.add(k) / k in f", style="per-key",
                            insert=lambda f, ks: C.loop_call(f.add, ks), contains=C.loop_in,
                            forms=LISTS, **common))
        specs.append(C.Spec(api="ScalableBloomFilter.update / contains_many (ndarray)",
                            style="batch (NumPy)", insert=lambda f, ks: f.update(ks),
                            contains=lambda f, ks: f.contains_many(ks), forms=ARRAYS, **common))

    pbl, _ = C.import_peer("pybloom-live", "pybloom_live")
    if pbl:
        SBF = pbl.ScalableBloomFilter
        specs.append(C.Spec(
            "pybloom-live", "ScalableBloomFilter.add(k) / k in f", "per-key",
            lambda c, p: SBF(initial_capacity=c, error_rate=p, mode=SBF.SMALL_SET_GROWTH),
            lambda f, ks: C.loop_call(f.add, ks), C.loop_in, LISTS, slow=True,
            bits=lambda f: sum(x.num_bits for x in f.filters),
            note="mode=SMALL_SET_GROWTH (x2 growth, like bloomkit; the default is x4), "
                 "its tightening ratio 0.9"))

    probables, _ = C.import_peer("pyprobables", "probables")
    if probables:
        def bits_pp(f):
            blooms = getattr(f, "_blooms", None)  # private: used only for the memory column
            return sum(b.number_bits for b in blooms) if blooms is not None else None

        specs.append(C.Spec(
            "pyprobables", "ExpandingBloomFilter.add(k) / k in f", "per-key",
            lambda c, p: probables.ExpandingBloomFilter(est_elements=c, false_positive_rate=p),
            lambda f, ks: C.loop_call(f.add, ks), C.loop_in, {"u64": "bytes", "str": "list"},
            slow=True, bits=bits_pp,
            note={"u64": "adds equal-size filters without tightening the rate; keys must be str "
                         "or bytes: uint64 keys are passed as 8-byte little-endian bytes",
                  "str": "adds equal-size filters without tightening the rate"}))
    return specs


def run_growth(spec: C.Spec, ks: C.KeySet, c0: int, probes: int, section: str, opts,
               p: float) -> list[C.Row]:
    """Fill a growing filter from C to 10*C to 100*C keys; FPR at 10x and 100x."""
    form = spec.forms[ks.kind]
    capped = spec.slow and c0 * 100 > int(opts.slow_cap)
    if spec.slow:
        c0 = max(10, min(c0, int(opts.slow_cap) // 100))
        probes = min(probes, int(opts.slow_cap))
    n10, n100 = 10 * c0, 100 * c0
    note = spec.note.get(ks.kind, "") if isinstance(spec.note, dict) else spec.note
    common = dict(section=section, library=spec.library, api=spec.api, style=spec.style,
                  note=note, is_bloomkit=spec.is_bloomkit, capped=capped)
    C._progress(f"{section}: {spec.library} [{spec.style}] {spec.api}, C={c0:,} -> {n100:,} keys")

    phases = ["insert C → 10×C", "lookup (absent) @ 10×C", "insert 10×C → 100×C",
              "lookup (present) @ 100×C", "lookup (absent) @ 100×C"]
    best = {ph: math.inf for ph in phases}
    runs = 0
    try:
        w = min(n10, C.WARMUP_KEYS)
        wf = spec.make(max(1, w // 10), p)
        spec.insert(wf, ks.get(form, "ins", w))
        spec.contains(wf, ks.get(form, "ins", w))
        del wf
        for _ in range(max(1, opts.repeats)):
            f = spec.make(c0, p)
            t = {}
            t[phases[0]], _ = C.timed(spec.insert, f, ks.get(form, "ins", n10))
            bits10 = spec.bits(f) if spec.bits else None
            t[phases[1]], r10 = C.timed(spec.contains, f, ks.get(form, "miss", probes))
            t[phases[2]], _ = C.timed(spec.insert, f, ks.get(form, "ins", n100, start=n10))
            bits100 = spec.bits(f) if spec.bits else None
            t[phases[3]], rhit = C.timed(spec.contains, f, ks.get(form, "ins", n100))
            t[phases[4]], r100 = C.timed(spec.contains, f, ks.get(form, "miss", probes))
            runs += 1
            for ph in phases:
                best[ph] = min(best[ph], t[ph])
            del f
            if sum(t.values()) > opts.long_phase:
                break
    except Exception as exc:
        return [C.Row(op="insert", keys=n100, seconds=0.0, runs=0,
                      error=f"{type(exc).__name__}: {exc}", **common)]

    fpr10 = C.positives(r10) / probes
    fpr100 = C.positives(r100) / probes
    found = C.positives(rhit)
    bpk10 = bits10 / n10 if bits10 is not None else None
    bpk100 = bits100 / n100 if bits100 is not None else None
    fn = "" if found == n100 else f"FALSE NEGATIVES: {n100 - found:,} inserted keys reported absent"
    return [
        C.Row(op=phases[0], keys=n10, seconds=best[phases[0]], runs=runs, bits_per_key=bpk10,
              **common),
        C.Row(op=phases[1], keys=probes, seconds=best[phases[1]], runs=runs, fpr=fpr10,
              target_fpr=p, **common),
        C.Row(op=phases[2], keys=n100 - n10, seconds=best[phases[2]], runs=runs,
              bits_per_key=bpk100, **common),
        C.Row(op=phases[3], keys=n100, seconds=best[phases[3]], runs=runs, warning=fn, **common),
        C.Row(op=phases[4], keys=probes, seconds=best[phases[4]], runs=runs, fpr=fpr100,
              target_fpr=p, **common),
    ]


# --------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    C.Options.add_to(ap)
    ap.add_argument("--initial-capacity", type=C.parse_count, default=10_000,
                    help="initial capacity C of the scalable filters (default 10,000: grows to 1e6 keys)")
    ap.add_argument("--only", choices=["counting", "scalable"],
                    help="run only one of the two benchmarks")
    args = ap.parse_args(argv)
    kinds = C.parse_kinds(args.kinds)
    rates = C.parse_rates(args.error_rates)
    probes = int(args.probes)

    info = C.header("bloomkit benchmark: CountingBloomFilter and ScalableBloomFilter vs peers", args)
    _, _, classes = C.import_bloomkit("CountingBloomFilter", "ScalableBloomFilter")
    cspecs = counting_specs(classes["CountingBloomFilter"]) if args.only != "scalable" else []
    sspecs = scalable_specs(classes["ScalableBloomFilter"]) if args.only != "counting" else []
    cspecs = [s for s in cspecs if C.lib_selected(s.library, args.libs)]
    sspecs = C.select_specs(sspecs, args.libs)
    C.print_machine(info, C.LIB_STATUS)
    C.explain_columns(
        "\"delete\" removes every inserted key from a copy of the filled filter. "
        "For the scalable filters, bits/key is the memory after the insert phase ÷ keys so far, "
        "and the whole C → 100×C fill is one run (repeated while it is short).")

    all_rows: list[C.Row] = []
    if cspecs:
        all_rows += C.run_grid(
            cspecs, args, "CountingBloomFilter",
            f"{probes:,} absent probes per filter (pure-Python peers, marked \\*: "
            f"{min(probes, int(args.slow_cap)):,}).",
            section_prefix="counting ", with_remove=True, cap_slow_probes=True)
    if sspecs:
        c0 = args.initial_capacity
        for kind in kinds:
            ks = C.KeySet(kind, 100 * c0, probes, seed=args.seed)
            for p in rates:
                section = f"scalable {kind} C={c0:,} p={p:g}"
                rows = []
                for spec in sspecs:
                    if spec.supports(kind):
                        rows += run_growth(spec, ks, c0, probes, section, args, p)
                slow_c = max(10, min(c0, int(args.slow_cap) // 100))
                C.print_table(
                    rows, f"ScalableBloomFilter, {ks.label}, initial capacity C = {c0:,}, "
                          f"error_rate = {p:g}, grown to 10×C and 100×C keys",
                    f"{probes:,} absent probes per checkpoint (pure-Python peers, marked \\*: "
                    f"C = {slow_c:,} and {min(probes, int(args.slow_cap)):,} probes).")
                all_rows += rows
            del ks
    if args.json:
        C.write_json(args.json, "bench_counting_scalable.py", info, args, all_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
