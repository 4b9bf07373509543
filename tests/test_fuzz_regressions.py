"""Replay every input the loader fuzzer keeps (fuzz/regressions/) and its seed corpus.

Each input either loads, re-serialises to exactly itself and answers
lookups, or raises ValueError / MemoryError: the property the fuzzer
(fuzz/load_fuzzer.cpp, .ci/fuzz.sh) checks on the C++ deserializers, here
through every Python entry point.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

import bloomkit
from bloomkit import _types

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))
import make_corpus  # noqa: E402  (found through the sys.path entry above)

REGRESSIONS = sorted((FUZZ / "regressions").glob("*"))


def check_input(data: bytes) -> None:
    try:
        loaded = bloomkit.load(data)
    except (ValueError, MemoryError):
        return
    written_version = bloomkit.BloomFilter(10).to_bytes()[8:10]
    if data[8:10] == written_version:
        assert loaded.to_bytes() == data
    else:  # an older, still loadable version: re-saved in today's
        assert bloomkit.load(loaded.to_bytes()) == loaded
    assert type(loaded).from_bytes(data) == loaded
    assert pickle.loads(pickle.dumps(loaded)) == loaded
    for key in range(32):
        _ = key in loaded
    repr(loaded)


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.name)
def test_kept_fuzzer_input(path):
    check_input(path.read_bytes())


def test_regressions_are_kept():
    assert len(REGRESSIONS) >= 1


@pytest.mark.parametrize("name", sorted(make_corpus.seed_filters()))
def test_seed_corpus_frame_round_trips(name, tmp_path):
    filter_ = make_corpus.seed_filters()[name]
    data = make_corpus.frame_of(filter_)
    if not _types.row_of(type(filter_)).framed:  # another system's bytes (Spark's): read by the class
        assert type(filter_).from_bytes(data) == filter_
        assert type(filter_).from_bytes(data).to_bytes() == data
        return
    check_input(data)
    # Keyed seeds (make_corpus.SECRET) load only with their key.
    secret = make_corpus.SECRET if filter_.keyed else None
    assert bloomkit.load(data, secret_key=secret) == filter_
    path = tmp_path / "seed.bkf"
    filter_.save(path)
    assert bloomkit.load(path, secret_key=secret) == filter_


def test_judged_seed_frames_get_their_own_answers():
    frames = make_corpus.judged_frames()
    plain = make_corpus.seed_filters()["bloom-40"]
    # Marked open for writing, checksum current: loads as the filter, saved unmarked.
    loaded = bloomkit.load(frames["bloom-open-for-writing"])
    assert loaded == plain and loaded.to_bytes() == plain.to_bytes()
    with pytest.raises(ValueError, match="not closed cleanly") as stale:
        bloomkit.load(frames["bloom-open-for-writing-stale"])
    assert "corrupt" not in str(stale.value)
    with pytest.raises(ValueError, match="num_slices 1025 exceeds the limit of 1024 slices"):
        bloomkit.load(frames["scalable-too-many-slices"])
