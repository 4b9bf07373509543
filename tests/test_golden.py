"""Pinned format: golden files of every released format version load and answer exactly as recorded.

tests/golden/v<N>/ holds one frame per filter type and shape (a grown
scalable chain, an auto-grown cuckoo filter, every counter width), written
by that version from fixed keys and seeds (tests/golden/make_golden.py),
and a manifest of what each must answer: its parameters and exactly which
of 2,000 never-added probe keys test positive. Any change to hashing, probe
positions or layout changes those answers and fails here; the
compatibility policy in docs/FORMAT.md is that every released version's
directory keeps passing, unchanged, forever.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

import bloomkit

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import make_golden  # noqa: E402  (found through the sys.path entry above)

CASES = [
    (version.name, name, entry)
    for version in sorted(GOLDEN.glob("v*"), key=lambda p: int(p.name[1:]))
    for name, entry in sorted(json.loads((version / "manifest.json").read_text()).items())
]
WRITTEN_VERSION = bloomkit.BloomFilter(10).to_bytes()[8:10]


@pytest.mark.parametrize("version, name, entry", CASES, ids=[f"{v}-{n}" for v, n, _ in CASES])
def test_golden_file_loads_and_answers_as_recorded(version, name, entry):
    path = GOLDEN / version / f"{name}.bkf"
    frame = path.read_bytes()
    assert hashlib.sha256(frame).hexdigest() == entry["sha256"], "golden files are never rewritten"
    loaded = bloomkit.load(path)
    assert type(loaded).__name__ == entry["type"]
    for attribute, value in entry["params"].items():
        actual = len(loaded) if attribute == "len" else getattr(loaded, attribute)
        assert actual == value, attribute
    assert loaded.contains_many(make_golden.inserted_keys(entry["inserted"])).all()
    hits = [i for i, hit in enumerate(loaded.contains_many(make_golden.PROBES)) if hit]
    assert hits == entry["positive_probes"]
    if frame[8:10] == WRITTEN_VERSION:
        assert loaded.to_bytes() == frame


def test_every_type_and_shape_is_pinned():
    names = {name for _, name, _ in CASES}
    assert {
        "bloom",
        "counting-4",
        "counting-8",
        "counting-16",
        "scalable-grown",
        "cuckoo",
        "cuckoo-auto-grown",
    } <= names
    grown = [entry for _, name, entry in CASES if name == "scalable-grown"]
    assert all(entry["params"]["num_slices"] >= 3 for entry in grown)
    stages = [entry for _, name, entry in CASES if name == "cuckoo-auto-grown"]
    assert all(entry["params"]["num_stages"] >= 2 for entry in stages)


def test_todays_filters_still_build_the_current_golden_files():
    # Building the golden filters now gives the newest directory's frames
    # byte for byte (when it was written by today's format version).
    newest = max(GOLDEN.glob("v*"), key=lambda p: int(p.name[1:]))
    for name, (filter_, _) in make_golden.golden_filters().items():
        frame = (newest / f"{name}.bkf").read_bytes()
        if frame[8:10] == WRITTEN_VERSION:
            assert filter_.to_bytes() == frame, name


def documented_vector(title_start: str) -> bytes:
    """The hex block after the paragraph starting with ``title_start`` in docs/FORMAT.md."""
    text = (GOLDEN.parent.parent / "docs" / "FORMAT.md").read_text()
    block = text[text.index(title_start) :].split("```")[1]
    return bytes.fromhex("".join(block.split()))


def test_format_md_test_vectors():
    bloom = bloomkit.BloomFilter.from_params(64, 3, seed=0)
    bloom.add("a")
    cuckoo = bloomkit.CuckooFilter(4, fingerprint_bits=8, bucket_size=2)
    cuckoo.add("a")
    for filter_, title in (
        (bloom, "`BloomFilter.from_params(64, 3, seed=0)`"),
        (cuckoo, "`CuckooFilter(4, fingerprint_bits=8"),
    ):
        vector = documented_vector(title)
        assert bloomkit.load(vector) == filter_
        if vector[8:10] == WRITTEN_VERSION:
            assert filter_.to_bytes() == vector
