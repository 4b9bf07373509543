"""RotatingBloomFilter: what only a window filter does -- forgetting after the
window and keeping within it (fake clock and key count, inside batches),
exact test-and-set across generations, the window's rate, its frame, the CLI."""

import os
import pickle
import struct

import numpy as np
import pytest

import bloomkit
from bloomkit import RotatingBloomFilter, WindowSpec
from support import fpr_upper_bound, make_frame, split_frame


class FakeClock:
    def __init__(self, now=1_700_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def url(i):
    return f"https://example.com/page/{i}"


# ------------------------------------------------------------------ the window


def test_time_window_keeps_keys_for_the_window_and_forgets_them_by_one_interval_more():
    clock = FakeClock()
    f = RotatingBloomFilter(1000, 0.001, window="4h", generations=5, clock=clock)  # I = 1 h
    start = clock.now
    assert f.add("a") is False
    clock.now = start + 4 * 3600 - (start % 3600) - 1e-3  # the last instant of the 4-hour window ...
    assert "a" in f and f.contains("a")  # ... still remembers it
    clock.now = start - (start % 3600) + 5 * 3600  # W + I after the start of its hour: forgotten
    assert "a" not in f
    assert f.add("a") is False
    assert len(f) == 1


def test_time_window_lookups_follow_the_clock_without_writes_and_a_clock_going_back_moves_nothing():
    clock = FakeClock(0.0)
    f = RotatingBloomFilter(1000, 0.01, window="100s", generations=5, clock=clock)  # I = 25 s
    f.update([url(i) for i in range(100)])
    clock.now = 99.0
    assert f.contains_many([url(i) for i in range(100)]).all()
    clock.now = 130.0
    assert not f.contains_many([url(i) for i in range(100)]).any()
    assert len(f) == 0
    clock.now = 10.0  # back in time: the filter stays at 130 s
    assert f.current_generation == 5
    assert not f.contains_many([url(i) for i in range(100)]).any()


def test_key_window_forgets_after_w_keys_exactly_where_single_adds_would_even_inside_one_batch():
    keys = np.arange(10**6, dtype=np.uint64)
    batch = RotatingBloomFilter(10**5, 0.01, window=10**5, generations=5)  # n = 25,000
    batch.add_many(keys)  # one 10**6-key batch rotates 40 times
    assert batch.keys_seen == 10**6
    assert batch.current_generation == 39  # key 999,999's; the next key starts generation 40
    single = RotatingBloomFilter(10**5, 0.01, window=10**5, generations=5)
    for key in keys[:60_000].tolist():
        single.add(key)
    partial = RotatingBloomFilter(10**5, 0.01, window=10**5, generations=5)
    partial.add_many(keys[:60_000])
    assert partial == single
    # The last W keys are all kept; keys before the live generations are forgotten.
    assert batch.contains_many(keys[-(10**5) :]).all()
    old = batch.contains_many(keys[: 10**6 - 125_000]).mean()
    assert old < fpr_upper_bound(0.01, 10**6 - 125_000)


def test_exact_test_and_set_across_generations():
    f = RotatingBloomFilter(100, 1e-6, window=100, generations=4)  # n = 34
    assert f.add("old") is False
    f.update(range(40))  # 33 keys fill generation 0, 7 go to generation 1
    assert f.current_generation == 1
    assert len(f) == 41
    assert f.add("old") is True  # seen in generation 0: reported, and refreshed in 1
    assert len(f) == 41
    assert f.add_many(["new", "new", "old", 5]).tolist() == [False, True, True, True]
    assert [(g.generation, g.count) for g in f.generations_info] == [(0, 34), (1, 8)]
    # "old" was refreshed: it outlives generation 0.
    f.update(range(1000, 1000 + 90))  # keys 46..135: up to the last key of generation 3
    assert f.current_generation == 3 and "old" in f
    f.add("x")  # generation 4: generation 0 is gone, generation 1 still live
    assert "old" in f and 5 in f and 0 not in f


def test_dedup_through_the_shared_batch_path():
    from bloomkit import _batch

    f = RotatingBloomFilter(1000, 1e-6, window=6, generations=3)  # n = 3
    first_seen = f._first_seen_many(_batch.single_batch(["a", "b", "a", "c", "d", "e", "f", "g", "a"]))
    # "a" at 0, again at 2 (refreshed in generation 0); generations 0-2 hold 0..8; "a" at 8 is in
    # generation 2, with generation 0 still live: seen.
    assert (~first_seen).tolist() == [True, True, False, True, True, True, True, True, False]
    g = RotatingBloomFilter(1000, 1e-6, window=2, generations=3)  # n = 1: each key its own generation
    assert (~g._first_seen_many(_batch.single_batch(["a", "b", "c", "a"]))).tolist() == [True, True, True, True]


@pytest.mark.statistical
@pytest.mark.parametrize("layout", ["classic", "blocked512", "split_block"])
def test_full_window_false_positive_rate_within_its_bound(layout):
    # Every generation full (the worst moment, just before a rotation):
    # generations 0..4 of 50,000 keys each, then 10**6 absent probes.
    f = RotatingBloomFilter(200_000, 0.01, window=200_000, generations=5, layout=layout)
    f.update(np.arange(249_999, dtype=np.uint64))
    assert f.current_generation == 4 and len(f.generations_info) == 5
    probes = 10**6
    rate = f.contains_many(np.arange(2**40, 2**40 + probes, dtype=np.uint64)).mean()
    assert rate <= fpr_upper_bound(0.01, probes)
    # Each generation alone is at ~0.2 %: the OR of five is what is measured.
    assert rate > 0.005


def test_sizing_follows_the_window_formula():
    f = RotatingBloomFilter(10**6, 0.01, window="7d", generations=5, layout="classic")
    assert f.generation_capacity == 250_000
    assert f.generation_error_rate == pytest.approx(1 - 0.99 ** (1 / 5), rel=1e-12)
    assert bloomkit._core.window_error_rate(f.generation_error_rate, 5) == pytest.approx(0.01, rel=1e-12)
    params = bloomkit.calc.bloom_params(250_000, f.generation_error_rate, "classic")
    assert f.num_bits >= params.num_bits * 0.99
    assert f.nbytes >= 5 * f.num_bits // 8
    # A key window never sizes a generation above its n keys.
    assert RotatingBloomFilter(10**9, 0.01, window=1000).generation_capacity == 250


# ------------------------------------------------------------ bytes and files


def test_round_trips_are_byte_exact_and_keep_the_state():
    clock = FakeClock(1000.0)
    f = RotatingBloomFilter(4000, 0.01, window="1h", clock=clock)  # 1,000 keys per generation
    f.update(url(i) for i in range(500))
    clock.now += 1800
    f.update(url(i) for i in range(500, 700))
    data = f.to_bytes()
    back = RotatingBloomFilter.from_bytes(data)
    back.clock = clock
    assert back == f and back.to_bytes() == data
    assert bloomkit.load(data) == f
    copied = pickle.loads(pickle.dumps(f, protocol=5))
    copied.clock = clock
    assert copied == f
    assert copied.contains_many([url(i) for i in range(700)]).all()
    assert f.copy() == f and f.copy().clock is clock


def test_save_and_load(tmp_path):
    f = RotatingBloomFilter(1000, 0.01, window=1000)
    f.update(range(1500))
    path = tmp_path / "window.bkf"
    f.save(path)
    back = RotatingBloomFilter.load(path)
    assert back == f
    assert back.keys_seen == 1500 and back.current_generation == 5
    assert isinstance(bloomkit.load(path), RotatingBloomFilter)


def _frame(**changes):
    f = RotatingBloomFilter(1000, 0.01, window=1000, layout="classic")
    f.update(range(300))
    tag, params, payload = split_frame(f.to_bytes())
    fields = dict(
        zip(
            [
                "capacity",
                "error_rate",
                "seed",
                "layout",
                "unit",
                "generations",
                "keys",
                "seconds",
                "num_bits",
                "num_hashes",
                "reserved",
            ],
            struct.unpack("<QdIIIIQdQII", params),
        )
    )
    fields.update(changes)
    params = struct.pack("<QdIIIIQdQII", *fields.values())
    return make_frame(tag, params, payload)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"generations": 65}, "generations must be in \\[2, 64\\], got 65"),
        ({"generations": 0}, "generations must be in \\[2, 64\\], got 0"),
        ({"unit": 9}, "unknown window unit 9"),
        ({"keys": 0}, "window must be in \\[1, 2\\*\\*63\\)"),
        ({"seconds": 5.0}, "a key window has window seconds 0"),
        ({"num_bits": 2**62}, "payload is .* bytes but 5 generations of num_bits"),
        ({"num_hashes": 65}, "num_hashes must be in \\[1, 64\\]"),
        ({"error_rate": 1.5}, "error_rate must be in \\(0, 1\\)"),
        ({"reserved": 1}, "reserved field is not zero"),
        ({"layout": 7}, "unknown layout code 7"),
    ],
)
def test_hostile_params_are_refused_before_allocating(changes, message):
    with pytest.raises(ValueError, match=message):
        RotatingBloomFilter.from_bytes(_frame(**changes))


def test_hostile_state_is_refused():
    f = RotatingBloomFilter(1000, 0.01, window=1000, layout="classic")
    f.update(range(300))
    tag, params, payload = split_frame(f.to_bytes())
    wrong_current = struct.pack("<q", 7) + payload[8:]
    with pytest.raises(ValueError, match="current generation 7 does not follow from 300 keys seen"):
        RotatingBloomFilter.from_bytes(make_frame(tag, params, wrong_current))
    # Slot 3 claiming generation 1 (whose slot is 1).
    bad_slot = bytearray(payload)
    struct.pack_into("<q", bad_slot, 8 * (2 + 2 * 3), 1)
    with pytest.raises(ValueError, match="slot 3: generation 1 is not live in this slot"):
        RotatingBloomFilter.from_bytes(make_frame(tag, params, bytes(bad_slot)))
    with pytest.raises(ValueError):
        RotatingBloomFilter.from_bytes(make_frame(tag, params, payload[:-64]))


# ---------------------------------------------------------- arguments, display


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="window '7x' is not a positive number"):
        RotatingBloomFilter(100, window="7x")
    with pytest.raises(TypeError, match="clock must be a callable"):
        RotatingBloomFilter(100, window="7d", clock=5)
    with pytest.raises(TypeError, match="window"):
        RotatingBloomFilter(100)  # window is required
    with pytest.raises(ValueError, match="generations must be in \\[2, 64\\], got 1"):
        RotatingBloomFilter(100, window="7d", generations=1)


def test_repr_and_notebook_display():
    clock = FakeClock(0.0)
    f = RotatingBloomFilter(1000, 0.01, window="1h", clock=clock)
    f.update(range(10))
    text = repr(f)
    assert text.startswith("<RotatingBloomFilter ") and "window=1h" in text and "count=10 " in text
    assert "<table" in f._repr_html_() and "generation_fill" in f._repr_html_()
    assert f.window == WindowSpec("1h")


# ------------------------------------------------------------------------ CLI


def run_cli(*args, input=None):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "bloomkit", *map(str, args)], input=input, capture_output=True, timeout=120
    )


def test_cli_dedup_with_a_line_window_prints_a_line_again_after_the_window():
    lines = b"a\nb\na\nc\nd\ne\nf\ng\na\n"
    result = run_cli("dedup", "--window", "4", "--generations", "3", "--error-rate", 1e-6, input=lines)
    # n = 2 lines per generation. "a" at line 2 is a repeat (dropped) and is
    # remembered from there, in generation 1; line 8 starts generation 4,
    # whose live generations are 2..4: "a" is printed again.
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"a\nb\nc\nd\ne\nf\ng\na\n"


def test_cli_dedup_keeps_a_time_window_across_runs(tmp_path):
    state = str(tmp_path / "seen.bkf")
    old = RotatingBloomFilter(1000, 0.001, window="7d", clock=FakeClock(0.0))  # 1970: long forgotten
    old.update([b"old"])
    old.save(state)
    first = run_cli("dedup", "--window", "7d", "--filter", state, input=b"old\nnew\nnew\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout == b"old\nnew\n"
    second = run_cli("dedup", "--window", "7d", "--filter", state, input=b"old\nnew\nnewer\n")
    assert second.stdout == b"newer\n"
    mismatch = run_cli("dedup", "--window", "1d", "--filter", state, input=b"x\n")
    assert mismatch.returncode != 0 and b"the filter's window is 1w in 5 generations, not 1d" in mismatch.stderr
    assert os.path.getsize(state) == len(RotatingBloomFilter.load(state).to_bytes())


def test_cli_time_window_needs_a_capacity():
    result = run_cli("dedup", "--window", "7d", input=b"x\n")
    assert result.returncode != 0
    assert b"--window 7d needs --capacity" in result.stderr
    bad = run_cli("dedup", "--window", "7 days", "--capacity", 10, input=b"x\n")
    assert bad.returncode != 0 and b"--window: window '7 days'" in bad.stderr
