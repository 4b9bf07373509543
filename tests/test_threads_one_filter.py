"""Eight threads on one filter, through the calls a GIL used to serialise (docs/RELIABILITY.md, "Threads").

With a GIL, single-key calls made while no batch is in flight ran one at a
time without taking the filter's lock (bindings/guard.hpp); on free-threaded
CPython (3.13t, 3.14t: ``.ci/free_threaded.sh``) they run truly at once, and
take the lock instead. Each test here has 8 threads hammer ONE filter with
single-key adds, lookups, removals, merges, clears, ``__init__`` and calls on
an uninitialised instance, and checks the result against a sequential one.
"""

from __future__ import annotations

import os
import pickle
import sysconfig
import threading

import numpy as np
import pytest

import bloomkit
from bloomkit import _types
from support import ALL_TYPES, growable, run_python, run_threads

THREADS = 8
KEYS_PER_THREAD = 20_000
MUTABLE = [cls for cls in ALL_TYPES if _types.row_of(cls).mutable]
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def thread_keys(t: int) -> list[str]:
    return [f"t{t}-{i}" for i in range(KEYS_PER_THREAD)]


@pytest.mark.parametrize("cls", MUTABLE, ids=lambda c: c.__name__)
def test_single_key_adds_lookups_and_removals_from_eight_threads_lose_nothing(cls):
    # 8 threads x 20,000 single-key adds, each followed by a lookup and every
    # 500th by len(); then the removable types remove the first half, one
    # key at a time. Scalable starts at 100 keys so its chain grows ~11 times
    # while the threads add. On free-threaded 3.13 without the locks of
    # guard.hpp, added cuckoo keys went missing (1 run in 3; in a longer
    # loop, cuckoo len 159,608 of 160,000 and 8 scalable keys missing right
    # after their add).
    f = growable(cls, THREADS * KEYS_PER_THREAD, first_slice=100)
    removable = hasattr(f, "remove")
    missing = []

    def adder(t):
        def run():
            for i, key in enumerate(thread_keys(t)):
                f.add(key)
                if key not in f:
                    missing.append(key)
                if i % 500 == 0:
                    len(f)

        return run

    run_threads([adder(t) for t in range(THREADS)])
    assert missing == []
    everything = [key for t in range(THREADS) for key in thread_keys(t)]
    assert f.contains_many(everything).all()
    if _types.row_of(cls).exact_count:
        assert len(f) == THREADS * KEYS_PER_THREAD
    if _types.row_of(cls).order_free:  # any interleaving gives the bytes of a sequential build
        reference = growable(cls, THREADS * KEYS_PER_THREAD)
        reference.update(everything)
        assert f.to_bytes() == reference.to_bytes()
    if not removable:
        return
    half = KEYS_PER_THREAD // 2
    run_threads([lambda t=t: [f.remove(key) for key in thread_keys(t)[:half]] for t in range(THREADS)])
    kept = [key for t in range(THREADS) for key in thread_keys(t)[half:]]
    assert f.contains_many(kept).all()
    if _types.row_of(cls).exact_count:
        assert len(f) == len(kept)
    else:
        reference = growable(cls, THREADS * KEYS_PER_THREAD)
        reference.update(kept)
        assert f.to_bytes() == reference.to_bytes()


@pytest.mark.parametrize("cls", [c for c in MUTABLE if hasattr(c, "_union_update")], ids=lambda c: c.__name__)
def test_merges_while_six_threads_add_to_both_operands(cls):
    # 4 threads add to `a` (2 batches, 2 single keys), 2 add to `b`; 1 merges
    # b into a (|=), 1 merges a into c and intersects a copy of a with b.
    a, b, c = (growable(cls, 200_000) for _ in range(3))
    chunks = [np.arange(i * 20_000, (i + 1) * 20_000, dtype=np.uint64) for i in range(6)]
    single = [[f"a{t}-{i}" for i in range(3_000)] for t in range(2)]
    stop = threading.Event()

    def batches(target, chunk):
        return lambda: [target.update(chunk[j : j + 2_000]) for j in range(0, len(chunk), 2_000)]

    def merge_into_a():
        while not stop.is_set():
            a.__ior__(b)

    def merge_into_c():
        while not stop.is_set():
            c.__ior__(a)
            a.intersection(b) if hasattr(a, "_intersection_update") else a.union(b)

    def writers():
        run_threads(
            [batches(a, chunks[0]), batches(a, chunks[1])]
            + [lambda keys=keys: [a.add(k) for k in keys] for keys in single]
            + [batches(b, chunks[2]), batches(b, chunks[3])]
        )
        stop.set()

    run_threads([writers, merge_into_a, merge_into_c])
    a |= b
    c |= a
    for chunk in chunks[:4]:
        assert a.contains_many(chunk).all() and c.contains_many(chunk).all()
    assert a.contains_many(single[0] + single[1]).all()
    assert b.contains_many(chunks[0]).mean() < 0.05  # b never received a's keys
    if cls is not bloomkit.CountingBloomFilter:  # a counting union adds counters: repeated merges count twice
        reference = growable(cls, 200_000)
        for keys in chunks[:4] + single:
            reference.update(keys)
        assert a.to_bytes() == reference.to_bytes() == c.to_bytes()


@pytest.mark.filterwarnings("ignore::bloomkit.CapacityWarning")  # writers may pass capacity between clears
@pytest.mark.parametrize("cls", MUTABLE, ids=lambda c: c.__name__)
def test_clears_while_six_threads_add(cls):
    # 6 writers add batches and single keys while 2 threads clear ten times
    # each; once the clearers are done each writer adds its last batch, which
    # must all be present, and the filter must serialise to a frame that
    # loads as an equal filter (no torn state).
    f = growable(cls, 100_000, first_slice=5_000)
    cleared = threading.Event()
    clearers_left = [2]
    lock = threading.Lock()
    last = [np.arange(10**12 + t * 2_000, 10**12 + (t + 1) * 2_000, dtype=np.uint64) for t in range(6)]

    def writer(t):
        def run():
            i = 0
            # Keys never repeat: a cuckoo filter stores each add of a key again.
            while not cleared.is_set():
                f.update(np.arange(t * 10**9 + i * 500, t * 10**9 + (i + 1) * 500, dtype=np.uint64))
                f.add(f"w{t}-{i}")
                i += 1
            f.update(last[t])

        return run

    def clearer():
        for _ in range(10):
            f.clear()
        with lock:
            clearers_left[0] -= 1
            if clearers_left[0] == 0:
                cleared.set()

    run_threads([writer(t) for t in range(6)] + [clearer, clearer])
    for keys in last:
        assert f.contains_many(keys).all()
    loaded = cls.from_bytes(f.to_bytes())
    assert loaded == f
    assert pickle.loads(pickle.dumps(f)) == f


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_eight_threads_on_one_uninitialised_instance_all_get_type_error(cls):
    instance = cls.__new__(cls)
    refusals = []
    calls = (
        lambda: "k" in instance,
        lambda: instance.contains_many(["a", "b"]),
        lambda: len(instance),
        lambda: pickle.dumps(instance),
        lambda: instance.nbytes,
    )
    if _types.row_of(cls).mutable:  # a frozen type refuses writes as such before anything else
        calls += (lambda: instance.add("k"), lambda: instance.update(["a", "b"]))

    def caller():
        for _ in range(200):
            for call in calls:
                with pytest.raises(TypeError, match="not initialised"):
                    call()
                refusals.append(1)

    run_threads([caller] * THREADS)
    assert len(refusals) == THREADS * 200 * len(calls)


@pytest.mark.parametrize("cls", MUTABLE, ids=lambda c: c.__name__)
def test_eight_threads_initialising_one_instance_make_one_filter(cls):
    # Exactly one __init__ builds the filter; the seven others raise, each
    # time, and the filter is whole afterwards.
    for _ in range(50):
        instance = cls.__new__(cls)
        outcomes = []
        start = threading.Barrier(THREADS)

        def init():
            start.wait()
            try:
                # The registry's factory with __init__ of this one instance as the
                # class: the arguments every type's constructor needs, from its row.
                _types.row_of(cls).factory(lambda *a, **kw: instance.__init__(*a, **kw), 1_000, 0.01, 0, None)
                outcomes.append("built")
            except TypeError as error:
                assert "already initialised: __init__ cannot be called twice" in str(error)
                outcomes.append("refused")

        run_threads([init] * THREADS)
        assert sorted(outcomes) == ["built"] + ["refused"] * (THREADS - 1)
        instance.add("x")
        assert "x" in instance and cls.from_bytes(instance.to_bytes()) == instance


def test_importing_bloomkit_keeps_the_gil_as_the_build_has_it():
    # Free-threaded CPython: the module declares Py_MOD_GIL_NOT_USED; without
    # it CPython turns the GIL on at import (and warns, an error here), so the
    # GIL must still be off after it. With a GIL (no sys._is_gil_enabled
    # before 3.13) it stays on. PYTHON_GIL is removed so nothing forces it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    result = run_python(
        """
        import sys, warnings
        warnings.simplefilter("error")
        gil_enabled = getattr(sys, "_is_gil_enabled", lambda: True)
        before = gil_enabled()
        import bloomkit, bloomkit._core
        f = bloomkit.BloomFilter(1000, 0.01)
        f.add("x")
        print(before, gil_enabled())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == (["False", "False"] if FREE_THREADED else ["True", "True"])
