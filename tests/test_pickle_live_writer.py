"""Protocol 5 pickles of a filter another thread is writing load, and lose nothing.

A zero-copy pickle (tests/test_pickle_zero_copy.py) records the frame's
small pieces when the filter is reduced and reads its arrays later: the
pickler copies them into the stream, or the consumer of out-of-band buffers
reads them at load. A writer in between changes the arrays but not the
pieces. Every load must still succeed (no false "corrupt"), and every key
the writer had acknowledged before ``dumps`` began must be in the loaded
filter (docs/RELIABILITY.md, "Pickling a filter that is being written").
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

import bloomkit

SECONDS = 1.0  # per case: tens of dumps and loads against a live writer
BATCH = 500


def filters():
    out = {}
    for layout in ("classic", "blocked512", "split_block"):
        out[f"bloom-{layout}"] = lambda layout=layout: bloomkit.BloomFilter(2_000_000, 0.01, layout=layout)
    out["counting"] = lambda: bloomkit.CountingBloomFilter(1_000_000, 0.01)
    # Small first slice / stage: the chain grows while it is pickled, and a
    # cuckoo stage near full relocates fingerprints on most inserts.
    out["scalable"] = lambda: bloomkit.ScalableBloomFilter(100_000, 0.01)
    out["cuckoo"] = lambda: bloomkit.CuckooFilter(100_000, 0.01, auto_grow=True)
    return out


def round_trip(f, band):
    if band == "in-band":
        return pickle.loads(pickle.dumps(f, protocol=5))
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    time.sleep(0)  # let the writer run between the dump and the load that reads the buffers
    return pickle.loads(stream, buffers=buffers)


def pickle_under_writer(f, band, seconds=SECONDS):
    """Pickle and load ``f`` while a thread adds keys 0, 1, 2, ... in batches; returns (loads, keys added).

    Each loaded copy must hold every key acknowledged before its dump began.
    """
    acknowledged = 0  # keys [0, acknowledged) are in f
    stop = threading.Event()
    errors = []

    def writer():
        nonlocal acknowledged
        try:
            start = 0
            while not stop.is_set():
                f.update(np.arange(start, start + BATCH, dtype=np.uint64))
                start += BATCH
                acknowledged = start
                time.sleep(0.0002)  # a steady stream of batches, not one long one
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    loads = 0
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            before = acknowledged
            copy = round_trip(f, band)
            missing = np.flatnonzero(~copy.contains_many(np.arange(before, dtype=np.uint64)))
            assert missing.size == 0, f"{missing.size} acknowledged keys lost, first {missing[:5]}"
            loads += 1
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    return loads, acknowledged


@pytest.mark.parametrize("band", ["in-band", "out-of-band"])
@pytest.mark.parametrize("name", list(filters()))
def test_protocol_5_pickles_load_while_a_writer_adds(name, band):
    f = filters()[name]()
    loads, added = pickle_under_writer(f, band)
    # The loop really ran against a moving filter: several loads, many batches.
    assert loads >= 5 and added >= 20 * BATCH, (loads, added)
    # Once the writer has stopped, the pickle is the filter exactly.
    assert round_trip(f, band) == f
