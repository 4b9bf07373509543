"""A file mapped "r+" shared by processes: exact test-and-set, pickling as the file.

Exactness: four processes add the same keys to one file at the same moment
(a barrier), in every layout, as one batch, as many small batches and one
key at a time; of all their "new" answers there must be exactly one per
distinct key. A sequential in-memory build over the same keys is the
reference (the filters are sized so that it reports every key new, so the
count does not depend on the interleaving). Pickling: a mapped filter sent
to ``multiprocessing.Pool`` workers (fork and spawn) is the file, so their
adds land in it.
"""

import fcntl
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from bloomkit import BloomFilter
from support import OFFER_WAYS, count_new_answers

LAYOUTS = ["classic", "blocked512", "split_block"]
WORKERS = 4
ROUNDS = 4
KEYS_PER_ROUND = 20_000
LOCK_OFFSET = 2**62  # the byte FileWriterLock locks (writer_lock.hpp, docs/FORMAT.md)


def keys(start, count):
    return [f"key-{i}" for i in range(start, start + count)]


def _contend(f, batch, how, barrier, results):
    barrier.wait(60)
    results.put(count_new_answers(f, batch, how))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_processes_adding_the_same_keys_get_one_new_answer_per_key(tmp_path, layout):
    ctx = multiprocessing.get_context("fork")  # the children use the parent's filter object after fork
    for round_ in range(ROUNDS):
        batch = keys(round_ * KEYS_PER_ROUND, KEYS_PER_ROUND)
        reference = BloomFilter(10 * KEYS_PER_ROUND, 1e-6, layout=layout)
        distinct = int((~reference.add_many(batch)).sum())
        assert distinct == KEYS_PER_ROUND  # no false positive: the count is interleaving-independent
        path = tmp_path / f"round{round_}.bk"
        with BloomFilter.open(path, "w+", capacity=10 * KEYS_PER_ROUND, error_rate=1e-6, layout=layout) as f:
            barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
            procs = [
                ctx.Process(target=_contend, args=(f, batch, OFFER_WAYS[(i + round_) % WORKERS], barrier, results))
                for i in range(WORKERS)
            ]
            for p in procs:
                p.start()
            news = [results.get(timeout=120) for _ in procs]
            for p in procs:
                p.join(60)
                assert p.exitcode == 0
            assert sum(news) == distinct, (round_, news)
            assert f == reference


def _new_in_worker(task):
    f, start, count = task
    return int((~f.add_many(keys(start, count))).sum())


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.parametrize("mode", ["w+", "r+"])
def test_pool_workers_add_into_the_file_not_into_a_copy(tmp_path, method, mode):
    path = tmp_path / "shared.bk"
    if mode == "r+":
        BloomFilter(100_000, 1e-6).save(path)
    f = BloomFilter.open(path, mode, capacity=100_000 if mode == "w+" else None, error_rate=1e-6)
    tasks = [(f, i * 20_000, 20_000) for i in range(4)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        news = pool.map(_new_in_worker, tasks)
    assert sum(news) == 80_000
    assert f.contains_many(keys(0, 80_000)).all()  # the parent's mapping sees the workers' adds
    f.close()
    assert BloomFilter.load(path).contains_many(keys(0, 80_000)).all()


def test_pickle_maps_the_same_file_with_the_same_mode(tmp_path):
    path = tmp_path / "f.bk"
    with BloomFilter.open(path, "w+", capacity=1000) as writer:
        clone = pickle.loads(pickle.dumps(writer))
        assert clone._file is not None and clone._file.writable and clone._file.exact
        clone.add("through the clone")
        assert "through the clone" in writer  # one file, two mappings
        clone.close()
        loose = BloomFilter.open(path, "r+", exact=False)
        assert pickle.loads(pickle.dumps(loose))._file.exact is False
        loose.close()
    with BloomFilter.open(path) as reader:
        clone = pickle.loads(pickle.dumps(reader, protocol=5))
        assert "through the clone" in clone
        with pytest.raises(OSError, match="read-only"):
            clone.add("x")
        clone.close()


def test_pickle_of_a_replaced_or_closed_file_raises(tmp_path):
    path = tmp_path / "f.bk"
    f = BloomFilter.open(path, "w+", capacity=1000)
    data = pickle.dumps(f)
    os.rename(path, tmp_path / "moved.bk")
    BloomFilter(1000).save(path)  # another file at the same path
    with pytest.raises(ValueError, match=r"f\.bk: this is not the file the pickled filter mapped"):
        pickle.loads(data)
    f.close()
    with pytest.raises(ValueError, match="closed filter"):
        pickle.dumps(f)


def test_a_killed_lock_holder_does_not_block_writers(tmp_path):
    path = tmp_path / "f.bk"
    f = BloomFilter.open(path, "w+", capacity=1000)
    # Another process holds the writer lock (as a writer does during an add) and is killed.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import fcntl, os, sys, time
                fd = os.open({str(path)!r}, os.O_RDWR)
                fcntl.lockf(fd, fcntl.LOCK_EX, 1, {LOCK_OFFSET})
                print("locked", flush=True)
                time.sleep(120)
            """),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout.readline() == b"locked\n"
    answers = []
    adder = threading.Thread(target=lambda: answers.append(f.add_many(["a", "b"]).tolist()))
    adder.start()
    time.sleep(0.3)
    assert adder.is_alive() and answers == []  # waits for the holder
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(30)
    adder.join(30)
    assert answers == [[False, False]]
    assert f.add("a") is True
    f.close()


def test_without_exact_no_lock_is_taken(tmp_path):
    path = tmp_path / "f.bk"
    BloomFilter.open(path, "w+", capacity=1000).close()
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, LOCK_OFFSET)  # held by this test throughout
        with BloomFilter.open(path, "r+", exact=False) as f:
            assert f._file.exact is False
            assert np.array_equal(f.add_many(["a", "a"]), [False, True])
    finally:
        os.close(fd)


def test_threads_adding_the_same_keys_get_one_new_answer_per_key(tmp_path):
    # Threads of one process share the file's lock descriptor, which does
    # not exclude them; the lock's mutex does.
    path = tmp_path / "f.bk"
    batch = keys(0, KEYS_PER_ROUND)
    with BloomFilter.open(path, "w+", capacity=10 * KEYS_PER_ROUND, error_rate=1e-6) as f:
        barrier, news = threading.Barrier(WORKERS), []

        def add(i):
            barrier.wait(60)
            if i % 2:
                news.append(sum(int((~f.add_many(batch[j : j + 997])).sum()) for j in range(0, len(batch), 997)))
            else:
                news.append(sum(not f.add(k) for k in batch))

        threads = [threading.Thread(target=add, args=(i,)) for i in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sum(news) == KEYS_PER_ROUND, news
