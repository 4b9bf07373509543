"""Every operation of every filter type from several threads at once (docs/RELIABILITY.md).

Batches run without the GIL under the filter's shared_mutex; single-key
calls and metadata reads take the same lock when a batch is in flight. So
interleaving any operations must give exactly the result of some sequential
order: nothing lost, counts exact where the type counts exactly, and
serialised snapshots that always load.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import bloomkit
from bloomkit import _types
from support import ALL_TYPES, growable, run_threads


# Protocol 5 (the default from CPython 3.14) pickles views of the filter's
# arrays that the pickler reads after the reduction, while writers run.
@pytest.mark.parametrize("protocol", sorted({pickle.DEFAULT_PROTOCOL, 5}), ids=lambda p: f"protocol{p}")
@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_every_operation_concurrently(cls, protocol):
    row = _types.row_of(cls)
    chunks = [np.arange(i * 40_000, (i + 1) * 40_000, dtype=np.uint64) for i in range(4)]
    scalar_keys = [f"s{i}" for i in range(5_000)]
    doomed = [f"d{i}" for i in range(2_000)]
    snapshots = []
    if not row.mutable:
        # A frozen type is built once from all its keys; concurrently, its
        # batches and single-key calls are lookups and every write is refused.
        string_keys = scalar_keys + doomed
        f = row.build(np.concatenate(chunks).tolist() + string_keys, 4 * 40_000 + len(string_keys))

        def batch_reader(chunk):
            return lambda: [_assert_all(f.contains_many(chunk)) for _ in range(5)]

        def scalar_reader():
            assert all(f.contains(key) for key in scalar_keys)

        run_threads(
            [batch_reader(c) for c in chunks]
            + [scalar_reader, lambda: _refuses_writes(f, doomed)]
            + [lambda: _read(f, chunks[0], snapshots, protocol)] * 2
        )
        for chunk in chunks:
            assert f.contains_many(chunk).all()
        assert f.contains_many(scalar_keys).all() and f.contains_many(doomed).all()
        if row.exact_count:
            assert len(f) == 4 * 40_000 + len(string_keys)
        for snapshot in snapshots:
            loaded = pickle.loads(snapshot) if snapshot[:1] == b"\x80" else cls.from_bytes(snapshot)
            assert type(loaded) is cls and loaded == f
        return
    f = growable(cls, 300_000, first_slice=20_000)
    removable = hasattr(f, "remove_many")

    def batch_writer(chunk):
        def run():
            for j in range(0, len(chunk), 5_000):
                f.add_many(chunk[j : j + 5_000]) if j % 10_000 else f.update(chunk[j : j + 5_000])

        return run

    def scalar_writer():
        for key in scalar_keys:
            f.add(key)

    def add_then_remove():
        f.update(doomed)
        if removable:
            for key in doomed[:1_000]:
                f.remove(key)
            f.remove_many(doomed[1_000:])

    def reader():
        for _ in range(10):
            f.contains_many(chunks[0])
            _ = "s1" in f, f.contains("s2"), len(f), f.nbytes, repr(f), f.estimated_fpr()
            snapshots.append(f.to_bytes())
            snapshots.append(pickle.dumps(f, protocol=protocol))
            f.copy()

    run_threads([batch_writer(c) for c in chunks] + [scalar_writer, add_then_remove, reader, reader])
    for chunk in chunks:
        assert f.contains_many(chunk).all()
    assert f.contains_many(scalar_keys).all()
    if removable:
        if cls is bloomkit.CuckooFilter:
            assert len(f) == 4 * 40_000 + len(scalar_keys)
        assert f.contains_many(doomed).mean() < 0.05  # removed (false positives only)
    else:
        assert f.contains_many(doomed).all()
    for snapshot in snapshots:
        loaded = pickle.loads(snapshot) if snapshot[:1] == b"\x80" else cls.from_bytes(snapshot)
        assert type(loaded) is cls


def _assert_all(found) -> None:
    assert found.all()


def _refuses_writes(f, keys) -> None:
    for write in (lambda: f.add(keys[0]), lambda: f.update(keys), lambda: f.add_many(keys), f.clear):
        with pytest.raises(TypeError, match="build"):
            write()


def _read(f, keys, snapshots, protocol) -> None:
    for _ in range(10):
        assert f.contains_many(keys).all()
        _ = "s1" in f, f.contains("s2"), len(f), f.nbytes, repr(f), f.estimated_fpr()
        snapshots.append(f.to_bytes())
        snapshots.append(pickle.dumps(f, protocol=protocol))
        assert f.copy() == f


def test_bloom_and_counting_results_equal_a_sequential_build():
    # Bloom and counting filters are order-independent, so any interleaving
    # must give exactly the bytes of a sequential build.
    for cls in (bloomkit.BloomFilter, bloomkit.CountingBloomFilter):
        f = cls(200_000, 0.01)
        chunks = [np.arange(i * 30_000, (i + 1) * 30_000, dtype=np.int64) for i in range(4)]
        run_threads([lambda c=c, f=f: [f.update(c[j : j + 3_000]) for j in range(0, len(c), 3_000)] for c in chunks])
        reference = cls(200_000, 0.01)
        for chunk in chunks:
            reference.update(chunk)
        assert f.to_bytes() == reference.to_bytes()
