"""Pickle protocol 5 (PEP 574): out-of-band buffers view the filter's own memory; every protocol round-trips.

Bloom and counting filters (one array that never moves while the object
lives) pickle as the frame's pieces: small header/params/checksum bytes and
a ``PickleBuffer`` over the filter's payload, so ``buffer_callback`` gets
the filter's memory without a copy and loading reads each byte once.
Scalable and cuckoo filters (whose stages can be freed by ``clear``) send a
``PickleBuffer`` of ``to_bytes()``. Protocols 0-4 are unchanged.
"""

import json
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bloomkit
from support import PEAK_RSS_HELPERS

MIB = 2**20


def filters():
    out = {}
    for layout in ("classic", "blocked512", "split_block"):
        f = bloomkit.BloomFilter(200_000, 0.01, layout=layout, seed=4)
        f.update(np.arange(50_000, dtype=np.uint64))
        out[f"bloom-{layout}"] = f
    counting = bloomkit.CountingBloomFilter(100_000, 0.01)
    counting.update(range(30_000))
    out["counting"] = counting
    scalable = bloomkit.ScalableBloomFilter(1000, 0.01)
    scalable.update(range(20_000))
    out["scalable"] = scalable
    cuckoo = bloomkit.CuckooFilter(100_000, auto_grow=True)
    cuckoo.update(range(150_000))
    out["cuckoo"] = cuckoo
    small = bloomkit.BloomFilter(100, 0.01)  # payload under the view threshold: all bytes
    small.add("x")
    out["bloom-small"] = small
    return out


@pytest.mark.parametrize("name", list(filters()))
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_type_round_trips_byte_exactly(name, protocol):
    f = filters()[name]
    data = f.to_bytes()
    copies = [pickle.loads(pickle.dumps(f, protocol=protocol))]
    if protocol >= 5:
        buffers = []
        stream = pickle.dumps(f, protocol=protocol, buffer_callback=buffers.append)
        copies.append(pickle.loads(stream, buffers=buffers))
        copies.append(pickle.loads(stream, buffers=[bytearray(b.raw()) for b in buffers]))
    for g in copies:
        assert type(g) is type(f) and g == f and g.to_bytes() == data


@pytest.mark.parametrize("name", list(filters()))
def test_protocols_up_to_4_pickle_the_frame_as_before(name):
    f = filters()[name]
    for protocol in range(5):
        assert f.__reduce_ex__(protocol) == (type(f).from_bytes, (f.to_bytes(),))


@pytest.mark.parametrize("name", ["bloom-split_block", "counting"])
def test_out_of_band_buffer_is_a_view_of_the_filters_memory(name):
    f = filters()[name]
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(stream) < 400
    view = buffers[0].raw()
    assert view.readonly and view.nbytes == f.nbytes
    data = f.to_bytes()
    start = data.index(view.tobytes())  # the payload, in place in the frame
    assert start % 64 == 0 and start + view.nbytes == len(data) - 8
    before = view.tobytes()
    f.update(np.arange(10**6, 10**6 + 20_000, dtype=np.uint64))
    # No copy was taken: the buffer shows the filter's new content.
    assert view.tobytes() != before and view.tobytes() == f.to_bytes()[start:-8]
    del f  # the view keeps the filter's memory alive
    assert len(view.tobytes()) == view.nbytes


def test_changed_after_the_dump_is_reported_not_misread():
    # The documented hazard of a zero-copy pickle: the frame's checksum is
    # the dump's, the payload the filter's at load time.
    f = filters()["bloom-classic"]
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    f.add("changed")
    with pytest.raises(ValueError, match="checksum"):
        pickle.loads(stream, buffers=buffers)


def test_frame_parts_are_validated_like_a_frame():
    f = filters()["bloom-classic"]
    parts = f._frame_parts()
    assert b"".join(bytes(p) for p in parts) == f.to_bytes()
    with pytest.raises(ValueError, match="checksum"):
        bloomkit.BloomFilter._from_frame_parts(parts[0], bytes(len(parts[1])), parts[2])
    with pytest.raises(ValueError):
        bloomkit.BloomFilter._from_frame_parts(parts[0], parts[2])
    with pytest.raises(TypeError, match="expected a bytes-like object, got 'int'"):
        bloomkit.BloomFilter._from_frame_parts(parts[0], 5, parts[2])
    with pytest.raises(ValueError):
        bloomkit.CuckooFilter._from_frame_parts(*parts)  # another type's frame


PEAK_SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import json, pickle, sys
    import numpy as np
    import bloomkit

    f = bloomkit.BloomFilter.from_params(int(sys.argv[1]) * 8 * 2**20, 3)
    f.update(np.arange(100_000, dtype=np.uint64))
    size = f.nbytes

    def measure(operation):
        return peak_growth(operation, size)

    def out_of_band():
        buffers = []
        return pickle.dumps(f, protocol=5, buffer_callback=buffers.append), buffers

    ratios = {}
    ratios["dump_out_of_band"], (stream, buffers) = measure(out_of_band)
    ratios["load_out_of_band"], copy = measure(lambda: pickle.loads(stream, buffers=buffers))
    assert copy == f
    del copy, stream, buffers
    ratios["dump_in_band"], stream = measure(lambda: pickle.dumps(f, protocol=5))
    ratios["load_in_band"], copy = measure(lambda: pickle.loads(stream))
    assert copy == f
    print(json.dumps(ratios))
    """
)


def test_peak_memory_of_protocol_5_pickling():
    # A 256 MiB filter in a fresh process. Extra peak RSS over the filter,
    # as a multiple of its size (tolerance 0.1 for allocator and page noise):
    # out of band the dump takes nothing (total ~1.0x: the filter) and the
    # load builds the new filter only (one copy); in band the dump holds the
    # pickle stream only (total ~2.0x).
    if bloomkit._core.available_memory() < 1200 * MIB:
        pytest.skip("needs 1.2 GiB of available memory")
    result = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, "256"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ratios = json.loads(result.stdout.strip().splitlines()[-1])
    print(ratios)
    assert ratios["dump_out_of_band"] < 0.1, ratios
    assert ratios["load_out_of_band"] < 1.1, ratios
    assert ratios["dump_in_band"] < 1.1, ratios
    assert ratios["load_in_band"] < 2.1, ratios
