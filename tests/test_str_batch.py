"""Lists of str and bytes read in place, hashed on two threads (issue 8, "Strings in bulk").

A list's plain keys (exact ASCII str, exact bytes) are hashed from the
objects' own bytes, split between the calling thread and a helper thread
for blocks of >= 8192 keys (cpp/bindings/gil_split.hpp); every other key
goes through canonical_key() on the calling thread. These tests pin that the
split path hashes every key exactly as the one-key path and the NumPy/Arrow
paths do, keeps the all-or-nothing rule and first-bad-index errors, and is
safe with threads, interpreter exit and fork.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import bloomkit
from support import assert_exits_cleanly, run_python

# More than one block of the object path (131072 keys), for the lists that take it (those
# with keys that are not plain), and far above the split threshold.
N = 300_000

# keys.cpp's kHashWhileValidating: a list of at most this many plain keys
# is hashed in its validation walk (and probed on two threads); a longer one
# is validated, then hashed a block at a time.
HASH_WHILE_VALIDATING = 2**20


def urls(count: int, start: int = 0) -> list:
    return [
        f"https://example.com/path/{i}/item?id={(i * 2654435761) & 0xFFFFFFFF}" for i in range(start, start + count)
    ]


class Tagged(str):
    """A str subclass: not a plain key, same key as the equal str."""


def mixed_keys(count: int) -> list:
    """Plain keys with every kind of other key sprinkled in, at known positions."""
    keys: list = urls(count)
    for i in range(0, count, 997):
        keys[i] = f"café/{i}/ü"  # non-ASCII str
    for i in range(5, count, 1499):
        keys[i] = f"bytes-{i}".encode()
    for i in range(7, count, 2003):
        keys[i] = i * 31
    for i in range(11, count, 3001):
        keys[i] = Tagged(f"tagged-{i}")
    for i in range(13, count, 4001):
        keys[i] = float(i) + 0.5
    for i in range(17, count, 5003):
        keys[i] = bytearray(f"ba-{i}".encode())
    return keys


@pytest.mark.parametrize("layout", ["classic", "split_block"])
def test_str_list_positions_equal_numpy_and_arrow_paths(layout):
    pa = pytest.importorskip("pyarrow")
    keys = urls(N)
    keys[1234] = "ünïcode-ключ-🔑"
    f = bloomkit.BloomFilter(N, 0.01, layout=layout)
    from_list = f._positions_many(keys)
    assert from_list.shape == (N, f.num_hashes)
    np.testing.assert_array_equal(from_list, f._positions_many(np.array(keys)))
    np.testing.assert_array_equal(from_list, f._positions_many(pa.array(keys, pa.large_string())))
    encoded = [k.encode() for k in keys]
    np.testing.assert_array_equal(from_list, f._positions_many(encoded))
    np.testing.assert_array_equal(from_list, f._positions_many(tuple(keys)))
    np.testing.assert_array_equal(from_list, f._positions_many(np.array(keys, dtype=object)))


@pytest.mark.parametrize("secret_key", [None, b"0123456789abcdef0123456789abcdef"])
def test_mixed_list_hashes_every_key_as_one_key_does(secret_key):
    keys = mixed_keys(N)
    f = bloomkit.BloomFilter(N, 0.01, secret_key=secret_key)
    batch = f._positions_many(keys)
    # A one-key list never takes the split path; sample every kind of key.
    sample = sorted({0, 5, 7, 11, 13, 17, 1, 2, 3, N // 2, N - 1} | set(range(0, N, 7919)))
    for i in sample:
        np.testing.assert_array_equal(batch[i], f._positions_many([keys[i]])[0], err_msg=f"key {i}: {keys[i]!r}")
    f.update(keys)
    assert f.contains_many(keys).all()
    assert all(key in f for key in keys[::101])
    assert "café/0/ü" in f and Tagged("tagged-11") in f and "tagged-11" in f


def test_str_list_add_many_and_contains_many_agree_with_per_key_calls():
    keys = urls(N)
    batch = bloomkit.BloomFilter(N, 0.01, seed=7)
    was_present = batch.add_many(keys + keys[:10])
    assert not was_present[:N].any() or was_present[:N].mean() < 0.02
    assert was_present[N:].all()  # repeated keys report True the second time
    one_by_one = bloomkit.BloomFilter(N, 0.01, seed=7)
    for key in keys:
        one_by_one.add(key)
    assert batch.to_bytes() == one_by_one.to_bytes()
    absent = urls(N, start=N)
    found = batch.contains_many(absent)
    np.testing.assert_array_equal(found, np.array([key in one_by_one for key in absent]))
    assert found.mean() < 0.02


@pytest.mark.parametrize("count", [HASH_WHILE_VALIDATING, HASH_WHILE_VALIDATING + 1])
def test_lists_either_side_of_the_one_walk_limit_insert_and_find_what_arrow_does(count):
    pa = pytest.importorskip("pyarrow")
    keys = urls(count - 3) + urls(3)  # the last three repeat the first three
    via_list = bloomkit.BloomFilter(count, 0.01, seed=3)
    was_present = via_list.add_many(keys)
    assert was_present[-3:].all() and was_present[:-3].mean() < 0.02
    via_arrow = bloomkit.BloomFilter(count, 0.01, seed=3)
    np.testing.assert_array_equal(via_arrow.add_many(pa.array(keys, pa.large_string())), was_present)
    assert via_list.to_bytes() == via_arrow.to_bytes()
    probes = urls(count - 10, start=count)[::2] + keys[::2]
    np.testing.assert_array_equal(via_list.contains_many(probes), via_arrow.contains_many(pa.array(probes)))


def test_a_key_that_is_not_plain_after_the_one_walk_began_is_hashed_as_one_key_is():
    # The walk hashes plain keys until it meets another kind; the digests so
    # far are dropped and the list takes the validate-then-hash path.
    keys = urls(100_000)
    keys[99_998] = "ünïcode"
    keys[99_999] = 12345
    f = bloomkit.BloomFilter(100_000, 0.01)
    assert not f.add_many(keys)[-2:].any()
    assert "ünïcode" in f and 12345 in f and b"\x39\x30\0\0\0\0\0\0" in f
    one_by_one = bloomkit.BloomFilter(100_000, 0.01)
    for key in keys:
        one_by_one.add(key)
    assert f.to_bytes() == one_by_one.to_bytes()


@pytest.mark.parametrize("operation", ["update", "add_many", "contains_many"])
@pytest.mark.parametrize(
    "bad, error, message",
    [
        ("lone \ud800 surrogate", ValueError, "key at index 200000 is a str that cannot be encoded as UTF-8"),
        (None, TypeError, "key at index 200000 has unsupported type 'NoneType'"),
        (True, TypeError, "key at index 200000 has unsupported type 'bool'"),
    ],
)
def test_bad_key_deep_in_a_long_list_names_its_index_and_changes_nothing(operation, bad, error, message):
    keys = urls(N)
    keys[200_000] = bad
    keys[250_000] = None  # a later bad key is not the one reported
    f = bloomkit.BloomFilter(N, 0.01)
    f.update(["already here"])
    before = f.to_bytes()
    with pytest.raises(error, match=message):
        getattr(f, operation)(keys)
    assert f.to_bytes() == before


@pytest.mark.parametrize("operation", ["update", "contains_many"])
def test_bad_key_at_the_end_of_a_list_longer_than_the_one_walk_limit_changes_nothing(operation):
    # The longer path validates first and hashes afterwards, block by block.
    keys = urls(HASH_WHILE_VALIDATING + 5)
    keys[-1] = None
    f = bloomkit.BloomFilter(1000, 0.01)
    f.update(["already here"])
    before = f.to_bytes()
    with pytest.raises(TypeError, match=f"key at index {HASH_WHILE_VALIDATING + 4} has unsupported type 'NoneType'"):
        getattr(f, operation)(keys)
    assert f.to_bytes() == before


@pytest.mark.parametrize("count", [N, HASH_WHILE_VALIDATING + N])
def test_list_changed_by_another_thread_during_batches_never_crashes(count):
    # The list is shrunk, grown and rewritten while batches read it: every
    # batch either completes or raises the documented ValueError. (A list of
    # up to HASH_WHILE_VALIDATING keys is read once, under the GIL; a longer
    # one again block by block, with the GIL taken back for each block.)
    keys = urls(count)
    f = bloomkit.BloomFilter(4 * count, 0.01)
    stop = threading.Event()
    outcomes = {"done": 0, "changed": 0}

    def mutate():
        fresh = urls(1000, start=10 * N)
        while not stop.is_set():
            del keys[-1000:]
            keys.extend(fresh)
            keys[: len(fresh)] = fresh

    def batches():
        for _ in range(20):
            try:
                f.update(keys)
                f.contains_many(keys)
                outcomes["done"] += 1
            except ValueError as error:
                assert "the list of keys changed size" in str(error)
                outcomes["changed"] += 1

    mutator = threading.Thread(target=mutate)
    mutator.start()
    try:
        batches()
    finally:
        stop.set()
        mutator.join()
    assert outcomes["done"] + outcomes["changed"] == 20
    assert f.contains_many(urls(1000, start=10 * N)).all()


def test_concurrent_str_list_batches_into_one_filter_lose_nothing():
    parts = [urls(N // 4, start=p * N) for p in range(4)]
    f = bloomkit.BloomFilter(N, 0.01)
    threads = [threading.Thread(target=f.update, args=(part,)) for part in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for part in parts:
        assert f.contains_many(part).all()
    sequential = bloomkit.BloomFilter(N, 0.01)
    for part in parts:
        sequential.update(part)
    assert f.to_bytes() == sequential.to_bytes()


def test_one_thread_setting_gives_the_same_filter():
    # BLOOMKIT_BATCH_THREADS=1 turns the helper thread off; both must agree.
    source = """
        import hashlib, sys
        import bloomkit
        keys = [f"https://example.com/{i}" for i in range(300_000)] + ["é", b"raw", 5, 2.5]
        f = bloomkit.BloomFilter(300_000, 0.01)
        f.update(keys)
        assert f.contains_many(keys).all()
        print(hashlib.sha256(f.to_bytes()).hexdigest())
    """
    digests = set()
    for setting in ("1", "2"):
        result = run_python(source, timeout=300, env={**os.environ, "BLOOMKIT_BATCH_THREADS": setting})
        assert result.returncode == 0, result.stderr[-2000:]
        digests.add(result.stdout.strip())
    assert len(digests) == 1


def test_interpreter_exit_with_daemon_threads_inside_str_batches():
    source = """
        import threading, time
        import bloomkit
        f = bloomkit.BloomFilter(2_000_000, 0.01)
        keys = [f"https://example.com/{i}" for i in range(400_000)]
        def work():
            while True:
                f.update(keys)
                f.contains_many(keys)
        for _ in range(2):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.5)
        print("exiting")
    """
    assert_exits_cleanly(source)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_after_and_during_str_batches():
    source = """
        import multiprocessing as mp, threading
        import bloomkit
        keys = [f"https://example.com/{i}" for i in range(200_000)]
        f = bloomkit.BloomFilter(400_000, 0.01)
        f.update(keys)
        busy = threading.Thread(target=lambda: [f.contains_many(keys) for _ in range(5)])
        busy.start()

        def child(queue):
            g = bloomkit.BloomFilter(400_000, 0.01)
            g.update(keys)
            queue.put(bool(g.contains_many(keys).all()) and bool(f.contains_many(keys).all()))

        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        procs = [ctx.Process(target=child, args=(queue,)) for _ in range(2)]
        for p in procs: p.start()
        results = [queue.get(timeout=120) for _ in procs]
        for p in procs: p.join(timeout=120)
        busy.join()
        print(results, [p.exitcode for p in procs])
    """
    result = run_python(source, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[True, True] [0, 0]"
