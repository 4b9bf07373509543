"""Persistence of a 1 GiB filter of every type needs about one filter's worth of extra memory or less.

Each type runs in its own subprocess on a freshly built filter of about
1 GiB; every operation's extra memory is the process's peak RSS (VmHWM,
reset before the operation) minus its RSS just before it, as a multiple of
the filter's ``nbytes``. Limits (docs/RELIABILITY.md, "Memory bounds"):

* ``save``: streamed from the filter's memory to the file with the checksum
  computed on the way, so only a small buffer (< 5 % of the filter);
* ``to_bytes``: the returned bytes object itself (1x), written in place;
* ``pickle``: ``pickle.dumps(protocol=5, buffer_callback=...)`` passes views
  of the filter's arrays out of band and copies nothing (< 5 %; a cuckoo
  filter's views are copy-on-write: docs/decisions.md);
* ``unpickle``: ``pickle.loads(stream, buffers=...)`` of those buffers (the
  caller's) builds the filter, nothing else (1x);
* ``from_bytes``: the caller's bytes are read straight into the new filter (1x);
* ``load``: the file is read straight into the filter's storage with the
  checksum computed as it goes (1x: frame_reader.hpp).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from support import PEAK_RSS_HELPERS

GIB = 2**30

SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import json, pickle, sys
    import numpy as np
    import bloomkit

    kind, path = sys.argv[1], sys.argv[2]
    if kind == "bloom":
        f = bloomkit.BloomFilter.from_params(8 * 2**30 + 64, 3)  # 1 GiB of bits
        f.update(np.arange(1_000_000, dtype=np.uint64))
    elif kind == "counting":
        f = bloomkit.CountingBloomFilter(230_000_000)  # 4-bit counters, 1.03 GiB
        f.update(np.arange(1_000_000, dtype=np.uint64))
    elif kind == "scalable":
        # Grown: a full first slice (1.9 MiB) and a ~1 GiB second one.
        f = bloomkit.ScalableBloomFilter(1_000_000, growth=600)
        f.update(np.arange(1_100_000, dtype=np.uint64))  # some are false positives, not new
        assert f.num_slices == 2
    elif kind == "cuckoo":
        f = bloomkit.CuckooFilter(800_000_000)  # ~1 GiB of 10-bit fingerprints
        f.update(np.arange(1_000_000, dtype=np.uint64))
    size = f.nbytes

    def measure(operation):
        return peak_growth(operation, size)

    ratios = {}
    ratios["save"], _ = measure(lambda: f.save(path))
    ratios["to_bytes"], frame = measure(f.to_bytes)
    ratios["from_bytes"], copy = measure(lambda: type(f).from_bytes(frame))
    assert copy == f
    del copy, frame

    def dumps():
        buffers = []
        stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
        assert len(buffers) == (2 if kind == "scalable" else 1) and len(stream) < 1000, (len(buffers), len(stream))
        return stream, buffers

    ratios["pickle"], (stream, buffers) = measure(dumps)
    ratios["unpickle"], copy = measure(lambda: pickle.loads(stream, buffers=buffers))
    assert copy == f
    del copy, stream, buffers
    ratios["load"], copy = measure(lambda: bloomkit.load(path))
    assert copy == f
    print(json.dumps({"nbytes": size, "ratios": ratios}))
    """
)

LIMITS = {"save": 0.05, "to_bytes": 1.1, "from_bytes": 1.1, "pickle": 0.05, "unpickle": 1.1, "load": 1.1}


def extra_memory(kind: str, path) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, str(path)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["bloom", "counting", "scalable", "cuckoo"])
def test_persistence_of_a_1_gib_filter_is_memory_lean(tmp_path, kind):
    import bloomkit

    # The filter, one more filter's worth for the operation, and headroom.
    if bloomkit._core.available_memory() < 4 * GIB:
        pytest.fail("this test needs 4 GiB of available memory")
    path = tmp_path / f"{kind}.bkf"
    measured = extra_memory(kind, path)
    print(kind, measured)
    assert measured["nbytes"] >= 0.85 * GIB, measured
    assert path.stat().st_size > measured["nbytes"], measured
    over = {op: ratio for op, ratio in measured["ratios"].items() if ratio >= LIMITS[op]}
    assert not over, f"{kind}: over the limits {LIMITS}: {measured}"
