"""Regenerate the golden files of tests/golden/ (run only for a deliberate format change).

Usage: python tests/golden/make_golden.py VERSION_DIRECTORY

Each golden filter is built from fixed keys and seeds; next to the frame
goes a manifest of what it must answer: its parameters, and for 2,000
probe keys that were never added, exactly which ones test positive. The
probe answers pin the hashing, the positions and the layout: change any of
them and tests/test_golden.py fails. A released version's directory is never
regenerated; the compatibility policy (docs/FORMAT.md) is that every
released version stays loadable with the same answers.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import bloomkit

PARAMETERS = (
    "capacity",
    "error_rate",
    "seed",
    "num_bits",
    "num_hashes",
    "counter_bits",
    "initial_capacity",
    "growth",
    "tightening",
    "num_slices",
    "fingerprint_bits",
    "bucket_size",
    "num_buckets",
    "auto_grow",
    "num_stages",
)
PROBES = [f"absent-{i}" for i in range(1000)] + list(range(10**9, 10**9 + 1000))


def inserted_keys(count: int) -> list:
    return [f"key-{i}" for i in range(count // 2)] + list(range(count - count // 2))


LAYOUTS = ("classic", "blocked512", "split_block")
# Keyed golden filters (docs/FORMAT.md, "Keyed frames") and their secret keys,
# which are test vectors here, not secrets.
SECRETS = {
    "keyed-bloom-split_block": bytes(range(32)),
    "keyed-cuckoo-auto-grown": bytes(range(100, 132)),
}


def golden_filters() -> dict:
    """Name -> (filter, keys inserted). Every layout is passed explicitly: the
    golden files must not move when the default layout changes."""
    filters = {}
    for layout in LAYOUTS:
        bloom = bloomkit.BloomFilter(500, 0.01, seed=12345, layout=layout)
        bloom.update(inserted_keys(500))
        filters[f"bloom-{layout}"] = (bloom, 500)
    for bits in (4, 8, 16):
        counting = bloomkit.CountingBloomFilter(300, 0.02, seed=bits, counter_bits=bits)
        counting.update(inserted_keys(300))
        counting.update(inserted_keys(20))  # some keys twice
        filters[f"counting-{bits}"] = (counting, 300)
    for layout in LAYOUTS:
        scalable = bloomkit.ScalableBloomFilter(100, 0.01, growth=2, tightening=0.5, seed=7, layout=layout)
        scalable.update(inserted_keys(1000))  # four slices
        filters[f"scalable-grown-{layout}"] = (scalable, 1000)
    cuckoo = bloomkit.CuckooFilter(500, 0.001, seed=99)
    cuckoo.update(inserted_keys(450))
    filters["cuckoo"] = (cuckoo, 450)
    grown = bloomkit.CuckooFilter(100, 0.01, auto_grow=True, seed=3)
    grown.update(inserted_keys(600))  # several stages
    filters["cuckoo-auto-grown"] = (grown, 600)
    keyed = bloomkit.BloomFilter(
        500, 0.01, seed=12345, layout="split_block", secret_key=SECRETS["keyed-bloom-split_block"]
    )
    keyed.update(inserted_keys(500))
    filters["keyed-bloom-split_block"] = (keyed, 500)
    keyed_cuckoo = bloomkit.CuckooFilter(
        100, 0.01, auto_grow=True, seed=3, secret_key=SECRETS["keyed-cuckoo-auto-grown"]
    )
    keyed_cuckoo.update(inserted_keys(600))
    filters["keyed-cuckoo-auto-grown"] = (keyed_cuckoo, 600)
    return filters


def manifest(filter_, count: int, frame: bytes, secret: bytes = b"") -> dict:
    params = {name: getattr(filter_, name) for name in PARAMETERS if hasattr(filter_, name)}
    if type(filter_).__name__ in ("CuckooFilter", "ScalableBloomFilter"):
        params["len"] = len(filter_)  # exact for cuckoo and scalable; counting's is an estimate
    entry = {
        "type": type(filter_).__name__,
        "inserted": count,
        "sha256": hashlib.sha256(frame).hexdigest(),
        "params": params,
        "positive_probes": [i for i, hit in enumerate(filter_.contains_many(PROBES)) if hit],
    }
    if filter_.keyed:
        entry["secret_key"] = secret.hex()
    return entry


def main(directory: str) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    manifests = {}
    for name, (filter_, count) in golden_filters().items():
        frame = filter_.to_bytes()
        (out / f"{name}.bkf").write_bytes(frame)
        manifests[name] = manifest(filter_, count, frame, SECRETS.get(name, b""))
    (out / "manifest.json").write_text(json.dumps(manifests, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
