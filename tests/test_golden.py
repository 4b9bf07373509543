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
from bloomkit import _types

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
    secret = bytes.fromhex(entry["secret_key"]) if "secret_key" in entry else None
    loaded = bloomkit.load(path, secret_key=secret)
    assert type(loaded).__name__ == entry["type"]
    assert loaded.keyed == (secret is not None)
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
    v2 = {name for version, name, _ in CASES if version == "v2"}
    assert {f"bloom-{layout}" for layout in make_golden.LAYOUTS} <= v2
    assert {f"scalable-grown-{layout}" for layout in make_golden.LAYOUTS} <= v2
    assert {"cuckoo-auto-grown", "keyed-bloom-split_block", "keyed-cuckoo-auto-grown"} <= v2
    grown = [entry for _, name, entry in CASES if name.startswith("scalable-grown")]
    assert all(entry["params"]["num_slices"] >= 3 for entry in grown)
    stages = [entry for _, name, entry in CASES if name.endswith("cuckoo-auto-grown")]
    assert all(entry["params"]["num_stages"] >= 2 for entry in stages)


def test_every_registered_type_and_variant_has_a_golden_file():
    # A newly registered type fails here until its files are written:
    # python tests/golden/make_golden.py tests/golden/vN --add-missing
    newest = max(GOLDEN.glob("v*"), key=lambda p: int(p.name[1:]))
    generic = set(make_golden.generic_filters())
    assert generic == {
        make_golden.generic_name(row, variant) for row in _types.FRAMED for variant in row.variants or (None,)
    }
    have = {path.stem for path in newest.glob("*.bkf")}
    assert sorted(generic - have) == []
    assert sorted(generic - set(TO_BYTES_SHA256)) == []


def test_todays_filters_still_build_the_current_golden_files():
    # Building the golden filters now gives the newest directory's frames
    # byte for byte (when it was written by today's format version).
    # Except frames holding a cuckoo victim: they were written when a failed
    # eviction walk parked its fingerprint there (and the next key opened a
    # stage); today the walk is undone and the refused key opens the stage
    # itself (docs/cuckoo.md), so the same keys build other, equally valid
    # stages. Those frames still load and answer as recorded (above).
    newest = max(GOLDEN.glob("v*"), key=lambda p: int(p.name[1:]))
    parked = set()
    for name, (filter_, _) in make_golden.golden_filters().items():
        frame = (newest / f"{name}.bkf").read_bytes()
        if frame[8:10] != WRITTEN_VERSION:
            continue
        if isinstance(filter_, bloomkit.CuckooFilter):
            secret = make_golden.SECRETS.get(name)
            if any(victim for *_, victim in bloomkit.load(frame, secret_key=secret)._stages):
                parked.add(name)
                continue
        assert filter_.to_bytes() == frame, name
    assert parked == {"cuckoo-auto-grown", "keyed-cuckoo-auto-grown"}


# SHA-256 of to_bytes() of each golden filter built today from its fixed keys,
# seeds and layout (tests/golden/make_golden.py), in
# tests/golden/to_bytes_sha256.json. make_golden.py only appends to that file
# (a new type's digests) and never changes a digest in it, so regenerating
# the golden files cannot hide a change: any change to hashing, probe
# positions, layouts or framing fails this test, and needs a new format
# version (docs/FORMAT.md, compatibility policy).
# The two auto-grown cuckoo digests changed once without one: an insert
# policy change (failed walks undone, the refused key opens the next stage),
# not a format change; their v2 golden files still load and answer as recorded.
TO_BYTES_SHA256 = json.loads((GOLDEN / "to_bytes_sha256.json").read_text())


def test_to_bytes_digests_are_pinned_for_every_type_and_layout():
    built = {
        name: hashlib.sha256(filter_.to_bytes()).hexdigest()
        for name, (filter_, _) in make_golden.golden_filters().items()
    }
    assert built == TO_BYTES_SHA256


def test_make_golden_appends_a_new_digest_and_never_changes_a_pinned_one(tmp_path):
    pins = tmp_path / "to_bytes_sha256.json"
    changed = dict(TO_BYTES_SHA256, **{"generic-cuckoo": "0" * 64})  # as if its bytes had changed
    del changed["generic-binary_fuse-8"]  # as if the type were new
    pins.write_text(json.dumps(changed))
    assert make_golden.pin_new_digests(pins) == ["generic-binary_fuse-8"]
    written = json.loads(pins.read_text())
    assert written == dict(changed, **{"generic-binary_fuse-8": TO_BYTES_SHA256["generic-binary_fuse-8"]})
    assert make_golden.pin_new_digests(pins) == [] and json.loads(pins.read_text()) == written


def documented_vector(title_start: str) -> bytes:
    """The hex block after the paragraph starting with ``title_start`` in docs/FORMAT.md."""
    text = (GOLDEN.parent.parent / "docs" / "FORMAT.md").read_text()
    block = text[text.index(title_start) :].split("```")[1].split("\n", 1)[1]  # after the fence's "text"
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
