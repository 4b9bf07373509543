"""Shared helpers for the bloomkit benchmark scripts.

Everything that more than one script needs lives here, so that the scripts only
describe *what* they measure:

* machine description (platform, CPU model, Python, library versions);
* deterministic key generation (NumPy uint64 keys and URL-like ``str`` keys) with
  every per-library key form prepared *outside* the timed region;
* timing (``time.perf_counter``, GC disabled while timing, warm-up, best of N);
* guarded imports of bloomkit classes and peer libraries ("not installed");
* a generic insert / lookup / delete / FPR driver for one filter "spec";
* Markdown table printing and JSON output;
* the name and header of a recorded report (``report_path``, ``report_header``):
  date, commit and machine, so ``benchmarks/results/`` files say what they measured.

Only the standard library and NumPy are required.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import glob
import importlib
import importlib.metadata
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "benchmarks", "results")

ERROR_RATE = 0.01
DEFAULT_PROBES = 200_000
DEFAULT_SLOW_CAP = 50_000
WARMUP_KEYS = 10_000

# --------------------------------------------------------------------------------------
# machine description
# --------------------------------------------------------------------------------------


def _first_cpu_fields() -> dict:
    """The first CPU's ``/proc/cpuinfo`` block as ``{lower-case key: value}`` ({} off Linux)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():  # the end of the first CPU's block
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    return _first_cpu_fields().get("model name") or platform.processor() or "unknown"


def cpu_detail() -> str:
    """CPU family/model and cache sizes, e.g. ``family 25 model 17, L2 1024K, L3 32768K`` ("" off Linux).

    "AMD EPYC" alone names several generations: the same benchmark, at the
    same commit, measured a binary fuse lookup 1.16x and 0.88x split_block's
    time on two hosts of that name, so a report says which one it ran on.
    """
    fields = _first_cpu_fields()
    parts = [f"family {fields['cpu family']} model {fields['model']}"] if "cpu family" in fields and "model" in fields else []
    caches = {}
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(os.path.join(index, "level")) as level, open(os.path.join(index, "size")) as size:
                caches.setdefault(int(level.read()), size.read().strip())
        except (OSError, ValueError):
            continue
    parts += [f"L{level} {caches[level]}" for level in sorted(caches) if level >= 2]
    return ", ".join(parts)


def machine_info() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_detail": cpu_detail(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": np.__version__,
        "loadavg_at_start": [round(x, 2) for x in load] if load else None,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def print_machine(info: dict, libs: dict) -> None:
    print("## Machine")
    print()
    print(f"- platform: {info['platform']}")
    print(f"- CPU: {info['cpu_model']} ({info['usable_cpus']} usable of {info['cpu_count']} logical CPUs)")
    if info.get("cpu_detail"):
        print(f"- CPU detail: {info['cpu_detail']}")
    print(f"- Python: {info['python']}, NumPy {info['numpy']}")
    if info.get("loadavg_at_start"):
        print(f"- load average at start: {info['loadavg_at_start']}")
        if info["loadavg_at_start"][0] > 0.5 * (info["usable_cpus"] or 1):
            print("- **warning: the machine is busy; absolute numbers are noisy, "
                  "compare ratios within this run only**")
    print(f"- started: {info['started']}")
    print()
    print("## Libraries")
    print()
    for name, status in libs.items():
        print(f"- {name}: {status}")
    print()
    sys.stdout.flush()


# --------------------------------------------------------------------------------------
# guarded imports
# --------------------------------------------------------------------------------------

LIB_STATUS: dict[str, str] = {}


def dist_version(dist: str) -> Optional[str]:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def import_peer(dist: str, module: str):
    """Import a peer library; return (module, version) or (None, None).

    Prints nothing itself; records "not installed" / the import error in LIB_STATUS
    so that the scripts print one consistent list of what ran.
    """
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # ImportError, or a broken binary wheel
        LIB_STATUS[dist] = f"not installed ({type(exc).__name__}: {exc}) -- skipped"
        return None, None
    ver = dist_version(dist) or getattr(mod, "__version__", "?")
    LIB_STATUS[dist] = f"{ver}"
    return mod, ver


def import_bloomkit(*class_names: str):
    """Return (module, version, {name: class or None}).

    bloomkit may be missing entirely (``setup_env.sh --no-bloomkit``); then every
    class is None, the caller skips those rows and the reason is recorded in
    LIB_STATUS.
    """
    try:
        bk = importlib.import_module("bloomkit")
    except Exception as exc:
        LIB_STATUS["bloomkit"] = (
            f"not installed ({type(exc).__name__}: {exc}) -- bloomkit rows skipped, "
            "ratios shown as n/a"
        )
        return None, None, {n: None for n in class_names}
    ver = dist_version("bloomkit") or getattr(bk, "__version__", "?")
    classes = {n: getattr(bk, n) for n in class_names}
    # Say which copy ran without printing machine paths into committed reports.
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = "this source tree" if os.path.abspath(getattr(bk, "__file__", "")).startswith(repo) else "an installed copy"
    LIB_STATUS["bloomkit"] = f"{ver} (imported from {where})"
    return bk, ver, classes


# --------------------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------------------


def url_keys(start: int, count: int) -> np.ndarray:
    """Deterministic URL-like keys, as a NumPy ``U`` array.

    Key i is ``https://example.com/path/<i>/item?id=<j>`` with j a fixed
    pseudo-random function of i, so keys for different i are always distinct.
    """
    mult = 2654435761
    keys = [
        f"https://example.com/path/{i}/item?id={(i * mult) & 0xFFFFFFFF}"
        for i in range(start, start + count)
    ]
    return np.array(keys)


def u64_keys(n: int, probes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n random uint64 keys to insert and `probes` random uint64 keys that are
    guaranteed absent from them (and distinct among themselves)."""
    rng = np.random.default_rng(seed)
    total = n + probes
    arr = rng.integers(0, np.iinfo(np.uint64).max, size=total, dtype=np.uint64, endpoint=True)
    # 64-bit collisions are astronomically rare, but make absence a guarantee.
    for _ in range(10):
        _, first = np.unique(arr, return_index=True)
        if len(first) == total:
            break
        dup = np.ones(total, dtype=bool)
        dup[first] = False
        arr[dup] = rng.integers(
            0, np.iinfo(np.uint64).max, size=int(dup.sum()), dtype=np.uint64, endpoint=True
        )
    else:  # pragma: no cover
        raise RuntimeError("could not draw distinct uint64 keys")
    return arr[:n], arr[n:]


KIND_LABEL = {
    "u64": "NumPy uint64 keys (uniform random)",
    "str": 'Python str URL-like keys ("https://example.com/path/<i>/item?id=<j>")',
}


class KeySet:
    """Keys of one kind in every form a library may want, built outside timing.

    Forms:
      ``np``    the NumPy array (uint64, or ``U`` for strings)
      ``list``  Python objects: int (u64 kind) or str (str kind)
      ``i64``   u64 kind only: the same 64 bits as signed Python ints
      ``bytes`` u64 kind: 8-byte little-endian (bloomkit's canonical bytes for ints);
                str kind: the UTF-8 encoding

    ``str`` lists are re-created (new str objects) on every call: CPython caches a
    str's hash() inside the object, so reusing the objects would hand libraries that
    hash with Python's hash() (rbloom, abloom, set) a free hash on every phase after
    the first. Fresh objects model keys that arrive from I/O.
    """

    def __init__(self, kind: str, n: int, probes: int, seed: int = 42):
        self.kind, self.n, self.probes = kind, n, probes
        t0 = time.perf_counter()
        if kind == "u64":
            self.ins_np, self.miss_np = u64_keys(n, probes, seed)
        elif kind == "str":
            self.ins_np = url_keys(0, n)
            self.miss_np = url_keys(n, probes)
        else:
            raise ValueError(f"unknown key kind {kind!r} (allowed: u64, str)")
        self._cache: dict = {}
        self.build_seconds = time.perf_counter() - t0

    @property
    def label(self) -> str:
        return KIND_LABEL[self.kind]

    def _arr(self, which: str, limit: Optional[int], start: int = 0) -> np.ndarray:
        arr = self.ins_np if which == "ins" else self.miss_np
        stop = len(arr) if limit is None else min(limit, len(arr))
        return arr if (start == 0 and stop == len(arr)) else arr[start:stop]

    def get(self, form: str, which: str = "ins", limit: Optional[int] = None, start: int = 0):
        """Keys [start, limit) of the inserted ("ins") or absent ("miss") keys."""
        arr = self._arr(which, limit, start)
        if form == "np":
            return arr
        if self.kind == "str":
            if form == "list":
                return arr.tolist()  # fresh str objects every call (see class doc)
            if form == "bytes":
                return [s.encode() for s in arr.tolist()]
            raise ValueError(f"key form {form!r} is not available for str keys")
        key = (form, which, start, len(arr))
        if key not in self._cache:
            if form == "list":
                val = arr.tolist()
            elif form == "i64":
                val = arr.view(np.int64).tolist()
            elif form == "bytes":
                val = [x.to_bytes(8, "little") for x in arr.tolist()]
            else:
                raise ValueError(f"unknown key form {form!r}")
            self._cache[key] = val
        return self._cache[key]

    def drop_cache(self) -> None:
        self._cache.clear()


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------


def timed(fn: Callable, *args):
    """Run fn(*args) once with the cyclic GC off; return (seconds, result)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        result = fn(*args)
        dt = time.perf_counter() - t0
    finally:
        if was_enabled:
            gc.enable()
    return dt, result


def best_of(setup: Callable[[], tuple], run: Callable, repeats: int, long_phase: float):
    """Best (minimum) time of up to `repeats` runs of run(*setup()).

    setup() is untimed and gives each run fresh state (a new empty filter, fresh key
    objects). A phase whose run takes longer than `long_phase` seconds is not
    repeated: "best of N" is for small, noisy phases. Returns
    (best_seconds, runs_done, last_result, last_state).
    """
    best = math.inf
    runs = 0
    result = state = None
    for _ in range(max(1, repeats)):
        state = setup()
        dt, result = timed(run, *state)
        runs += 1
        best = min(best, dt)
        if dt > long_phase:
            break
    return best, runs, result, state


def positives(result) -> int:
    """Number of 'present' answers in a lookup result (int, bool array, list)."""
    if isinstance(result, (int, np.integer)):
        return int(result)
    if isinstance(result, np.ndarray):
        return int(np.count_nonzero(result))
    return int(sum(1 for r in result if r))


# Per-key loops. All libraries get the same loop shape, so that loop overhead is equal.


def loop_call(fn: Callable, keys) -> None:
    for k in keys:
        fn(k)


def loop_in(container, keys) -> int:
    c = 0
    for k in keys:
        if k in container:
            c += 1
    return c


def loop_pred(fn: Callable, keys) -> int:
    c = 0
    for k in keys:
        if fn(k):
            c += 1
    return c


# --------------------------------------------------------------------------------------
# filter specs and the generic driver
# --------------------------------------------------------------------------------------


@dataclass
class Spec:
    """How to benchmark one API style of one library.

    insert(f, keys) and contains(f, keys) are the timed calls; contains returns the
    number of positives or something `positives()` understands. `forms` maps key
    kind -> key form (see KeySet). `slow` specs (pure-Python peers) are measured on
    a filter sized for at most --slow-cap keys.
    """

    library: str
    api: str
    style: str  # "per-key", "batch (list)", "batch (NumPy)"
    make: Callable[[int, float], Any]  # (capacity, error_rate) -> empty filter
    insert: Callable[[Any, Any], Any]
    contains: Callable[[Any, Any], Any]
    forms: dict
    slow: bool = False
    remove: Optional[Callable[[Any, Any], Any]] = None
    clone: Optional[Callable[[Any], Any]] = None
    bits: Optional[Callable[[Any], float]] = None
    note: Any = ""  # str, or {kind: str}
    is_bloomkit: bool = False
    exact: bool = False  # e.g. Python set: no false positives by construction

    def supports(self, kind: str) -> bool:
        return kind in self.forms


@dataclass
class Row:
    section: str
    library: str
    api: str
    style: str
    op: str
    keys: int
    seconds: float
    runs: int
    capped: bool = False
    fpr: Optional[float] = None
    target_fpr: Optional[float] = None
    bits_per_key: Optional[float] = None
    note: str = ""
    is_bloomkit: bool = False
    error: str = ""
    warning: str = ""  # a correctness problem seen while measuring (false negatives, ...)

    @property
    def mops(self) -> Optional[float]:
        if self.error or not self.seconds or self.seconds <= 0:
            return None
        return self.keys / self.seconds / 1e6


class Options:
    """Common command-line options shared by all scripts."""

    @staticmethod
    def add_to(p: argparse.ArgumentParser, default_sizes: str = "1e6") -> None:
        p.add_argument("--sizes", default=default_sizes,
                       help=f"comma-separated filter capacities N, e.g. 1e6,1e7 (default {default_sizes})")
        p.add_argument("--kinds", default="u64,str",
                       help="key kinds: u64 (NumPy uint64), str (URL-like str); default both")
        p.add_argument("--probes", type=float, default=DEFAULT_PROBES,
                       help=f"absent keys probed for the FPR (default {DEFAULT_PROBES:,})")
        p.add_argument("--slow-cap", type=float, default=DEFAULT_SLOW_CAP,
                       help="pure-Python peers are measured on a filter of at most this many keys "
                            f"(default {DEFAULT_SLOW_CAP:,})")
        p.add_argument("--repeats", type=int, default=3, help="best of this many runs per phase (default 3)")
        p.add_argument("--long-phase", type=float, default=1.5,
                       help="a phase whose run takes longer than this many seconds is not repeated (default 1.5)")
        p.add_argument("--libs", default="",
                       help="only run libraries whose name contains one of these comma-separated words")
        p.add_argument("--error-rates", default=str(ERROR_RATE),
                       help=f"comma-separated requested false-positive rates (default {ERROR_RATE})")
        p.add_argument("--seed", type=int, default=42, help="seed for the uint64 keys (default 42)")
        p.add_argument("--json", metavar="PATH", help="also write all results as JSON to PATH")


def parse_count(text: str) -> int:
    v = float(text)
    if v <= 0 or v != int(v):
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(v)


def parse_sizes(text: str) -> list[int]:
    return [parse_count(t) for t in text.split(",") if t.strip()]


def parse_rates(text: str) -> list[float]:
    rates = [float(t) for t in text.split(",") if t.strip()]
    for r in rates:
        if not 0 < r < 1:
            raise SystemExit(f"error rate {r} is outside (0, 1)")
    return rates


def parse_kinds(text: str) -> list[str]:
    kinds = [t.strip() for t in text.split(",") if t.strip()]
    for k in kinds:
        if k not in KIND_LABEL:
            raise SystemExit(f"unknown key kind {k!r}; allowed: {', '.join(KIND_LABEL)}")
    return kinds


def lib_selected(library: str, libs_filter: str) -> bool:
    words = [w.strip().lower() for w in libs_filter.split(",") if w.strip()]
    if not words:
        return True
    return any(w in library.lower() for w in words)


def select_specs(specs: list, libs_filter: str) -> list:
    """Apply --libs, and mark libraries left out by it in the printed library list."""
    kept = [s for s in specs if lib_selected(s.library, libs_filter)]
    for name in list(LIB_STATUS):
        if not lib_selected(name, libs_filter):
            LIB_STATUS[name] += " (not run: --libs)"
    return kept


def _progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


def run_spec(spec: Spec, ks: KeySet, section: str, opts, *, error_rate: float = ERROR_RATE,
             with_remove: bool = False, cap_slow_probes: bool = False) -> list[Row]:
    """Insert / lookup present / lookup absent (FPR) [/ remove] for one spec.

    Slow specs use a filter of at most --slow-cap keys; with cap_slow_probes their
    absent-key probes are capped the same way (bench_bloom keeps all probes)."""
    form = spec.forms[ks.kind]
    capped = spec.slow and ks.n > int(opts.slow_cap)
    m = min(ks.n, int(opts.slow_cap)) if spec.slow else ks.n
    p = min(ks.probes, int(opts.slow_cap)) if (spec.slow and cap_slow_probes) else ks.probes
    note = spec.note.get(ks.kind, "") if isinstance(spec.note, dict) else spec.note
    common = dict(section=section, library=spec.library, api=spec.api, style=spec.style,
                  note=note, is_bloomkit=spec.is_bloomkit)
    rows: list[Row] = []
    _progress(f"{section}: {spec.library} [{spec.style}] {spec.api} on {m:,} keys")

    def ins_keys():
        return ks.get(form, "ins", m)

    try:
        # warm-up: a throwaway small filter, a few thousand of each operation
        w = min(m, WARMUP_KEYS)
        wf = spec.make(w, error_rate)
        spec.insert(wf, ks.get(form, "ins", w))
        if spec.contains is not None:
            spec.contains(wf, ks.get(form, "ins", w))
        if with_remove and spec.remove is not None:
            spec.remove(wf, ks.get(form, "ins", w // 2))
        del wf

        t_ins, runs, _, state = best_of(lambda: (spec.make(m, error_rate), ins_keys()), spec.insert,
                                        opts.repeats, opts.long_phase)
        f = state[0]
        state = None
        if spec.contains is not None:
            t_hit, runs_hit, res_hit, _ = best_of(lambda: (f, ins_keys()), spec.contains,
                                                  opts.repeats, opts.long_phase)
            found = positives(res_hit)
            t_miss, runs_miss, res_miss, _ = best_of(lambda: (f, ks.get(form, "miss", p)),
                                                     spec.contains, opts.repeats, opts.long_phase)
            fp = positives(res_miss)
    except Exception as exc:  # a peer that breaks on these keys: report, don't abort
        rows.append(Row(op="insert", keys=m, seconds=0.0, runs=0, capped=capped,
                        error=f"{type(exc).__name__}: {exc}", **common))
        return rows

    bpk = spec.bits(f) / m if spec.bits else None
    if spec.contains is None:  # insert-only spec (no batch lookup API)
        rows.append(Row(op="insert", keys=m, seconds=t_ins, runs=runs, capped=capped,
                        bits_per_key=bpk, **common))
        return rows
    fpr = 0.0 if spec.exact else fp / p
    extra = dict(capped=capped, fpr=fpr, target_fpr=None if spec.exact else error_rate,
                 bits_per_key=bpk)
    note_fn = "" if found == m else f"FALSE NEGATIVES: {m - found:,} inserted keys reported absent"
    rows.append(Row(op="insert", keys=m, seconds=t_ins, runs=runs, **extra, **common))
    rows.append(Row(op="lookup (present)", keys=m, seconds=t_hit, runs=runs_hit,
                    warning=note_fn, **extra, **common))
    rows.append(Row(op="lookup (absent)", keys=p, seconds=t_miss, runs=runs_miss, **extra, **common))

    if with_remove and spec.remove is not None:
        clone = spec.clone or _deepcopy
        try:
            t_rm, runs_rm, _, st = best_of(lambda: (clone(f), ins_keys()), spec.remove,
                                           opts.repeats, opts.long_phase)
            left = positives(spec.contains(st[0], ins_keys()[: min(m, 100_000)]))
            rm_row = Row(op="delete", keys=m, seconds=t_rm, runs=runs_rm, **extra, **common)
            if left > 0.5 * min(m, 100_000):
                rm_row.warning = (f"after deleting every key, {left:,} of the first "
                                  f"{min(m, 100_000):,} still report present")
            rows.append(rm_row)
        except Exception as exc:
            rows.append(Row(op="delete", keys=m, seconds=0.0, runs=0,
                            error=f"{type(exc).__name__}: {exc}", **{**common, **extra}))
    return rows


def _deepcopy(obj):
    import copy
    return copy.deepcopy(obj)


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------


def _fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _fmt_ratio(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    if x >= 10:
        return f"{x:.0f}×"
    if x >= 0.095:
        return f"{x:.2f}×"
    return f"{x:.3f}×"


def _fmt_fpr(r: Row) -> str:
    if r.fpr is None:
        return "—"
    if r.target_fpr is None:
        return "0 (exact)"
    return f"{r.fpr * 100:.3f}% (req {r.target_fpr * 100:g}%)"


def _ratio_key(r: Row):
    # Peers' batch APIs take lists: compare them with bloomkit's batch-on-list row.
    return (r.section, r.op, r.style)


def compute_ratios(rows: list[Row]) -> dict[int, Optional[float]]:
    ref = {}
    for r in rows:
        if r.is_bloomkit and r.mops:
            ref.setdefault(_ratio_key(r), r.mops)
    out = {}
    for i, r in enumerate(rows):
        base = ref.get(_ratio_key(r))
        out[i] = (r.mops / base) if (base and r.mops) else None
    return out


def list_peer_specs(library: str, api: str, make, bits) -> list[Spec]:
    """The two specs of a peer whose API is ``add(k)``/``k in f`` plus ``update(list)``
    (no batch lookup): rbloom, abloom and pybloomfiltermmap3."""
    forms = {"u64": "list", "str": "list"}
    return [
        Spec(library, f"{api}.add(k) / k in f", "per-key", make,
             lambda f, ks: loop_call(f.add, ks), loop_in, forms, bits=bits),
        Spec(library, f"{api}.update(list)", "batch (list)", make,
             lambda f, ks: f.update(ks), None, forms, bits=bits,
             note="no batch lookup API"),
    ]


def run_grid(specs: list[Spec], args, title: str, intro: str, *, section_prefix: str = "",
             **run_options) -> list[Row]:
    """Every spec over ``--sizes`` x ``--kinds`` x ``--error-rates``: one table per cell.

    The key set of a (size, kind) is built once and shared by every rate and
    spec; ``run_options`` go to :func:`run_spec` (e.g. ``with_remove=True``).
    """
    probes = int(args.probes)
    all_rows: list[Row] = []
    for n in parse_sizes(args.sizes):
        for kind in parse_kinds(args.kinds):
            ks = KeySet(kind, n, probes, seed=args.seed)
            for p in parse_rates(args.error_rates):
                section = f"{section_prefix}{kind} N={n:,} p={p:g}"
                rows: list[Row] = []
                for spec in specs:
                    if spec.supports(kind):
                        rows += run_spec(spec, ks, section, args, error_rate=p, **run_options)
                print_table(rows, f"{title}, {ks.label}, N = {n:,}, error_rate = {p:g}", intro)
                all_rows += rows
            del ks
    return all_rows


def print_table(rows: list[Row], title: str, intro: str = "") -> None:
    """One Markdown table for one section."""
    ratios = compute_ratios(rows)
    print(f"### {title}")
    print()
    if intro:
        print(intro)
        print()
    print("| library | API | operation | keys | Mops/s | vs bloomkit | measured FPR | bits/key |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    notes: list[str] = []
    errors: list[str] = []

    def mark(text: str) -> str:
        if not text:
            return ""
        if text not in notes:
            notes.append(text)
        return f" [{notes.index(text) + 1}]"

    for i, r in enumerate(rows):
        keys = f"{r.keys:,}" + ("\\*" if r.capped else "")
        api = r.api + mark(r.note) + (mark("**" + r.warning + "**") if r.warning else "")
        if r.error:
            print(f"| {r.library} | {api} | {r.op} | {keys} | error | — | — | — |")
            errors.append(f"{r.library} `{r.api}` {r.op}: {r.error}")
            continue
        ratio_s = _fmt_ratio(ratios[i])
        # FPR is measured by the absent-key lookups; memory belongs to the filter built
        # by the insert phase: print each once, on the row that measured it.
        fpr_s = _fmt_fpr(r) if r.op.startswith("lookup (absent)") or r.op.startswith("FPR") else ""
        bpk = ""
        if r.op == "insert" or r.op.startswith("insert"):
            bpk = f"{r.bits_per_key:.1f}" if r.bits_per_key is not None else "—"
        print(f"| {r.library} | {api} | {r.op} | {keys} | {_fmt_rate(r.mops)} | "
              f"{ratio_s} | {fpr_s} | {bpk} |")
    print()
    if any(r.capped for r in rows):
        print("\\* pure-Python peer: its filter is sized for, and filled with, the first "
              "`--slow-cap` keys instead of N (its per-key cost hardly depends on N); the keys "
              "column is the number of operations timed.")
        print()
    for j, text in enumerate(notes):
        print(f"[{j + 1}] {text}")
    if notes:
        print()
    for e in errors:
        print(f"- error: {e}")
    if errors:
        print()
    sys.stdout.flush()


def explain_columns(extra: str = "") -> None:
    print("Mops/s = million operations per second (best of up to `--repeats` runs; "
          "phases longer than `--long-phase` s run once). "
          "\"vs bloomkit\" = this row's ops/s ÷ bloomkit's ops/s for the same operation and the "
          "same API style (per-key loop vs per-key loop, batch on a list vs batch on a list); "
          ">1 means the peer is faster. Measured FPR = share of absent probes reported present "
          "after inserting all keys. bits/key = filter memory in bits ÷ keys inserted. "
          "Per-key rows are a plain Python `for` loop over a list of keys prepared beforehand; "
          "str keys are fresh objects in every run (no cached `hash()`)." + (" " + extra if extra else ""))
    print()


def write_json(path: str, script: str, info: dict, args: argparse.Namespace, rows: list[Row]) -> None:
    ratios = compute_ratios(rows)
    data = {
        "script": script,
        "machine": info,
        "libraries": LIB_STATUS,
        "args": vars(args),
        "results": [
            {**dataclasses.asdict(r), "mops": r.mops, "ratio_vs_bloomkit": ratios[i]}
            for i, r in enumerate(rows)
        ],
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, default=str)
    print(f"(wrote {path})")


def header(title: str, args: argparse.Namespace) -> dict:
    info = machine_info()
    print(f"# {title}")
    print()
    print("command: `" + " ".join([os.path.basename(sys.executable)] + sys.argv) + "`")
    print()
    return info


# --------------------------------------------------------------------------------------
# recorded reports: benchmarks/results/YYYY-MM-DD-<what>-<commit>-<machine>.md
# --------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout


def commit() -> str:
    """The checkout's short commit hash ("nogit" outside a git checkout)."""
    return _git("rev-parse", "--short=7", "HEAD").strip() or "nogit"


def uncommitted_files() -> list[str]:
    """Tracked files changed since that commit: a report from a dirty tree says so in its header."""
    return [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()]


def machine_tag() -> str:
    """A short name of the machine: CPU family and usable CPUs, e.g. ``epyc2`` for 2 CPUs of an AMD EPYC."""
    model = cpu_model().lower()
    family = next((w for w in ("epyc", "xeon", "ryzen", "core", "graviton", "apple") if w in model), None)
    family = family or re.sub(r"[^a-z0-9]", "", platform.machine().lower()) or "cpu"
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 0
    return f"{family}{cpus}"


def report_path(what: str, date: Optional[str] = None) -> str:
    """Where a report of ``what`` goes: ``benchmarks/results/<date>-<what>-<commit>-<machine>.md``."""
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", what):
        raise ValueError(f"a report name is lower-case words joined by '-', got {what!r}")
    date = date or time.strftime("%Y-%m-%d", time.gmtime())
    return os.path.join(RESULTS, f"{date}-{what}-{commit()}-{machine_tag()}.md")


def report_header(what: str, command: list[str]) -> str:
    """The Markdown header every recorded report starts with: what, date, commit, machine, command."""
    info = machine_info()
    dirty = uncommitted_files()
    lines = [
        f"# {what}",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- commit: {commit()}" + (f" plus uncommitted changes to {', '.join(dirty)}" if dirty else ""),
        f"- machine: {machine_tag()} ({info['cpu_model']}, {info['usable_cpus']} usable of "
        f"{info['cpu_count']} CPUs, load average {info['loadavg_at_start']} at start)",
        *([f"- cpu: {info['cpu_detail']}"] if info["cpu_detail"] else []),
        f"- python: {info['python']}, numpy {info['numpy']}, {info['platform']}",
        "- command: `" + " ".join(command) + "`",
        "",
    ]
    return "\n".join(lines) + "\n"
