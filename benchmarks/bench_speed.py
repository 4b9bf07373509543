#!/usr/bin/env python3
"""Speed benchmark: every bloomkit layout against the peers, in one process.

Every scenario runs in one process; within each scenario the contenders are
interleaved (the order rotates every round) and the best of ``--repeats``
(default 5) rounds is kept, so a burst of load on this shared machine hits
every contender alike. Measured, at error_rate 0.01:

* per-key ``add`` / ``in`` with Python int and str keys (1e6);
* NumPy uint64 batch add / lookup at 1e6, 1e7, 1e8 keys against each peer's
  best path, plus the gather reference: a NumPy random gather
  (``array[indices]``, one random 8-byte read per key) over an array of the
  filter's byte size, the floor for one memory access per key;
* Python list-of-str batches at 1e6 and 1e7, with Python's ``set``;
* two threads doing batch lookups on one filter against one thread, and one
  `contains_many` over 1e7+ keys against the same keys in 1e6-key chunks;
* measured false-positive rate and bits per key of every filter;
* ``--only rates``: at each of ``--error-rates`` (default 1e-2, 1e-3, 1e-4,
  1e-6) and 1e7 keys, every layout's bits/key, measured FPR and batch
  add / lookup ns/key, the gather floor and the default layout, against the
  default-layout targets (memory at most 1.10x classic; speed at least 0.9x
  the fastest layout within that bound);
* ``--only fuse``: ``BinaryFuseFilter`` (8 and 16 bits) build and batch lookup
  at ``--fuse-size`` (1e7) keys on one thread against split_block Bloom
  filters at the same rates and at 1 %, bits/key and measured FPR on
  ``--fuse-probes`` (1e7) absent keys, against the issue's targets.

    python benchmarks/run.py speed                            # recorded in benchmarks/results/
    python benchmarks/bench_speed.py --batch-sizes 1e6,1e7 --str-sizes 1e6 --repeats 3   # quicker
    python benchmarks/bench_speed.py --no-peers --only rates   # the default layout at each error rate
    python benchmarks/bench_speed.py --no-peers --only fuse    # BinaryFuseFilter vs split_block at 1e7 keys

Ratios: "x peer" is the peer's ns/key divided by bloomkit's (above 1: bloomkit
is faster); "/ gather" is bloomkit's ns/key divided by the gather
reference's (the target is at most 2). Peers that have no batch API run
their fastest Python-level path (``update(list)`` or a list comprehension
over ``in``) on a list of the same keys; at 1e8 keys their lists would need
~4 GB, so they insert and look up the first 1e7 keys into a filter sized for
1e8 (the same memory footprint, per-key cost measured on 1e7).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

P = 0.01
PEER_LIST_CAP = 10_000_000
SIMD_LEVELS = ["auto"]  # --simd
BATCH_THREADS: list = [1, 2]  # --batch-threads


# ------------------------------------------------------------------ peers


def load_peers() -> dict:
    """name -> dict(make, add, contains, add_batch, contains_batch, bits) for installed peers."""
    peers = {}
    # Peers with add(k) / k in f / update(list) and no batch lookup.
    for name, module, make, bits in (
        ("rbloom", "rbloom", lambda m, n: m.Bloom(n, P), lambda f: f.size_in_bits),
        ("abloom", "abloom", lambda m, n: m.BloomFilter(n, P), lambda f: f.bit_count),
        ("pybloomfiltermmap3", "pybloomfilter", lambda m, n: m.BloomFilter(n, P, None), lambda f: f.num_bits),
    ):
        lib, _ = C.import_peer(name, module)
        if lib:
            peers[name] = dict(
                make=lambda n, lib=lib, make=make: make(lib, n),
                bits=bits,
                add_batch=lambda f, ks: f.update(ks),
                contains_batch=None,
            )
    fb, _ = C.import_peer("fastbloom-rs", "fastbloom_rs")
    if fb:

        def fb_add(f, ks):
            (f.add_int_batch if isinstance(ks[0], int) else f.add_str_batch)(ks)

        def fb_contains(f, ks):
            return (f.contains_int_batch if isinstance(ks[0], int) else f.contains_str_batch)(ks)

        peers["fastbloom-rs"] = dict(
            make=lambda n: fb.PyFilterBuilder(n, P).build_bloom_filter(),
            bits=lambda f: f.config().size(),
            add_batch=fb_add,
            contains_batch=fb_contains,
            add_one=lambda f: f.add_int,
            in_one=lambda f: f.contains_int,
            add_one_str=lambda f: f.add_str,
            in_one_str=lambda f: f.contains_str,
        )
    return peers


# ----------------------------------------------------------------- timing


def renew_str_objects(keys: list) -> None:
    """Replace every str of ``keys`` (in place) by an equal, new object.

    CPython caches a str's ``hash()`` in the object, so a peer that hashes
    with ``hash(key)`` would hash nothing from the second round on; a
    crawler meets every URL as a new object (benchmarks/str_hash_cache.py).
    """
    keys[:] = [key.encode().decode() for key in keys]


def interleaved_best(contenders: dict, repeats: int, refresh=None, clock=time.perf_counter) -> dict:
    """name -> best seconds of run(setup()), rounds interleaved with a rotating order.

    ``refresh()``, if given, runs before every timed run (untimed), e.g.
    :func:`renew_str_objects` on the key list the runs read. ``clock``:
    ``time.process_time`` for CPU seconds (a one-thread run on a busy machine).
    """
    names = list(contenders)
    best = {name: float("inf") for name in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            setup, run = contenders[name]
            if refresh is not None:
                refresh()
            state = setup()
            gc.collect()
            gc.disable()
            try:
                t0 = clock()
                run(state)
                elapsed = clock() - t0
            finally:
                gc.enable()
            best[name] = min(best[name], elapsed)
            del state
        C._progress(f"    round {r + 1}/{repeats} done")
    return best


def bloomkit_variants(bk, layouts, batch_threads=(None,)):
    """[(contender name, layout, setup wrapper)] for every layout, SIMD level and batch thread count.

    With ``--simd portable,avx2`` each layout runs once per kernel level, as
    separate interleaved contenders ("bloomkit split_block [avx2]"); the
    wrapper switches the level (``bloomkit._core._set_simd_level``) in the
    untimed setup. Both levels build identical filters, so a lookup contender
    may share its filter with the other level's. Batch scenarios pass
    ``batch_threads`` (``--batch-threads 1,2``): one contender per count
    ("bloomkit split_block [2 threads]"), switched the same way with
    ``bloomkit._core._set_batch_threads``.
    """
    out = []
    for layout in layouts:
        for level in SIMD_LEVELS:
            for threads in batch_threads:
                tags = [level] if len(SIMD_LEVELS) > 1 else []
                if threads is not None and len(batch_threads) > 1:
                    tags.append(f"{threads} thread" + ("s" if threads > 1 else ""))
                name = f"bloomkit {layout}" + (f" [{', '.join(tags)}]" if tags else "")

                def wrap(setup, level=level, threads=threads):
                    def with_settings():
                        if level != "auto":
                            bk._core._set_simd_level(level)
                        if threads is not None:
                            bk._core._set_batch_threads(threads)
                        return setup()

                    return with_settings

                out.append((name, layout, wrap))
    return out


def loop_add(add, keys):
    for k in keys:
        add(k)


def loop_in(f, keys):
    return sum(1 for k in keys if k in f)


def loop_pred(predicate, keys):
    return sum(1 for k in keys if predicate(k))


# ----------------------------------------------------------------- report


class Report:
    def __init__(self):
        self.summary = []  # (target, measured, met)

    def table(
        self,
        title: str,
        ns: dict,
        counts: dict,
        bloomkit_names: list,
        peer_names: list,
        gather: str | None = None,
        note: str = "",
    ):
        print(f"### {title}")
        print()
        if note:
            print(note)
            print()
        cols = ["contender", "ns/key", "Mkeys/s"] + [f"x {p}" for p in peer_names]
        if gather:
            cols.append("/ gather")
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for name in list(ns):
            per_key = ns[name] * 1e9 / counts[name]
            row = [name, f"{per_key:.1f}", f"{1e3 / per_key:.1f}"]
            for p in peer_names:
                if name in bloomkit_names and p in ns:
                    row.append(f"{(ns[p] / counts[p]) / (ns[name] / counts[name]):.2f}")
                else:
                    row.append("")
            if gather:
                row.append(
                    f"{(ns[name] / counts[name]) / (ns[gather] / counts[gather]):.2f}" if name in bloomkit_names else ""
                )
            print("| " + " | ".join(row) + " |")
        print()

    @staticmethod
    def per_key(ns, counts, name):
        return ns[name] * 1e9 / counts[name]


# ---------------------------------------------------------------- scenarios


def per_key_scenarios(bk, peers, layouts, n, repeats, report, seed):
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 2**63, size=n, dtype=np.uint64).tolist()
    strs = C.url_keys(0, n).tolist()
    for kind, keys in (("int", ints), ("str", strs)):
        for op in ("add", "in"):
            contenders = {}
            names_bk = []
            filled = {}
            for name, layout, wrap in bloomkit_variants(bk, layouts):
                names_bk.append(name)
                if op == "add":
                    contenders[name] = (
                        wrap(lambda layout=layout: bk.BloomFilter(n, P, layout=layout)),
                        lambda f: loop_add(f.add, keys),
                    )
                else:
                    if layout not in filled:
                        filled[layout] = bk.BloomFilter(n, P, layout=layout)
                        filled[layout].update(keys)
                    contenders[name] = (wrap(lambda f=filled[layout]: f), lambda f: loop_in(f, keys))
            for pname, peer in peers.items():
                if pname == "fastbloom-rs":
                    add_one = peer["add_one" if kind == "int" else "add_one_str"]
                    in_one = peer["in_one" if kind == "int" else "in_one_str"]
                    if op == "add":
                        contenders[pname] = (
                            lambda peer=peer: peer["make"](n),
                            lambda f, a=add_one: loop_add(a(f), keys),
                        )
                    else:
                        f = peer["make"](n)
                        peer["add_batch"](f, keys)
                        contenders[pname] = (lambda f=f: f, lambda f, c=in_one: loop_pred(c(f), keys))
                    continue
                if op == "add":
                    contenders[pname] = (lambda peer=peer: peer["make"](n), lambda f: loop_add(f.add, keys))
                else:
                    f = peer["make"](n)
                    peer["add_batch"](f, keys)
                    contenders[pname] = (lambda f=f: f, lambda f: loop_in(f, keys))
            if op == "add":
                contenders["set"] = (set, lambda s: loop_add(s.add, keys))
            else:
                s = set(keys)
                contenders["set"] = (lambda s=s: s, lambda s: loop_in(s, keys))
            C._progress(f"per-key {op} {kind} n={n:,}")
            refresh = (lambda: renew_str_objects(keys)) if kind == "str" else None
            best = interleaved_best(contenders, repeats, refresh)
            counts = {name: n for name in best}
            peer_names = [p for p in best if p not in names_bk]
            report.table(
                f"Per-key `{'f.add(k)' if op == 'add' else 'k in f'}`, {kind} keys, n = {n:,}",
                best,
                counts,
                names_bk,
                peer_names,
            )
            report.record(f"per-key {op} {kind}", best, counts, names_bk, [p for p in peer_names if p != "set"])


def bloomkit_batch_contenders(bk, layouts, n, keys, op):
    """({"bloomkit <layout>": (setup, run)}, {layout: filled filter}) for one batch operation.

    "add" times ``update(keys)`` into a fresh filter; "lookup" times
    ``contains_many(keys)`` on a filter already holding them.
    """
    contenders, filters = {}, {}
    for name, layout, wrap in bloomkit_variants(bk, layouts, BATCH_THREADS):
        if op == "add":
            contenders[name] = (
                wrap(lambda layout=layout: bk.BloomFilter(n, P, layout=layout)),
                lambda f: f.update(keys),
            )
        else:
            if layout not in filters:
                filters[layout] = bk.BloomFilter(n, P, layout=layout)
                filters[layout].update(keys)
            contenders[name] = (wrap(lambda f=filters[layout]: f), lambda f: f.contains_many(keys))
    return contenders, filters


def peer_batch_contenders(peers, n, keys, op):
    """{peer: (setup, run)}: each peer's fastest Python-level path for the batch operation."""
    contenders = {}
    for pname, peer in peers.items():
        if op == "add":
            contenders[pname] = (lambda peer=peer: peer["make"](n), lambda f, peer=peer: peer["add_batch"](f, keys))
            continue
        f = peer["make"](n)
        peer["add_batch"](f, keys)
        if peer["contains_batch"]:
            contenders[pname] = (lambda f=f: f, lambda f, peer=peer: peer["contains_batch"](f, keys))
        else:
            contenders[pname] = (lambda f=f: f, lambda f: [k in f for k in keys])
    return contenders


def gather_contender(nbytes: int, n: int, rng):
    array = np.ones(max(1, nbytes // 8), dtype=np.uint64)
    indices = rng.integers(0, len(array), size=n, dtype=np.int64)
    return (lambda: (array, indices), lambda s: s[0][s[1]])


def numpy_batch_scenarios(bk, peers, layouts, n, repeats, report, seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    peer_n = min(n, PEER_LIST_CAP)
    peer_keys = keys[:peer_n].tolist() if peers else []
    for op in ("add", "lookup"):
        contenders, filters = bloomkit_batch_contenders(bk, layouts, n, keys, op)
        names_bk = list(contenders)
        counts = dict.fromkeys(names_bk, n)
        # One gather reference per distinct filter size (layouts differ by a few %).
        nbytes = bk.BloomFilter(n, P, layout=layouts[0]).nbytes if layouts else n
        contenders["gather"] = gather_contender(nbytes, n, rng)
        counts["gather"] = n
        peer_contenders = peer_batch_contenders(peers, n, peer_keys, op)
        contenders.update(peer_contenders)
        counts.update(dict.fromkeys(peer_contenders, peer_n))
        C._progress(f"NumPy uint64 batch {op} n={n:,}")
        best = interleaved_best(contenders, repeats)
        peer_names = [p for p in best if p not in names_bk and p != "gather"]
        note = (
            f"bloomkit: `f.update(ndarray)` / `f.contains_many(ndarray)`; peers: `update(list)` / "
            f"`contains_*_batch(list)` or `[k in f for k in list]` over {peer_n:,} keys; gather: "
            f"`array[random indices]` over {nbytes / 1e6:.1f} MB."
        )
        report.table(
            f"NumPy uint64 batch {op}, n = {n:,}", best, counts, names_bk, peer_names, gather="gather", note=note
        )
        report.record(f"NumPy batch {op} {n:.0e}", best, counts, names_bk, peer_names, gather="gather")
        if op == "lookup" and n >= 10**7:
            threads_scenario(bk, filters, keys, repeats, report, n)
            chunks_scenario(filters, keys, repeats, n)
        del filters


def compare_two_ways(filters, repeats, title, labels, first, second, second_setup=None) -> dict:
    """One table row per layout: best seconds of first(f) and second(f) (interleaved) and
    their ratio; returns {layout: first / second}. With ``second_setup``, second runs on
    second_setup(f) (made untimed before each run) instead of f."""
    print(f"### {title}")
    print()
    print(f"| layout | {labels[0]} (s) | {labels[1]} (s) | {labels[2]} |")
    print("|---|---:|---:|---:|")
    ratios = {}
    for layout, f in filters.items():
        setup = (lambda f=f: second_setup(f)) if second_setup else (lambda f=f: f)
        best = interleaved_best({"first": (lambda f=f: f, first), "second": (setup, second)}, repeats)
        ratios[layout] = best["first"] / best["second"]
        print(f"| {layout} | {best['first']:.3f} | {best['second']:.3f} | {ratios[layout]:.2f} |")
    print()
    return ratios


def chunks_scenario(filters, keys, repeats, n, chunk=10**6):
    """One contains_many over all keys against the same keys in chunks: equal per-key cost
    means the call's working memory does not grow with the batch."""

    def chunked(f):
        for first in range(0, len(keys), chunk):
            f.contains_many(keys[first : first + chunk])

    compare_two_ways(
        filters,
        repeats,
        f"One `contains_many` call against {chunk:,}-key chunks, n = {n:,}",
        ("one call", "chunks", "one call / chunks"),
        lambda f: f.contains_many(keys),
        chunked,
    )


def threads_scenario(bk, filters, keys, repeats, report, n):
    half = len(keys) // 2
    parts = [keys[:half], keys[half:]]

    def one(f):
        for part in parts:
            f.contains_many(part)

    # Both threads are started before the clock (untimed) and wait on a
    # barrier, as a server's or a pool's worker threads would already be
    # running: a thread started while the other CPU is busy first ran 1-5 ms
    # later on the 2-vCPU host (queued, it seems, behind the busy thread
    # until the scheduler rebalanced), a tenth of a 1e7-key lookup.
    def start_two(f):
        barrier = threading.Barrier(3)

        def worker(part):
            barrier.wait()
            f.contains_many(part)

        threads = [threading.Thread(target=worker, args=(part,)) for part in parts]
        for t in threads:
            t.start()
        return barrier, threads

    def two(started):
        barrier, threads = started
        barrier.wait()
        for t in threads:
            t.join()

    # Python threads alone: each call on one thread (a call on two threads
    # would already use both cores; that is the "[2 threads]" contender).
    saved = bk._core._batch_threads()
    bk._core._set_batch_threads(1)
    try:
        speedups = compare_two_ways(
            filters,
            repeats,
            f"Two Python threads, `contains_many(ndarray)` on one filter, each call on one thread, n = {n:,}",
            ("1 thread, both halves", "2 threads, one half each", "speedup"),
            one,
            two,
            second_setup=start_two,
        )
    finally:
        bk._core._set_batch_threads(saved)
    for layout, speedup in speedups.items():
        report.summary.append((f"two threads {layout} n={n:.0e}", f"{speedup:.2f}x", speedup >= 1.7))


def str_batch_scenarios(bk, peers, layouts, n, repeats, report):
    keys = C.url_keys(0, n).tolist()
    for op in ("add", "lookup"):
        contenders, _ = bloomkit_batch_contenders(bk, layouts, n, keys, op)
        names_bk = list(contenders)
        contenders.update(peer_batch_contenders(peers, n, keys, op))
        if op == "add":
            contenders["set"] = (set, lambda s: s.update(keys))
        else:
            s = set(keys)
            contenders["set"] = (lambda s=s: s, lambda s: list(map(s.__contains__, keys)))
        C._progress(f"str list batch {op} n={n:,}")
        best = interleaved_best(contenders, repeats, lambda: renew_str_objects(keys))
        counts = {name: n for name in best}
        peer_names = [p for p in best if p not in names_bk]
        report.table(
            f"str list batch {op}, n = {n:,}",
            best,
            counts,
            names_bk,
            peer_names,
            note="bloomkit: `f.update(list)` / `f.contains_many(list)`; set: `s.update(list)` / "
            "`list(map(s.__contains__, list))`; peers: their batch call or `[k in f for k in list]`.",
        )
        report.record(f"str list batch {op} {n:.0e}", best, counts, names_bk, peer_names)


def accuracy_table(bk, peers, layouts, n, probes, seed):
    keys, absent = C.u64_keys(n, probes, seed)
    keys = keys >> np.uint64(1)  # < 2**63 for peers that take a C long
    absent = absent >> np.uint64(1)
    absent = absent[~np.isin(absent, keys)]
    key_list, absent_list = keys.tolist(), absent.tolist()
    print(f"### Measured false-positive rate and memory, n = {n:,}, error_rate = {P}")
    print()
    print(f"{len(absent):,} absent uint64 keys probed per filter.")
    print()
    print("| filter | measured FPR | bits/key | memory vs classic |")
    print("|---|---:|---:|---:|")
    classic_bits = None
    for layout in layouts:
        f = bk.BloomFilter(n, P, layout=layout)
        f.update(keys)
        assert f.contains_many(keys).all()
        fpr = np.count_nonzero(f.contains_many(absent)) / len(absent)
        if layout == "classic":
            classic_bits = f.num_bits
        vs = f"{f.num_bits / classic_bits - 1:+.1%}" if classic_bits else ""
        print(f"| bloomkit {layout} | {fpr:.4%} | {f.num_bits / n:.2f} | {vs} |")
    for pname, peer in peers.items():
        f = peer["make"](n)
        peer["add_batch"](f, key_list)
        hits = sum(peer["contains_batch"](f, absent_list)) if peer["contains_batch"] else loop_in(f, absent_list)
        print(f"| {pname} | {hits / len(absent):.4%} | {peer['bits'](f) / n:.2f} | |")
    print()


def absent_hits(f, n_probes: int, seed: int, chunk: int = 10**7) -> int:
    """Positives of ``f`` among ``n_probes`` random keys in [2**63, 2**64), none inserted (keys are < 2**63)."""
    rng = np.random.default_rng(seed + 7919)
    hits = 0
    for start in range(0, n_probes, chunk):
        absent = rng.integers(2**63, 2**64, size=min(chunk, n_probes - start), dtype=np.uint64)
        hits += int(np.count_nonzero(f.contains_many(absent)))
    return hits


def rates_scenario(bk, layouts, n, rates, probes, repeats, seed):
    """Per error rate: each layout's bits/key, measured FPR and batch add / lookup ns/key, the gather floor, the default.

    Targets (the default-layout rule, sizing.hpp ``default_layout``): the
    default takes at most ``DEFAULT_LAYOUT_MEMORY_BOUND`` (1.10) times the
    classic filter's memory, and is at least 0.9x as fast as the fastest
    layout within that bound. Keys are uint64 in [0, 2**63); absent probes
    are in [2**63, 2**64), so every positive is a false one. Batches run
    with the library's thread setting (``BLOOMKIT_BATCH_THREADS`` / CPUs).
    """
    keys = np.random.default_rng(seed).integers(0, 2**63, size=n, dtype=np.uint64)
    bound = bk.calc.DEFAULT_LAYOUT_MEMORY_BOUND
    for rate in rates:
        default = bk.calc.default_layout(n, rate)
        table = {p.layout: p for p in bk.calc.layout_table(n, rate)}
        classic_bits = table["classic"].num_bits
        # More probes at low rates so that tens of false positives are seen
        # (1e-6 x 3e7 = 30), within --rate-probes.
        n_probes = int(min(probes, max(10**6, 30 / rate)))
        C._progress(f"rates: error_rate {rate}, default {default}")
        fprs = {}
        for layout in layouts:
            f = bk.BloomFilter(n, rate, layout=layout)
            f.update(keys)
            fprs[layout] = absent_hits(f, n_probes, seed)
            del f
        contenders = {}
        for layout in layouts:
            contenders[f"add {layout}"] = (
                lambda layout=layout: bk.BloomFilter(n, rate, layout=layout),
                lambda f: f.update(keys),
            )
            filled = bk.BloomFilter(n, rate, layout=layout)
            filled.update(keys)
            contenders[f"lookup {layout}"] = (lambda f=filled: f, lambda f: f.contains_many(keys))
        contenders["gather"] = gather_contender(table[default].nbytes, n, np.random.default_rng(seed))
        best = interleaved_best(contenders, repeats)
        ns = {name: best[name] * 1e9 / n for name in best}
        print(f"### error_rate {rate:g}, n = {n:,}: default `{default}`")
        print()
        print(
            f"{n_probes:,} absent uint64 probes per layout; ns/key: best of {repeats} interleaved rounds of "
            f"`update(ndarray)` into a new filter / `contains_many(ndarray)`; gather: `array[random indices]` "
            f"over the default's {table[default].nbytes / 1e6:.1f} MB, {ns['gather']:.1f} ns/key."
        )
        print()
        print(
            "| layout | k | bits/key | memory / classic | measured FPR (hits) | FPR / requested | add ns/key "
            "| lookup ns/key | add / gather | lookup / gather |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for layout in layouts:
            p = table[layout]
            fpr = fprs[layout] / n_probes
            mark = " (default)" if layout == default else ""
            print(
                f"| {layout}{mark} | {p.num_hashes} | {p.bits_per_key:.2f} | {p.num_bits / classic_bits:.3f} | "
                f"{fpr:.3e} ({fprs[layout]}) | {fpr / rate:.2f} | {ns['add ' + layout]:.1f} | "
                f"{ns['lookup ' + layout]:.1f} | {ns['add ' + layout] / ns['gather']:.2f} | "
                f"{ns['lookup ' + layout] / ns['gather']:.2f} |"
            )
        print()
        within = [x for x in layouts if table[x].num_bits <= bound * classic_bits]
        memory_ok = table[default].num_bits <= bound * classic_bits
        print(
            f"- memory: default {table[default].num_bits / classic_bits:.3f}x classic "
            f"({'met' if memory_ok else 'NOT met'}: at most {bound:.2f}x); layouts within the bound: "
            f"{', '.join(within)}"
        )
        for op in ("add", "lookup"):
            fastest = min(within, key=lambda x: ns[f"{op} {x}"])
            ratio = ns[f"{op} {fastest}"] / ns[f"{op} {default}"]
            print(
                f"- {op}: default {ns[f'{op} {default}']:.1f} ns/key, fastest within the bound `{fastest}` "
                f"{ns[f'{op} {fastest}']:.1f} ns/key: {ratio:.2f}x its speed ({'met' if ratio >= 0.9 else 'NOT met'}: "
                f"at least 0.90x)"
            )
        print()
        del contenders, best


def _record(self, label, best, counts, names_bk, peer_names, gather=None):
    per = {name: best[name] * 1e9 / counts[name] for name in best}
    fastest_peer = min((p for p in peer_names if p != "set" and p in per), key=per.get, default=None)
    for name in names_bk:
        parts = []
        if fastest_peer:
            parts.append(f"{per[fastest_peer] / per[name]:.2f}x {fastest_peer}")
        if "set" in per:
            parts.append(f"{per['set'] / per[name]:.2f}x set")
        if gather:
            parts.append(f"{per[name] / per[gather]:.2f}x gather")
        self.summary.append((f"{label} {name}", f"{per[name]:.1f} ns/key; " + ", ".join(parts), None))


Report.record = _record


def fuse_scenario(bk, n, probes, repeats, seed, report):
    """BinaryFuseFilter (8 and 16 bits) against split_block Bloom filters, one core, same keys, one run.

    Build = ``BinaryFuseFilter.build(keys)`` (hashing + peeling) vs ``BloomFilter.update(keys)``
    into an empty filter; lookup = ``contains_many`` over the n inserted keys. The Bloom filters
    are split_block at the fuse filters' rates (2**-8, 2**-16) and at the script's 1 %. Batches
    run on one thread (``_set_batch_threads(1)``): the issue's target is one core.
    """
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    bloom_rates = {"split_block 2^-8": 2.0**-8, "split_block 2^-16": 2.0**-16, f"split_block {P:g}": P}
    bk._core._set_batch_threads(1)
    build = {}
    for bits in (8, 16):
        build[f"fuse {bits}-bit"] = (
            lambda: None,
            lambda _, bits=bits: bk.BinaryFuseFilter.build(keys, fingerprint_bits=bits),
        )
    for name, rate in bloom_rates.items():
        build[name] = (lambda rate=rate: bk.BloomFilter(n, rate, layout="split_block"), lambda f: f.update(keys))
    C._progress(f"fuse build n={n:,}")
    built = interleaved_best(build, repeats)
    # CPU seconds of each build (one thread, so one core's time): on a busy
    # shared machine the wall time also counts the time spent waiting for a core.
    cpu = {}
    for name, (setup, run) in build.items():
        state = setup()
        started = time.process_time()
        run(state)
        cpu[name] = time.process_time() - started
    filters = {f"fuse {bits}-bit": bk.BinaryFuseFilter.build(keys, fingerprint_bits=bits) for bits in (8, 16)}
    for name, rate in bloom_rates.items():
        filters[name] = bk.BloomFilter(n, rate, layout="split_block")
        filters[name].update(keys)
    lookup = {name: (lambda f=f: f, lambda f: f.contains_many(keys)) for name, f in filters.items()}
    C._progress(f"fuse lookup n={n:,}")
    looked = interleaved_best(lookup, repeats)
    # CPU seconds too: one thread, so a lookup's CPU time is what it costs
    # when the shared machine's other processes take the core away (a memory
    # stall is still CPU time).
    looked_cpu = interleaved_best(lookup, repeats, clock=time.process_time)
    for f in filters.values():
        assert f.contains_many(keys).all(), "a false negative"
    print(f"## BinaryFuseFilter vs split_block Bloom, n = {n:,} NumPy uint64 keys, one thread")
    print()
    print(
        f"Build: `BinaryFuseFilter.build(keys)` / `BloomFilter(n, p).update(keys)`; lookup: `contains_many(keys)`; "
        f"FPR over {probes:,} absent keys; best of {repeats} interleaved rounds."
    )
    print()
    print(
        "| filter | bits/key | measured FPR | build s | build CPU s | build ns/key | lookup ns/key "
        "| lookup CPU ns/key | lookup vs split_block 2^-8 | CPU lookup vs split_block 2^-8 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    reference = looked["split_block 2^-8"]
    reference_cpu = looked_cpu["split_block 2^-8"]
    for name, f in filters.items():
        hits = absent_hits(f, probes, seed)
        bits = f.nbytes * 8 / n
        print(
            f"| {name} | {bits:.3f} | {hits / probes:.4%} | {built[name]:.3f} | {cpu[name]:.3f} | "
            f"{built[name] * 1e9 / n:.1f} | "
            f"{looked[name] * 1e9 / n:.1f} | {looked_cpu[name] * 1e9 / n:.1f} | {looked[name] / reference:.2f} | "
            f"{looked_cpu[name] / reference_cpu:.2f} |"
        )
        if name == "fuse 8-bit":
            report.summary.append((f"fuse 8-bit build of {n:.0e} keys", f"{built[name]:.3f} s", built[name] <= 1.0))
            report.summary.append((f"fuse 8-bit build of {n:.0e} keys, CPU", f"{cpu[name]:.3f} s", cpu[name] <= 1.0))
            report.summary.append(("fuse 8-bit bits/key", f"{bits:.3f}", bits <= 9.1))
            report.summary.append(
                (f"fuse 8-bit FPR ({probes:.0e} probes)", f"{hits / probes:.4%}", hits / probes <= 0.0042)
            )
            ratio = looked[name] / reference
            report.summary.append(("fuse 8-bit lookup / split_block 2^-8 lookup", f"{ratio:.2f}", ratio <= 1.0))
            ratio_p = looked[name] / looked[f"split_block {P:g}"]
            report.summary.append((f"fuse 8-bit lookup / split_block {P:g} lookup", f"{ratio_p:.2f}", ratio_p <= 1.0))
            ratio_cpu = looked_cpu[name] / reference_cpu
            report.summary.append(
                ("fuse 8-bit lookup / split_block 2^-8 lookup, CPU", f"{ratio_cpu:.2f}", ratio_cpu <= 1.0)
            )
    print()
    bk._core._set_batch_threads(BATCH_THREADS[-1] if BATCH_THREADS else 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", default="classic,blocked512,split_block")
    ap.add_argument("--per-key-size", default="1e6")
    ap.add_argument("--batch-sizes", default="1e6,1e7,1e8")
    ap.add_argument("--str-sizes", default="1e6,1e7")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--probes", default="1e6")
    ap.add_argument(
        "--only",
        default="accuracy,per-key,numpy,str",
        help="comma-separated parts to run (also 'rates': every layout and the default at --error-rates; "
        "'fuse': BinaryFuseFilter against split_block at --fuse-size)",
    )
    ap.add_argument("--fuse-size", default="1e7", help="keys of the 'fuse' part")
    ap.add_argument("--fuse-probes", default="1e7", help="absent probes per filter in the 'fuse' part")
    ap.add_argument("--error-rates", default="1e-2,1e-3,1e-4,1e-6", help="error rates of the 'rates' part")
    ap.add_argument("--rates-size", default="1e7", help="keys per filter in the 'rates' part")
    ap.add_argument("--rate-probes", default="3e7", help="most absent probes per filter in the 'rates' part")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--simd",
        default="auto",
        help="comma-separated SIMD levels to run bloomkit with, as separate contenders "
        "(e.g. portable,avx2); 'auto' keeps the level chosen at import",
    )
    ap.add_argument(
        "--batch-threads",
        default="1,2",
        help="comma-separated thread counts for bloomkit's batches (bloomkit._core._set_batch_threads), "
        "as separate contenders",
    )
    args = ap.parse_args(argv)
    SIMD_LEVELS[:] = [x for x in args.simd.split(",") if x]
    BATCH_THREADS[:] = [int(x) for x in args.batch_threads.split(",") if x]
    layouts = [x for x in args.layouts.split(",") if x]
    parts = set(args.only.split(","))

    bk, _, _ = C.import_bloomkit("BloomFilter")
    if bk is None:
        print("bloomkit is not installed", file=sys.stderr)
        return 1
    peers = {} if args.no_peers else load_peers()
    info = C.machine_info()
    print("# bloomkit speed benchmark: layouts vs peers")
    print()
    print(f"Command: `python benchmarks/bench_speed.py {' '.join(argv if argv is not None else sys.argv[1:])}`")
    print()
    C.print_machine(info, C.LIB_STATUS)
    print(f"error_rate {P}; best of {args.repeats} interleaved rounds; ns/key is wall time / keys.")
    print()
    print(
        f"bloomkit SIMD level at import: {bk._core.simd_level()} (CPU and build support: {bk._core.simd_supported()})"
    )
    print()
    report = Report()
    started = time.time()
    if "accuracy" in parts:
        accuracy_table(bk, peers, layouts, C.parse_count(args.per_key_size), C.parse_count(args.probes), args.seed)
    if "per-key" in parts:
        per_key_scenarios(bk, peers, layouts, C.parse_count(args.per_key_size), args.repeats, report, args.seed)
    if "numpy" in parts:
        for n in C.parse_sizes(args.batch_sizes):
            numpy_batch_scenarios(bk, peers, layouts, n, args.repeats, report, args.seed)
    if "str" in parts:
        for n in C.parse_sizes(args.str_sizes):
            str_batch_scenarios(bk, peers, layouts, n, args.repeats, report)
    if "rates" in parts:
        rates_scenario(
            bk,
            layouts,
            C.parse_count(args.rates_size),
            C.parse_rates(args.error_rates),
            C.parse_count(args.rate_probes),
            args.repeats,
            args.seed,
        )
    if "fuse" in parts:
        fuse_scenario(
            bk, C.parse_count(args.fuse_size), C.parse_count(args.fuse_probes), args.repeats, args.seed, report
        )
    print("## Summary (bloomkit per layout: ns/key, speed ratio to the fastest peer / set, cost ratio to gather)")
    print()
    for label, value, met in report.summary:
        mark = "" if met is None else (" (met)" if met else " (NOT met)")
        print(f"- {label}: {value}{mark}")
    print()
    print(f"Total run time {time.time() - started:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
