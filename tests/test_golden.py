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
# seeds and layout (tests/golden/make_golden.py). Written here, not read from
# the manifest, so regenerating the golden files cannot hide a change: any
# change to hashing, probe positions, layouts or framing fails this test,
# and needs a new format version (docs/FORMAT.md, compatibility policy).
# The two auto-grown cuckoo digests changed once without one: an insert
# policy change (failed walks undone, the refused key opens the next stage),
# not a format change; their v2 golden files still load and answer as recorded.
TO_BYTES_SHA256 = {
    "counting-16": "cc31a7c55fc420b5bd00b95084639f043e8f7dfa8becb5d9820034583fd5445f",
    "counting-4": "14ff30f47d204bd1a93eede444fb8c3c38e1ccf4eb888120b801f44ad0271959",
    "counting-8": "a6bbb94d3dc98ca72d63b904efa939fe915549becc8e0522574d7487cbcd87e5",
    "cuckoo": "2197de959cddfdaffd0fcc0214137eadeac6a42192ce42225095205bf014632d",
    "cuckoo-auto-grown": "c1ed8ef35c72dfbfc1d039cd9e40d6a6d5b6855d0b3405b4cd1962261ef52513",
    # One per registered type and variant (make_golden.generic_filters); the
    # three Bloom digests are those of bloom-<layout>, the same filters.
    "generic-bloom-blocked512": "1620e3dca28564e4dac134c20bc91f6b021e8d2c5fe1968510ecccc8eff74ee2",
    "generic-bloom-classic": "2500dea29fe0994452e94fa99b4d40147aa4170428971d3b6b57d2d5a15e2284",
    "generic-bloom-split_block": "df8665a95c20eb02e62c1140f413ab8f179c2a72e2b71c5a926055dc223c8777",
    "generic-counting": "ad4dab63808d026f5cbd36d68f0449cef543a47b8ec1e4bcf373608b15551e67",
    "generic-cuckoo": "ea1d4d28bc6f6a2f23ec83a9988e4fb2197a5b3619e8b64ff1cbfd2a42595b5f",
    "generic-binary_fuse-16": "8c54a986f322b46cbf9f07498a4e446f16c4953446aff50ecb88f1d5fbc94af3",
    "generic-binary_fuse-8": "fb85126aeb48ac1a352a8b6fa524e3eb63fa2776353628f04e49d7b752459f24",
    "generic-scalable-blocked512": "8b1b1415fd8f8d82cdae1ef1d3bf0948e87ca0ba6dfdb44c43b94bd4ac42dbec",
    "generic-scalable-classic": "acf84e2107d5aea980a689d4989c7622fbee4534adc7639d736d0d865973ffb6",
    "generic-scalable-split_block": "f97046a207557bf259068d125a4dd8d36c4e64f81a531592bc31c418131bdc92",
    "keyed-bloom-split_block": "12021d19165a07131897eec30905132b1cb6f7194f03de5c1a5857f7b5c296be",
    "keyed-cuckoo-auto-grown": "ad6efdfdb977e6b9b1f2368d5d8c13030b3e20328e649773806da13e4ce7584f",
    "scalable-grown-blocked512": "ace129f289406fb067f4075fa61d2fd4d3f1c31ff206af92acccd82b95d8b0cf",
    "scalable-grown-classic": "d045519f39271a6baa1bea6dbf7d2bf3b3f10c4329a82c329fbb737aafbc42dc",
    "scalable-grown-split_block": "9faa735d59bb71e757e534f05caf4134547159c09e92a197a81b1d40c1f24d4e",
    "generic-rotating-blocked512": "a2ce9e2dc9dfdf852261e0ebd8726d2dde663dfbc6455d8ce7182fb5ed81e726",
    "generic-rotating-classic": "e09e5db04e8efb1fe6ff11b3f0b866ef7f81dc1d5812ab1c15ad5bf0402987b6",
    "generic-rotating-split_block": "cc8654e84a9395ba1df272e7d773b3bac6fd3a3903570277cc8561c4272b8507",
}


def test_to_bytes_digests_are_pinned_for_every_type_and_layout():
    built = {
        name: hashlib.sha256(filter_.to_bytes()).hexdigest()
        for name, (filter_, _) in make_golden.golden_filters().items()
    }
    assert built == TO_BYTES_SHA256


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
