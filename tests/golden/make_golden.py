"""Regenerate the golden files of tests/golden/ (run only for a deliberate format change).

Usage: python tests/golden/make_golden.py VERSION_DIRECTORY [--add-missing]

``--add-missing`` writes only the golden filters the directory does not
have yet (a newly registered type's ``generic-*`` files) and adds them to
its manifest, leaving every existing file as it is.

Either way, the SHA-256 of each golden filter's ``to_bytes()`` that
``tests/golden/to_bytes_sha256.json`` does not hold yet is appended to it;
a digest already there is never changed, so a change to what an existing
filter's bytes are fails tests/test_golden.py however the files were
regenerated.

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
from bloomkit import _types

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


LAYOUTS = _types.BLOOM_LAYOUTS
# Keyed golden filters (docs/FORMAT.md, "Keyed frames") and their secret keys,
# which are test vectors here, not secrets.
SECRETS = {
    "keyed-bloom-split_block": bytes(range(32)),
    "keyed-cuckoo-auto-grown": bytes(range(100, 132)),
}


def generic_name(row, variant) -> str:
    """The name of the golden file of a registered type in one variant."""
    return f"generic-{row.name}" + (f"-{variant}" if variant is not None else "")


def generic_filters() -> dict:
    """One golden filter per framed type of the registry (bloomkit/_types.py) and variant, built alike."""
    filters = {}
    for row in _types.FRAMED:
        for variant in row.variants or (None,):
            filters[generic_name(row, variant)] = (row.build(inserted_keys(500), 500, 0.01, 12345, variant), 500)
    return filters


def golden_filters() -> dict:
    """Name -> (filter, keys inserted): every registered type (``generic_filters``) and the
    shapes only one type has. Every layout is passed explicitly: the golden
    files must not move when the default layout changes."""
    # generic-bloom-<layout> is the filter bloom-<layout> of earlier versions' directories.
    filters = generic_filters()
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


def main(directory: str, add_missing: bool = False) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifests = json.loads(manifest_path.read_text()) if add_missing and manifest_path.exists() else {}
    for name, (filter_, count) in golden_filters().items():
        if add_missing and name in manifests:
            continue
        frame = filter_.to_bytes()
        (out / f"{name}.bkf").write_bytes(frame)
        manifests[name] = manifest(filter_, count, frame, SECRETS.get(name, b""))
    manifest_path.write_text(json.dumps(manifests, indent=1, sort_keys=True) + "\n")
    pin_new_digests()


PINS = Path(__file__).resolve().parent / "to_bytes_sha256.json"


def pin_new_digests(pins_path: Path = PINS) -> list:
    """Append the digest of every golden filter ``pins_path`` lacks; never change one. Returns the names added."""
    pins = json.loads(pins_path.read_text()) if pins_path.exists() else {}
    filters = golden_filters()
    added = [name for name in filters if name not in pins]
    for name in added:
        pins[name] = hashlib.sha256(filters[name][0].to_bytes()).hexdigest()
    if added:
        pins_path.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    return added


if __name__ == "__main__":
    main(sys.argv[1], add_missing="--add-missing" in sys.argv[2:])
