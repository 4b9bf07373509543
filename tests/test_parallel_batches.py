"""Large batches on two threads (bloomkit/parallel.hpp, docs/decisions.md).

Every test builds the same filter with batches on one thread and on two
(``_core._set_batch_threads``) and asserts identical bytes and answers:
the two-thread path may only be faster, never different.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from bloomkit import BloomFilter, _core
from support import FILTER_TYPES, assert_exits_cleanly

# Above kMinParallelKeys (65,536), and not a multiple of the 16,384-key chunk.
N = 150_001
SECRET = b"parallel batches test key"


@pytest.fixture
def batch_threads():
    """Sets the batch thread count for a test and restores it afterwards."""
    saved = _core._batch_threads()
    yield _core._set_batch_threads
    _core._set_batch_threads(2 if saved == 2 else 1)


def with_repeats(count: int, seed: int) -> np.ndarray:
    """Distinct uint64 keys with every third one a repeat of an earlier key,
    so add_many's "was present" answers depend on the order within the batch."""
    keys = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
    keys[2::3] = keys[0::3][: len(keys[2::3])]  # key 3j + 2 repeats key 3j
    return keys


def one_and_two(batch_threads, build):
    """build() under one and then two batch threads; both results."""
    batch_threads(1)
    one = build()
    batch_threads(2)
    two = build()
    return one, two


def test_setting_is_one_or_two(batch_threads):
    with pytest.raises(ValueError, match="batch threads must be 1 or 2, got 3"):
        _core._set_batch_threads(3)
    batch_threads(1)
    assert _core._batch_threads() == 1


@pytest.mark.parametrize("layout", ["classic", "blocked512", "split_block"])
def test_numpy_batches_give_identical_filters_and_answers(batch_threads, layout):
    keys = with_repeats(N, 1)
    absent = np.random.default_rng(2).integers(0, 2**64, size=N, dtype=np.uint64)

    def build():
        f = BloomFilter(N, 0.01, layout=layout, seed=5)
        was_present = f.add_many(keys)
        return f.to_bytes(), was_present, f.contains_many(absent), f.contains_many(keys), len(f)

    one, two = one_and_two(batch_threads, build)
    assert one[0] == two[0]
    assert np.array_equal(one[1], two[1])
    assert two[1][2::3].all()  # every repeat reports present
    assert np.array_equal(one[2], two[2])
    assert two[3].all()
    assert one[4] == two[4]
    # The false-positive rate of the two-thread filter is the one asked for
    # (1 %, 150,001 probes: 5 standard deviations is 0.13 %).
    assert two[2].mean() < 0.0113


@pytest.mark.parametrize("secret_key", [None, SECRET], ids=["unkeyed", "keyed"])
@pytest.mark.parametrize(
    "make_keys",
    [
        pytest.param(lambda: with_repeats(N, 3), id="uint64-with-repeats"),
        pytest.param(lambda: np.arange(N, dtype=np.float64) / 7, id="float64"),
        pytest.param(lambda: np.array([b"key-%d" % i for i in range(N)], dtype="S12"), id="bytes-S12"),
        pytest.param(lambda: [f"https://example.com/page/{i}" for i in range(N)], id="str-list"),
        pytest.param(lambda: np.array([f"k{i}" for i in range(N)], dtype="U8"), id="unicode-U8"),
    ],
)
def test_every_key_source_gives_identical_filters(batch_threads, make_keys, secret_key):
    keys = make_keys()

    def build():
        f = BloomFilter(N, 0.01, secret_key=secret_key)
        first = f.add_many(keys)
        return f.to_bytes(), first, f.contains_many(keys)

    one, two = one_and_two(batch_threads, build)
    assert one[0] == two[0]
    assert np.array_equal(one[1], two[1])
    assert two[2].all()


def test_arrow_strings_give_identical_filters(batch_threads):
    pa = pytest.importorskip("pyarrow")
    keys = pa.array([f"row-{i}" for i in range(N)])

    def build():
        f = BloomFilter(N, 0.01)
        f.update(keys)
        return f.to_bytes(), f.contains_many(keys)

    one, two = one_and_two(batch_threads, build)
    assert one[0] == two[0]
    assert two[1].all()


def test_file_backed_filter_gives_the_same_file(batch_threads, tmp_path):
    keys = with_repeats(N, 4)

    def build():
        path = tmp_path / f"threads-{_core._batch_threads()}.bloom"
        with BloomFilter.open(path, "w+", capacity=N, error_rate=0.01) as f:
            was_present = f.add_many(keys)
            present = f.contains_many(keys)
        return path.read_bytes(), was_present, present

    one, two = one_and_two(batch_threads, build)
    assert one[0] == two[0]
    assert np.array_equal(one[1], two[1])
    assert two[2].all()


# Every other registered type, once (its default variant; a growable one
# starts at a sixteenth of N and grows, a frozen one is built from the keys).
OTHER_TYPES = [pytest.param(case, id=case.name) for case in FILTER_TYPES if case.row.name != "bloom"]


@pytest.mark.parametrize("case", OTHER_TYPES)
def test_other_filters_look_up_on_two_threads_with_identical_answers(batch_threads, case):
    keys = np.arange(N, dtype=np.uint64)
    probes = np.arange(N // 2, N + N // 2, dtype=np.uint64)

    def build():
        f = case.build(keys, N, 0.01, 0)
        return f.to_bytes(), f.contains_many(probes)

    one, two = one_and_two(batch_threads, build)
    assert one[0] == two[0]
    assert np.array_equal(one[1], two[1])
    assert two[1][: N - N // 2].all()


def test_concurrent_large_batches_into_one_filter_lose_nothing(batch_threads):
    # Four Python threads insert and look up large batches at once; each
    # batch may itself use a helper thread. The result is the sequential one.
    batch_threads(2)
    parts = [np.random.default_rng(10 + p).integers(0, 2**64, size=N, dtype=np.uint64) for p in range(4)]
    f = BloomFilter(4 * N, 0.01)
    failures = []

    def work(part):
        try:
            f.update(part)
            if not f.contains_many(part).all():
                failures.append("a key inserted by this thread is missing")
        except Exception as error:  # pragma: no cover - reported below
            failures.append(repr(error))

    threads = [threading.Thread(target=work, args=(part,)) for part in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    batch_threads(1)
    sequential = BloomFilter(4 * N, 0.01)
    for part in parts:
        sequential.update(part)
    assert f.to_bytes() == sequential.to_bytes()


def test_interpreter_exit_with_daemon_threads_inside_two_thread_batches():
    # Daemon threads are frozen or ended at exit wherever they are; a helper
    # thread of theirs must neither crash the process nor keep it alive.
    source = """
        import threading, time
        import numpy as np
        import bloomkit
        f = bloomkit.BloomFilter(2_000_000, 0.01)
        numbers = np.arange(1_000_000, dtype=np.uint64)
        strings = [f"https://example.com/{i}" for i in range(300_000)]
        def work(keys):
            while True:
                f.update(keys)
                f.contains_many(keys)
        for keys in (numbers, strings, numbers):
            threading.Thread(target=work, args=(keys,), daemon=True).start()
        time.sleep(0.5)
        print("exiting")
    """
    assert_exits_cleanly(source)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_child_forked_during_another_threads_two_thread_batch_runs_its_own():
    # A child forked while a thread of the parent runs two-thread batches has
    # none of the parent's threads; its own large batches must work, and get
    # a helper of their own (the parent's helper slot is not inherited).
    source = """
        import os, threading
        import numpy as np
        import bloomkit
        from bloomkit import _core
        busy = bloomkit.BloomFilter(2_000_000, 0.01)
        numbers = np.arange(2_000_000, dtype=np.uint64)
        stop = threading.Event()
        def work():
            while not stop.is_set():
                busy.update(numbers)
        worker = threading.Thread(target=work)
        worker.start()
        statuses = []
        for _ in range(5):
            pid = os.fork()
            if pid == 0:
                mine = bloomkit.BloomFilter(500_000, 0.01)
                keys = np.arange(10**9, 10**9 + 500_000, dtype=np.uint64)
                mine.update(keys)
                ok = mine.contains_many(keys).all() and _core._helper_slots_in_use() == 0
                os._exit(0 if ok else 1)
            statuses.append(os.waitpid(pid, 0)[1])
        stop.set()
        worker.join()
        print("exiting" if statuses == [0] * 5 else statuses)
    """
    assert_exits_cleanly(source, runs=1)
