"""Batches release the GIL; concurrent use of one filter must still lose nothing."""


import numpy as np
from bloomkit import BloomFilter
from support import run_threads


def test_concurrent_batch_and_scalar_inserts_lose_nothing():
    f = BloomFilter(2_000_000, 0.01)
    chunks = [np.arange(i * 200_000, (i + 1) * 200_000, dtype=np.uint64) for i in range(6)]
    scalar_keys = [f"s{i}" for i in range(20_000)]

    def batch_writer(chunk):
        return lambda: [f.update(chunk[j : j + 10_000]) for j in range(0, len(chunk), 10_000)]

    def scalar_writer():
        for key in scalar_keys:
            f.add(key)

    def reader():
        for _ in range(20):
            f.contains_many(chunks[0])
            repr(f)

    run_threads([batch_writer(c) for c in chunks] + [scalar_writer, reader])
    for chunk in chunks:
        assert f.contains_many(chunk).all()
    assert f.contains_many(scalar_keys).all()
    reference = BloomFilter(2_000_000, 0.01)
    for chunk in chunks:
        reference.update(chunk)
    reference.update(scalar_keys)
    assert f == reference


def test_union_while_another_thread_inserts():
    a = BloomFilter(500_000, 0.01)
    b = BloomFilter(500_000, 0.01)
    b.update(np.arange(100_000, dtype=np.int64))
    keys = np.arange(100_000, 400_000, dtype=np.int64)

    def writer():
        for j in range(0, len(keys), 5000):
            a.update(keys[j : j + 5000])

    def unioner():
        for _ in range(50):
            a.__ior__(b)

    run_threads([writer, unioner])
    assert a.contains_many(keys).all()
    assert a.contains_many(np.arange(100_000, dtype=np.int64)).all()
