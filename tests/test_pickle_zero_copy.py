"""Pickle protocol 5 (PEP 574): out-of-band buffers view the filter's own memory; every protocol round-trips.

Bloom, counting and scalable filters pickle as the frame's pieces: small
header/params/checksum bytes and a ``PickleBuffer`` over each large array of
the filter (a Bloom or counting filter's payload, each slice of a scalable
filter), so ``buffer_callback`` gets the filter's memory without a copy and
loading reads each byte once. A chain's slices stay where they are as it
grows; ``clear()``, which frees them, is refused while such buffers exist.
A cuckoo filter's buffers view its fingerprint arrays copy-on-write (its
kicks move fingerprints: tests/test_pickle_live_writer.py): the first write
while they live gives the filter copies, and the buffers keep the snapshot.
Protocols 0-4 are unchanged.
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


def chains():
    # Slices and stages large enough to be viewed (64 KiB and more).
    scalable = bloomkit.ScalableBloomFilter(50_000, 0.01)
    scalable.update(np.arange(200_000, dtype=np.uint64))
    return {"scalable": scalable}


@pytest.mark.parametrize("name", ["scalable"])
def test_out_of_band_buffers_of_a_chain_view_its_stages(name):
    f = chains()[name]
    stages = f.num_slices
    assert stages >= 2
    data = f.to_bytes()
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    assert len(views) == stages and all(v.readonly for v in views)
    # Everything but the viewed arrays travels in the stream: headers and counts.
    assert len(stream) < 2000 and sum(v.nbytes for v in views) > 0.99 * f.nbytes
    starts = [data.index(v.tobytes()) for v in views]
    assert starts == sorted(starts)
    before = [v.tobytes() for v in views]
    f.update(np.arange(10**7, 10**7 + 5_000, dtype=np.uint64))  # into the newest stage, in place
    assert [v.tobytes() for v in views][:-1] == before[:-1] and views[-1].tobytes() != before[-1]


@pytest.mark.parametrize("name", ["scalable"])
def test_clearing_a_chain_while_its_pickle_buffers_live_is_refused(name):
    f = chains()[name]
    data = f.to_bytes()
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    with pytest.raises(BufferError, match="while buffers of a protocol 5 pickle view its memory"):
        f.clear()
    assert f.to_bytes() == data  # nothing changed
    assert pickle.loads(stream, buffers=buffers).to_bytes() == data
    del buffers
    f.clear()
    assert len(f) == 0 and f.nbytes < len(data) / 2


def test_a_bloom_filter_clears_under_live_buffers():
    # One array zeroed in place: nothing is freed, so nothing is refused;
    # the buffers are views, so their load is the filter as it is now.
    f = filters()["bloom-classic"]
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    f.clear()
    assert f.fill_ratio == 0
    assert pickle.loads(stream, buffers=buffers) == f


def test_a_chain_grown_after_the_dump_loads_the_dumps_slices():
    # Growth moves the slice objects, never their arrays: the buffers stay
    # valid (ASan checks it, .ci/asan.sh) and show the then-newest slice's
    # later keys; the slices grown after the dump are not in the pickle.
    f = chains()["scalable"]
    stages = f.num_slices
    keys = np.arange(200_000, dtype=np.uint64)
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    f.update(np.arange(10**7, 10**7 + 400_000, dtype=np.uint64))
    assert f.num_slices > stages
    loaded = pickle.loads(stream, buffers=buffers)
    assert loaded.num_slices == stages and loaded.contains_many(keys).all()


@pytest.mark.parametrize("name", ["bloom-classic", "bloom-split_block", "counting"])
def test_changed_after_the_dump_loads_as_the_views_show_it(name):
    # The frame's checksum is the dump's, the payload the filter's when the
    # buffers are read: a write in between is loaded, not called corrupt.
    f = filters()[name]
    before = f.copy()
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    _, live, *parts = f.__reduce_ex__(5)[1]
    f.update(["changed", "twice"])
    loaded = pickle.loads(stream, buffers=buffers)
    assert loaded == f and loaded != before and loaded.contains_many(["changed", "twice"]).all()
    # The frame's own checksum is still the dump's: the same pieces read as
    # a frame (bytes, or a pickle of an earlier release) report the change.
    assert live == (1,) and len(parts) == 3
    frame = b"".join(bytes(p.raw()) if isinstance(p, pickle.PickleBuffer) else p for p in parts)
    with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
        type(f).from_bytes(frame)
    with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
        type(f)._from_frame_parts(*parts)


def test_a_cuckoo_filters_buffers_view_its_arrays_and_keep_a_snapshot_when_it_is_written():
    # Cuckoo inserts relocate fingerprints between buckets, so a view read
    # mid-insert could miss one: the buffers view the live arrays only until
    # the next write, which first gives the filter copies (copy-on-write).
    f = filters()["cuckoo"]
    stages = len(f._stages)
    assert stages >= 2
    snapshot = f.to_bytes()
    buffers = []
    stream = pickle.dumps(f, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    # One view per stage's array, in frame order; only headers in the stream.
    assert len(views) == stages and all(v.readonly for v in views) and len(stream) < 2000
    assert sum(v.nbytes for v in views) > 0.99 * f.nbytes
    starts = [snapshot.index(v.tobytes()) for v in views]
    assert starts == sorted(starts)
    keys = np.arange(10**7, 10**7 + 50_000, dtype=np.uint64)
    f.update(keys)  # moves fingerprints: the views keep what they showed
    assert [snapshot[s : s + v.nbytes] for s, v in zip(starts, views)] == [v.tobytes() for v in views]
    assert pickle.loads(stream, buffers=buffers).to_bytes() == snapshot
    assert f.contains_many(keys).all() and f.to_bytes() != snapshot
    # A second dump views the filter's new arrays; clear() frees the grown
    # stages, which are handed to the views first.
    second = f.to_bytes()
    buffers2 = []
    stream2 = pickle.dumps(f, protocol=5, buffer_callback=buffers2.append)
    f.clear()
    assert len(f) == 0
    assert pickle.loads(stream2, buffers=buffers2).to_bytes() == second
    assert pickle.loads(stream, buffers=buffers).to_bytes() == snapshot
    del buffers, views, stream
    f.update(keys)  # no view of these arrays is left: written in place
    assert f.contains_many(keys).all() and pickle.loads(stream2, buffers=buffers2).to_bytes() == second


def test_a_cuckoo_filters_pickle_verifies_the_whole_checksum():
    # Its buffers cannot change, so its pickle is the plain frame's pieces,
    # loaded with every check of a frame, the checksum included.
    f = filters()["cuckoo"]
    function, parts = f.__reduce_ex__(5)
    assert function == bloomkit.CuckooFilter._from_frame_parts
    viewed = [i for i, p in enumerate(parts) if isinstance(p, pickle.PickleBuffer)]
    assert viewed
    raw = [bytearray(p.raw()) if isinstance(p, pickle.PickleBuffer) else p for p in parts]
    raw[viewed[0]][len(raw[viewed[0]]) // 2] ^= 0x01  # one fingerprint changed, its slot still occupied
    with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
        bloomkit.CuckooFilter._from_frame_parts(*raw)


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


def live_pickle_args(f):
    check, live, *parts = f.__reduce_ex__(5)[1]
    return check, live, [bytes(p.raw()) if isinstance(p, pickle.PickleBuffer) else p for p in parts]


@pytest.mark.parametrize("name", ["bloom-classic", "counting", "scalable"])
def test_a_live_pickles_fixed_parts_are_checked(name):
    # Everything but the live arrays was copied at the dump and is covered
    # by the pickle's check: a flipped bit there is "corrupt", never loaded.
    f = chains()[name] if name == "scalable" else filters()[name]
    check, live, parts = live_pickle_args(f)
    assert type(f)._from_live_frame_parts(check, live, *parts) == f
    fixed = [i for i in range(len(parts)) if i not in live]
    for index in fixed:
        for offset in (0, 10, 20, len(parts[index]) - 1):  # magic, type tag, payload length, last byte
            damaged = list(parts)
            flipped = bytearray(damaged[index])
            flipped[offset % len(flipped)] ^= 0x10
            damaged[index] = bytes(flipped)
            with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
                type(f)._from_live_frame_parts(check, live, *damaged)
    with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
        type(f)._from_live_frame_parts(check ^ 1, live, *parts)


def test_a_live_pickle_is_validated_like_any_frame():
    # The live marker waives only the frame's checksum over the live arrays:
    # a header that passes the fixed-parts check (an attacker can recompute
    # it, as the frame's checksum) is still checked field by field.
    f = filters()["bloom-classic"]
    check, live, parts = live_pickle_args(f)
    header = bytearray(parts[0])
    header[24 + 8 : 24 + 12] = (65).to_bytes(4, "little")  # num_hashes above 64
    forged = [bytes(header), *parts[1:]]
    recheck = bloomkit._core._fixed_parts_check(forged, live)
    with pytest.raises(ValueError, match="invalid stored parameters"):
        bloomkit.BloomFilter._from_live_frame_parts(recheck, live, *forged)
    short = [parts[0], parts[1][:-8], parts[2]]  # a live array of the wrong length
    with pytest.raises(ValueError, match=r"frame lengths \(params 40, payload \d+\) do not match"):
        bloomkit.BloomFilter._from_live_frame_parts(check, live, *short)
    with pytest.raises(ValueError):
        bloomkit.CuckooFilter._from_live_frame_parts(check, live, *parts)  # another type's frame
    for bad in [(0,), (2,), (1, 1), (5,), (-1,)]:
        with pytest.raises(ValueError, match="live parts must be increasing indices"):
            bloomkit.BloomFilter._from_live_frame_parts(check, bad, *parts)
    with pytest.raises(ValueError, match="live parts need the check of the fixed parts"):
        bloomkit._core.BloomCore(parts=parts, live=live)
    # Any content of the live array the filter could hold loads: the
    # checksum over it is what is waived, nothing else; bits past num_bits
    # are still refused.
    n = len(parts[1])
    scribble = (bytes(range(256)) * (n // 256 + 1))[: n - 8]
    scribbled = [parts[0], scribble + parts[1][-8:], parts[2]]
    assert bloomkit.BloomFilter._from_live_frame_parts(check, live, *scribbled).to_bytes()[64:-8] == scribbled[1]
    with pytest.raises(ValueError, match="bits set beyond num_bits"):
        bloomkit.BloomFilter._from_live_frame_parts(check, live, parts[0], scribble + b"\xff" * 8, parts[2])


def test_a_frozen_filter_pickles_with_its_whole_checksum():
    # A binary fuse filter never changes, so its views cannot either.
    f = bloomkit.BinaryFuseFilter.build(np.arange(100_000, dtype=np.uint64))
    function, args = f.__reduce_ex__(5)
    assert function == bloomkit.BinaryFuseFilter._from_frame_parts
    assert pickle.loads(pickle.dumps(f, protocol=5)) == f


PEAK_SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import json, pickle, sys
    import numpy as np
    import bloomkit

    kind, mib = sys.argv[1], int(sys.argv[2])
    if kind == "bloom":
        f = bloomkit.BloomFilter.from_params(mib * 8 * 2**20, 3)
    elif kind == "scalable":
        # Grown: a full first slice (0.2 MiB) and a second one of about `mib` MiB.
        f = bloomkit.ScalableBloomFilter(100_000, growth=mib * 5)
        f.update(np.arange(110_000, dtype=np.uint64))
        assert f.num_slices == 2
    elif kind == "cuckoo":
        f = bloomkit.CuckooFilter(mib * 2**20 * 4 // 5)  # 10-bit fingerprints
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


@pytest.mark.parametrize(("kind", "mib"), [("bloom", 256), ("scalable", 128), ("cuckoo", 128)])
def test_peak_memory_of_protocol_5_pickling(kind, mib):
    # A filter of `mib` MiB in a fresh process. Extra peak RSS over the
    # filter, as a multiple of its size (tolerance 0.1 for allocator and
    # page noise): out of band the dump takes nothing (total ~1.0x: the
    # filter) and the load builds the new filter only (one copy); in band
    # the dump holds the pickle stream only (total ~2.0x), and the load the
    # bytes object pickle makes of the stream's payload and the new filter.
    if bloomkit._core.available_memory() < (5 * mib + 200) * MIB:
        pytest.skip(f"needs {5 * mib + 200} MiB of available memory")
    result = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, kind, str(mib)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    ratios = json.loads(result.stdout.strip().splitlines()[-1])
    print(kind, ratios)
    assert ratios["dump_out_of_band"] < 0.1, ratios
    assert ratios["load_out_of_band"] < 1.1, ratios
    assert ratios["dump_in_band"] < 1.1, ratios
    assert ratios["load_in_band"] < 2.1, ratios
