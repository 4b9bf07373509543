"""Shared test helpers: key generators, statistical bounds, corruption fuzzing."""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bloomkit import _types

REQUIRE_INTEGRATION = os.environ.get("BLOOMKIT_REQUIRE_INTEGRATION") == "1"


@dataclass(frozen=True)
class FilterCase:
    """One row of bloomkit's type registry (bloomkit/_types.py) in one of its variants: a contract-suite case.

    ``make(capacity, error_rate, seed)`` returns an empty filter that holds
    ``capacity`` distinct keys at (or below) ``error_rate`` without failing;
    a growable type starts at a sixteenth of it, so every contract check on
    it also covers a grown chain.
    """

    row: _types.FilterRow
    variant: "str | None" = None

    @property
    def name(self) -> str:
        return self.row.name if self.variant is None else f"{self.row.name}-{self.variant}"

    @property
    def cls(self) -> type:
        return self.row.cls

    def make(self, capacity: int, error_rate: float, seed: int, secret_key: "bytes | None" = None):
        """An empty filter (a mutable type; ``secret_key`` for a keyed row)."""
        return self.row.make(self._first_capacity(capacity), error_rate, seed, self.variant, secret_key=secret_key)

    def build(self, keys, capacity: int, error_rate: float, seed: int, secret_key: "bytes | None" = None):
        """A filter holding ``keys``: made and updated, or built from them (a frozen type; ``secret_key`` as make's)."""
        return self.row.build(
            keys, self._first_capacity(capacity), error_rate, seed, self.variant, secret_key=secret_key
        )

    def _first_capacity(self, capacity: int) -> int:
        return max(1, capacity // 16) if self.row.growable else capacity


# What a BloomFilter's repr, HTML table and `bloomkit info` show, at least.
BLOOM_SUMMARY_LABELS = (
    "capacity",
    "error_rate",
    "num_bits",
    "num_hashes",
    "nbytes",
    "fill_ratio",
    "estimated_count",
    "estimated_fpr",
)

# The contract suite runs every registered type in every variant (the Bloom
# layouts of the Bloom and scalable rows); what only one type does lives in
# its own tests/test_<type>.py.
FILTER_CASES = [FilterCase(row, variant) for row in _types.ROWS for variant in (row.variants or (None,))]

# One case per type (its default variant), for tests that need each type once.
FILTER_TYPES = [FilterCase(row) for row in _types.ROWS]

ALL_TYPES = [row.cls for row in _types.ROWS]


def growable(cls, capacity: int, first_slice: int | None = None):
    """A filter of ``cls`` for about ``capacity`` keys that keeps taking keys past it, from the registry.

    A ``growable`` type (scalable) starts with a slice of ``first_slice`` keys
    (default ``capacity``) and grows; a type that refuses keys when full is
    made with its ``unbounded_options`` (cuckoo: ``auto_grow=True``) so a
    long-running test never meets FilterFullError; every other type is its
    row's ``make`` (rotating: a window that never rotates).
    """
    row = _types.row_of(cls)
    first = (first_slice or capacity) if row.growable else capacity
    return row.make(first, 0.01, unbounded=True)


def fmix64(k: int) -> int:
    """MurmurHash3's 64-bit finaliser, as docs/FORMAT.md derives positions from it."""
    mask = 2**64 - 1
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & mask
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & mask
    return k ^ (k >> 33)


def fpr_upper_bound(error_rate: float, probes: int) -> float:
    """The acceptance bound for a measured false-positive rate: ``1.1 p + 5 sigma``.

    sigma is the binomial standard deviation of the measured rate over
    ``probes`` absent keys when the true rate is ``p``; 5 sigma keeps the
    chance of a spurious failure below one in a million per check, and the
    10 % slack covers the integer rounding of k and the filter's own finite
    size effects.
    """
    sigma = math.sqrt(error_rate * (1.0 - error_rate) / probes)
    return 1.1 * error_rate + 5.0 * sigma


def run_threads(targets) -> None:
    """Run each callable in its own thread; re-raise (as an assertion) anything one of them raised."""
    errors = []

    def wrap(target):
        def run():
            try:
                target()
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# The ways contending processes offer the same keys to a shared file
# (tests/test_mmap_processes.py, tests/test_rotating_mapped.py): each
# path of the writer lock, the batch, its chunks and the single key.
OFFER_WAYS = ["one batch", "small batches", "one at a time", "one batch"]


def count_new_answers(f, batch: list, how: str) -> int:
    """Offer ``batch`` to ``f`` the way ``how`` names; the number of keys it answered "new"."""
    if how == "one batch":
        return int((~f.add_many(batch)).sum())
    if how == "small batches":
        return sum(int((~f.add_many(batch[i : i + 997])).sum()) for i in range(0, len(batch), 997))
    if how == "one at a time":
        return sum(not f.add(k) for k in batch)
    raise ValueError(f"unknown way {how!r}")


def random_strings(count: int, seed: int, length: int = 16) -> list:
    """``count`` distinct random ASCII strings (hex of random bytes)."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(count, length // 2), dtype=np.uint8)
    keys = [row.tobytes().hex() for row in raw]
    return keys


def url_keys(start: int, count: int) -> list:
    """URL-like keys sharing a long common prefix, distinct for distinct indices."""
    prefix = "https://www.example-shop.com/catalogue/category/electronics/item?session=abc&id="
    return [f"{prefix}{i}" for i in range(start, start + count)]


def disjoint_random_u64(count_a: int, count_b: int, seed: int):
    """Two disjoint arrays of distinct random uint64 keys."""
    rng = np.random.default_rng(seed)
    values = np.unique(rng.integers(0, 2**64 - 1, size=int((count_a + count_b) * 1.01) + 16, dtype=np.uint64))
    rng.shuffle(values)
    assert len(values) >= count_a + count_b
    return values[:count_a], values[count_a : count_a + count_b]


FRAME_MAGIC = b"\x89BKF\r\n\x1a\n"
CHECKSUM_SEED = 0x424B4631


FORMAT_VERSION = 2


def payload_offset(params_length: int, version: int = FORMAT_VERSION) -> int:
    """Where the payload starts: right after the params (v1), or at the next multiple of 64 (v2)."""
    end = 24 + params_length
    return end if version < 2 else (end + 63) // 64 * 64


def make_frame(type_tag: int, params: bytes, payload: bytes, version: int = FORMAT_VERSION) -> bytes:
    """A docs/FORMAT.md frame with a *valid* checksum around arbitrary params and payload.

    For tests of the field-level validation that runs after the checksum
    has passed (a random corruption is caught by the checksum first).
    """
    import mmh3

    header = FRAME_MAGIC + struct.pack("<HHIQ", version, type_tag, len(params), len(payload)) + params
    body = header + bytes(payload_offset(len(params), version) - len(header)) + payload
    checksum = mmh3.hash128(body, CHECKSUM_SEED, signed=False) & (2**64 - 1)
    return body + struct.pack("<Q", checksum)


def split_frame(blob: bytes):
    """(type_tag, params, payload) of a frame, for tests that rebuild it with make_frame."""
    version, type_tag, params_length, payload_length = struct.unpack_from("<HHIQ", blob, 8)
    params = blob[24 : 24 + params_length]
    start = payload_offset(params_length, version)
    payload = blob[start : start + payload_length]
    return type_tag, params, payload


# Prepended to the subprocess scripts that measure a call's extra memory:
# rss("VmRSS:") / rss("VmHWM:") in bytes, and reset_peak() (VmHWM := VmRSS).
PEAK_RSS_HELPERS = textwrap.dedent(
    """
    def rss(field):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(field)

    def reset_peak():
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)

    def peak_growth(operation, size):
        # (peak RSS growth during operation() in units of size, its result)
        import gc

        gc.collect()
        before = rss("VmRSS:")
        reset_peak()
        result = operation()
        return (rss("VmHWM:") - before) / size, result
    """
)


FUZZ_SCRIPT = textwrap.dedent(
    """
    import random, sys
    import bloomkit
    loader = {loader}
    blob = bytes.fromhex(sys.stdin.read().strip())
    rng = random.Random({seed})
    outcomes = {{"rejected": 0, "accepted_equal": 0}}
    original = loader(blob)
    for trial in range({trials}):
        data = bytearray(blob)
        kind = trial % 5
        if kind == 0:      # truncate
            data = data[: rng.randrange(len(data))]
        elif kind == 1:    # extend
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif kind == 2:    # flip one bit anywhere
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 3:    # overwrite a header/params byte, then fix nothing
            pos = rng.randrange(min(len(data), 24 + 64))
            data[pos] = rng.randrange(256)
        else:              # scribble several random bytes
            for _ in range(rng.randrange(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            loaded = loader(bytes(data))
        except ValueError:
            outcomes["rejected"] += 1
            continue
        # Only an unchanged blob may load (an overwrite can write the same byte).
        if bytes(data) != blob:
            print("ACCEPTED CORRUPT", trial, kind, flush=True)
            sys.exit(3)
        assert loaded == original
        outcomes["accepted_equal"] += 1
    print(outcomes)
    """
)


def fuzz_corruptions(blob: bytes, loader: str, trials: int = 3000, seed: int = 1) -> str:
    """Feed ``trials`` corrupted variants of ``blob`` to ``loader`` in a subprocess.

    ``loader`` is Python source for a callable taking bytes (e.g.
    ``"bloomkit.BloomFilter.from_bytes"``). Every corrupted blob must raise
    ValueError; a crash (segfault, abort) of the subprocess fails the test
    instead of the test run. Returns the subprocess's summary line.
    """
    script = FUZZ_SCRIPT.format(loader=loader, seed=seed, trials=trials)
    result = subprocess.run(
        [sys.executable, "-c", script], input=blob.hex(), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (
        f"fuzzing crashed or accepted corrupt data: rc={result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout


def run_python(source: str, timeout: float = 120, env: "dict | None" = None) -> subprocess.CompletedProcess:
    """Run ``source`` (dedented) in a fresh interpreter; capture its output."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True, timeout=timeout, env=env
    )


def assert_exits_cleanly(source: str, runs: int = 3) -> None:
    """``source`` ends its main thread (daemon threads still busy) with status 0 after printing "exiting"."""
    for _ in range(runs):
        result = run_python(source)
        assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
        assert result.stdout.strip() == "exiting"


REPO = Path(__file__).resolve().parents[1]


def checkout_text_files() -> list:
    """The checkout's prose and code: where a report is cited or a decision quoted (checkout tests only)."""
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md")]
    for folder, patterns in (
        ("cpp", ("*.hpp", "*.cpp", "*.txt")),
        ("python", ("*.py", "*.pyi")),
        ("benchmarks", ("*.py", "*.cpp", "*.md")),
    ):
        for pattern in patterns:
            files += (REPO / folder).rglob(pattern)
    files += [*(REPO / "tests").glob("*.py"), *(REPO / ".ci").iterdir()]
    return [path for path in files if path.is_file()]
