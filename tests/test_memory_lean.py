"""Persistence of a 1 GiB filter needs about one filter's worth of extra memory or less.

Each operation runs in its own subprocess on a freshly built 1 GiB Bloom
filter; the extra memory is the process's peak RSS (VmHWM) minus its RSS
just before the operation. Limits (docs/RELIABILITY.md):

* ``save``: streamed from the filter's memory to the file with the checksum
  computed on the way, so only a small buffer (< 5 % of the filter);
* ``to_bytes``: the returned bytes object itself (1x), written in place;
* ``pickle.dumps(protocol=5, buffer_callback=...)``: the frame once (1x),
  passed out of band;
* ``load`` of a BloomFilter file: the file read once into one block whose
  payload becomes the filter's bits (1x, cpp/bindings/lean_load.cpp).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from support import PEAK_RSS_HELPERS

GIB = 2**30

SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import os, pickle, sys
    import numpy as np
    import bloomkit

    operation, path = sys.argv[1], sys.argv[2]
    num_bits = 8 * 2**30 + 64  # 1 GiB of bits
    if operation == "load":
        before = rss("VmRSS:"); reset_peak()
        f = bloomkit.load(path)
    else:
        f = bloomkit.BloomFilter.from_params(num_bits, 3)
        f.update(np.arange(1_000_000, dtype=np.uint64))
        before = rss("VmRSS:"); reset_peak()
        if operation == "save":
            f.save(path)
        elif operation == "to_bytes":
            frame = f.to_bytes()
        elif operation == "pickle":
            buffers = []
            stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
            assert len(buffers) == 1 and len(stream) < 1000
    print((rss("VmHWM:") - before) / f.nbytes)
    """
)


def extra_memory(operation: str, path) -> float:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, operation, str(path)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return float(result.stdout.strip())


@pytest.mark.statistical
def test_persistence_of_a_1_gib_filter_is_memory_lean(tmp_path):
    import bloomkit

    if bloomkit._core.available_memory() < 4 * GIB:
        pytest.fail("this test needs 4 GiB of available memory")
    path = tmp_path / "big.bkf"
    ratios = {"save": extra_memory("save", path)}
    assert path.stat().st_size > GIB
    ratios["load"] = extra_memory("load", path)
    ratios["to_bytes"] = extra_memory("to_bytes", path)
    ratios["pickle"] = extra_memory("pickle", path)
    print(ratios)
    assert ratios["save"] < 0.05, ratios
    assert ratios["to_bytes"] < 1.1, ratios
    assert ratios["pickle"] < 1.1, ratios
    assert ratios["load"] < 1.1, ratios
