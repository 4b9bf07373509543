"""RotatingBloomFilter.open: all generations in one mapped file shared by processes.

Every write (add, a batch's chunk, the rotation before it) holds the file's
writer lock, so: four processes adding the same keys while the window
rotates get exactly one "new" per distinct key; two mappings with their own
clocks see one rotation; a writer killed at any step of a rotation leaves a
file that loads as "not closed cleanly" (never "corrupt"), opens "r+" and
keeps every acknowledged key of the window; a reader that maps and probes
the file while a writer rotates never misses a key of the window and never
sees a torn state. The risky parts run in subprocesses whose exit status is
asserted.
"""

import io
import multiprocessing
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import bloomkit
from bloomkit import RotatingBloomFilter
from support import OFFER_WAYS, count_new_answers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux file locks")

OPEN_FOR_WRITING = 0x40  # bit 14 of the type tag: byte 11, bit 6 (docs/FORMAT.md)
NO_GENERATION = -(2**63)  # an empty slot's generation number (rotating_bloom.hpp)


class FakeClock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def keys(start, count):
    return [f"key-{i}" for i in range(start, start + count)]


def run_python(code, *args, timeout=60):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


# ------------------------------------------------------------ one process


@pytest.mark.parametrize("layout", ["classic", "blocked512", "split_block"])
def test_a_w_plus_file_is_the_frame_of_the_same_filter_built_in_memory(tmp_path, layout):
    path = tmp_path / "w.bk"
    ram = RotatingBloomFilter(3_000, 0.001, window=2_000, generations=4, seed=3, layout=layout)
    with RotatingBloomFilter.open(
        path, "w+", capacity=3_000, error_rate=0.001, window=2_000, generations=4, seed=3, layout=layout
    ) as mapped:
        assert path.read_bytes()[11] & OPEN_FOR_WRITING
        for batch in (keys(0, 1_500), keys(1_000, 2_500)):  # 4,000 keys offered: 5 rotations, in batches
            np.testing.assert_array_equal(mapped.add_many(batch), ram.add_many(batch))
        assert [mapped.add(k) for k in keys(3_400, 200)] == [ram.add(k) for k in keys(3_400, 200)]
        assert mapped == ram and len(mapped) == len(ram) and mapped.keys_seen == 4_200
        assert mapped.current_generation == ram.current_generation == 4_199 // 667
    assert path.read_bytes() == ram.to_bytes()  # closed: checksum written, open bit cleared
    with RotatingBloomFilter.open(path) as reader:
        assert reader == ram and reader.generations_info == ram.generations_info
        assert reader.contains_many(keys(0, 4_200)).tolist() == ram.contains_many(keys(0, 4_200)).tolist()


def test_read_only_mapping_refuses_writes_and_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "r.bk"
    f = RotatingBloomFilter(1_000, 0.01, window=500, generations=3)
    f.update(keys(0, 300))
    f.save(path)
    before = path.read_bytes()
    with RotatingBloomFilter.open(path, "r") as reader:
        for write in (lambda: reader.add("x"), lambda: reader.update(["x"]), reader.clear):
            with pytest.raises(io.UnsupportedOperation, match="read-only .*mode 'r\\+'"):
                write()
        assert reader.contains_many(keys(0, 300)).all() and reader.keys_seen == 300
    assert path.read_bytes() == before


def test_open_arguments_are_checked_before_the_file_is_touched(tmp_path):
    path = tmp_path / "a.bk"
    RotatingBloomFilter(100, window=50).save(path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match="capacity and window are required"):
        RotatingBloomFilter.open(tmp_path / "new.bk", "w+", capacity=100)
    for extra in ({"capacity": 10}, {"window": "1h"}, {"generations": 3}, {"layout": "classic"}):
        with pytest.raises(TypeError, match="are for mode 'w\\+'; mode 'r\\+' reads them from"):
            RotatingBloomFilter.open(path, "r+", **extra)
    with pytest.raises(ValueError, match="mode must be 'r', 'r\\+' or 'w\\+', got 'a'"):
        RotatingBloomFilter.open(path, "a")
    with pytest.raises(TypeError, match="clock must be a callable"):
        RotatingBloomFilter.open(path, clock=5)
    with pytest.raises(ValueError, match="window .0s. is not a positive number of units"):
        RotatingBloomFilter.open(tmp_path / "new.bk", "w+", capacity=100, window="0s")
    assert path.read_bytes() == before and not (tmp_path / "new.bk").exists()
    bloom = tmp_path / "bloom.bk"
    bloomkit.BloomFilter(100).save(bloom)
    with pytest.raises(ValueError, match="bloom.bk: .*BloomFilter.*not a RotatingBloomFilter|bloom.bk: .*type"):
        RotatingBloomFilter.open(bloom)


def test_a_closed_filter_raises_and_says_so(tmp_path):
    f = RotatingBloomFilter.open(tmp_path / "c.bk", "w+", capacity=100, window=50)
    f.add("a")
    f.close()
    f.close()  # idempotent
    assert f.closed and repr(f) == "<RotatingBloomFilter state=closed>"
    for use in (lambda: f.add("a"), lambda: "a" in f, lambda: len(f), f.to_bytes, f.copy, f.flush):
        with pytest.raises(ValueError, match="closed filter"):
            use()
    assert bloomkit.load(tmp_path / "c.bk").keys_seen == 1


def test_two_mappings_with_their_own_clocks_share_each_rotation(tmp_path):
    path = tmp_path / "t.bk"
    early, late = FakeClock(0.0), FakeClock(0.0)
    a = RotatingBloomFilter.open(path, "w+", capacity=1_000, window="2h", generations=3, clock=early)  # I = 1 h
    b = RotatingBloomFilter.open(path, "r+", clock=late)
    assert a.add("first") is False and b.add("first") is True
    late.now = 3_600.0  # b's clock reaches generation 1 and rotates the file for both
    assert b.add("second") is False and a.current_generation == 1
    assert a.add("third") is False  # a's clock still reads 0: its add goes to the file's newest generation
    assert [g.generation for g in b.generations_info] == [0, 1] and b.generations_info[1].count == 2
    late.now = 4 * 3_600.0  # generations 0 and 1 are gone for everyone once b rotates past them
    assert b.add("fourth") is False
    assert "first" not in a and "third" not in a and "fourth" in a and len(a) == 1
    a.close()
    b.close()
    assert bloomkit.load(path).current_generation == 4


def test_pickle_sends_the_file_and_pool_workers_add_into_it(tmp_path):
    path = tmp_path / "p.bk"
    with RotatingBloomFilter.open(path, "w+", capacity=100_000, error_rate=1e-6, window=1_000_000) as f:
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            news = pool.map(_add_in_worker, [(f, 0, 5_000), (f, 5_000, 5_000)])
        assert news == [5_000, 5_000] and len(f) == 10_000 and f.keys_seen == 10_000
        assert f.contains_many(keys(0, 10_000)).all()
        reader = pickle.loads(pickle.dumps(RotatingBloomFilter.open(path, "r")))
        assert reader._shared_as[1] == "r" and reader.contains_many(keys(0, 10_000)).all()


def _add_in_worker(task):
    f, start, count = task
    return int((~f.add_many(keys(start, count))).sum())


# ------------------------------------------------------------- processes

WORKERS = 4
DISTINCT = 20_000


def _contend(path, batch, how, barrier, results):
    f = RotatingBloomFilter.open(path, "r+")
    barrier.wait(60)
    new = count_new_answers(f, batch, how)
    f.close()
    results.put(new)


def test_processes_adding_the_same_keys_while_it_rotates_get_one_new_answer_per_key(tmp_path):
    # 4 x 20,000 offers into a window of 80,000 keys in 5 generations (20,000
    # keys each): three rotations happen during the contention, and no key
    # leaves the window before every process is done, so the exact count is
    # one "new" per distinct key whatever the interleaving.
    batch = keys(0, DISTINCT)
    reference = RotatingBloomFilter(80_000, 1e-6, window=80_000, generations=5)
    assert int((~reference.add_many(batch)).sum()) == DISTINCT  # no false positive at this rate
    path = tmp_path / "shared.bk"
    RotatingBloomFilter.open(path, "w+", capacity=80_000, error_rate=1e-6, window=80_000, generations=5).close()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [ctx.Process(target=_contend, args=(path, batch, OFFER_WAYS[i], barrier, results)) for i in range(WORKERS)]
    for p in procs:
        p.start()
    news = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sum(news) == DISTINCT, news
    f = bloomkit.load(path)  # every writer closed: checksum valid
    assert f.keys_seen == WORKERS * DISTINCT and len(f) == DISTINCT and f.current_generation == 3
    assert f.contains_many(batch).all()


# ------------------------------------------------- a writer killed mid-rotation


def _payload_offset(frame: bytes, nbytes: int) -> int:
    return len(frame) - 8 - nbytes  # the payload ends where the 8-byte checksum starts


def _killed_at(frame: bytes, nbytes: int, words: dict, clear_slot_words=None) -> bytes:
    """``frame`` as a writer killed mid-rotation leaves it: state words changed, bits partly cleared, marked open."""
    out = bytearray(frame)
    base = _payload_offset(frame, nbytes)
    for index, value in words.items():
        struct.pack_into("<q", out, base + 8 * index, value)
    if clear_slot_words is not None:
        start, count = clear_slot_words
        out[base + 8 * start : base + 8 * (start + count)] = bytes(8 * count)
    out[11] |= OPEN_FOR_WRITING
    return bytes(out)


@pytest.mark.parametrize("step", ["count zeroed", "slot emptied", "bits half cleared", "slot renumbered", "current"])
def test_every_step_of_a_killed_rotation_is_a_valid_file_that_keeps_the_window(tmp_path, step):
    # Key window of 3,000 keys in 4 generations (n = 1,000): 4,000 keys offered
    # fill generations 0..3; the next key rotates slot 0 from generation 0
    # to 4. State block: [current, seen, (generation, count) per slot].
    ram = RotatingBloomFilter(3_000, 0.001, window=3_000, generations=4, seed=1)
    ram.update(keys(0, 4_000))
    frame, nbytes = ram.to_bytes(), ram.nbytes
    state_words = 16  # 2 + 2 * 4 words, padded to whole cache lines
    slot_words = (nbytes // 8 - state_words) // 4
    done = {"count zeroed": {3: 0}}
    done["slot emptied"] = {**done["count zeroed"], 2: NO_GENERATION}
    done["bits half cleared"] = done["slot emptied"]
    done["slot renumbered"] = {3: 0, 2: 4}
    done["current"] = {3: 0, 2: 4, 0: 4}
    cleared = (state_words, slot_words // 2) if step == "bits half cleared" else None
    if step in ("slot renumbered", "current"):
        cleared = (state_words, slot_words)
    path = tmp_path / "killed.bk"
    path.write_bytes(_killed_at(frame, nbytes, done[step], cleared))
    with pytest.raises(ValueError, match="not closed cleanly"):  # not "corrupt"
        bloomkit.load(path)
    window = keys(1_000, 3_000)  # the last W keys offered: all acknowledged, all must be there
    with RotatingBloomFilter.open(path, "r") as reader:
        assert reader.contains_many(window).all()
        assert reader.keys_seen == 4_000
    with RotatingBloomFilter.open(path, "r+") as writer:  # the next writer finishes the rotation
        assert writer.contains_many(window).all()
        assert writer.add("next") == ram.add("next")
        assert writer == ram  # byte for byte what a writer that was never killed leaves
    assert path.read_bytes() == ram.to_bytes()


KILLED_WRITER = """
    import sys
    from bloomkit import RotatingBloomFilter
    done = int(sys.argv[2])
    # The clock is the key count: a new generation every 1,000 keys.
    f = RotatingBloomFilter.open(sys.argv[1], "r+", clock=lambda: done / 1000)
    while True:
        f.update([f"key-{i}" for i in range(done, done + 500)])
        done += 500
        print(done, flush=True)
"""


def test_a_writer_sigkilled_while_rotating_loses_no_acknowledged_key_of_the_window(tmp_path):
    # A time window of 4 s in 5 generations (I = 1 s) whose writer's clock
    # is its key count / 1,000: 8 MiB generations cleared every 1,000 keys,
    # so clearing is most of the writer's time and kills land inside
    # rotations. Four kills at different moments, each run continuing where
    # the last left off (key-i is the i-th key offered), each followed by
    # the checks: "not closed cleanly", never corrupt; every acknowledged
    # key of the live generations present; the documented recovery.
    path = tmp_path / "k.bk"
    RotatingBloomFilter.open(
        path, "w+", capacity=20_000_000, error_rate=0.01, window="4s", generations=5, layout="blocked512"
    ).close()
    assert os.path.getsize(path) > 5 * 8 * 10**6
    for kill in range(4):
        start = bloomkit.load(path).keys_seen
        writer = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(path), str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        acknowledged = int(writer.stdout.readline())
        deadline = time.monotonic() + 0.2 + 0.15 * kill
        while time.monotonic() < deadline:
            acknowledged = int(writer.stdout.readline())
        writer.send_signal(signal.SIGKILL)
        writer.wait(60)
        assert writer.returncode == -9
        with pytest.raises(ValueError, match="not closed cleanly"):
            bloomkit.load(path)
        with RotatingBloomFilter.open(path, "r", clock=lambda: 0.0) as after:  # the file's own generations
            seen, current = after.keys_seen, after.current_generation
            assert seen >= acknowledged and current >= (acknowledged - 500) // 1000
            # The killed batch ran at clock acknowledged / 1000 s, in generation g (the file may
            # show g - 1 if it was killed rotating into g); the window then holds generations
            # g - 4 .. g. A key was offered at its batch's clock: batches start at start + 500 j.
            g = acknowledged // 1000
            batch_generation = [(start + 500 * ((i - start) // 500)) // 1000 for i in range(start, acknowledged)]
            live = [f"key-{i}" for i, gen in zip(range(start, acknowledged), batch_generation) if gen >= g - 4]
            assert len(live) >= 500 and after.contains_many(live).all(), (kill, seen, acknowledged, current)
        RotatingBloomFilter.open(path, "r+", clock=lambda: 0.0).close()  # the documented recovery
        assert bloomkit.load(path).keys_seen == seen


# ------------------------------------------------------ a reader during rotation

READER = """
    import sys, time
    from bloomkit import RotatingBloomFilter
    path, window, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    checks = reopened = 0
    end = time.monotonic() + seconds
    reader = RotatingBloomFilter.open(path, "r")
    while time.monotonic() < end:
        before = reader.keys_seen
        low = max(0, before - window)
        present = reader.contains_many([f"key-{i}" for i in range(low, before)])
        after = reader.keys_seen
        # Keys offered before `before` that were still in the window when
        # `after` keys had been seen were live during the whole lookup.
        first = max(low, after - window)
        missing = [low + j for j in range(first - low, before - low) if not present[j]]
        if missing:
            print("missing", before, after, missing[:5], flush=True)
            sys.exit(1)
        checks += 1
        if checks % 10 == 0:  # open again while the writer rotates: the state check must not tear
            reader.close()
            reader = RotatingBloomFilter.open(path, "r")
            reopened += 1
    print("ok", checks, reopened, reader.keys_seen, flush=True)
"""


def test_a_reader_during_rotations_sees_every_key_of_the_window(tmp_path):
    path = tmp_path / "r.bk"
    window = 4_000
    with RotatingBloomFilter.open(path, "w+", capacity=window, error_rate=1e-4, window=window, generations=3) as f:
        f.update(keys(0, window))
        reader = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(READER), str(path), str(window), "2.0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        offered = window
        while reader.poll() is None:  # rotations every 2,000 keys while the reader reads
            f.update(keys(offered, 100))
            offered += 100
        out = reader.stdout.read()
    assert reader.returncode == 0, out
    _, checks, reopened, seen = out.split()
    assert int(checks) >= 10 and int(reopened) >= 1 and offered >= 3 * window, (out, offered)
