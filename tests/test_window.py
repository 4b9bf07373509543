"""WindowSpec (python/bloomkit/_window.py over cpp/include/bloomkit/window.hpp):
parsing, generation numbers under a fake clock and a key count, and the
per-generation sizing that keeps the OR of all live generations at the rate."""

import datetime
import math
import pickle

import pytest

from bloomkit import _core
from bloomkit._window import WindowSpec


class FakeClock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.mark.parametrize(
    "window, unit, length, interval",
    [
        ("7d", "seconds", 604800.0, 151200.0),
        ("12h", "seconds", 43200.0, 10800.0),
        ("90m", "seconds", 5400.0, 1350.0),
        ("30s", "seconds", 30.0, 7.5),
        (datetime.timedelta(hours=2), "seconds", 7200.0, 1800.0),
        (1e6, "keys", 1000000, 250000),
        ("1e6", "keys", 1000000, 250000),
        (1000, "keys", 1000, 250),
        (1001, "keys", 1001, 251),  # ceil(1001 / 4)
    ],
)
def test_windows_parse_to_their_length_and_interval(window, unit, length, interval):
    spec = WindowSpec(window)
    assert (spec.unit, spec.length, spec.generations, spec.interval) == (unit, length, 5, interval)
    assert type(spec.length) is type(length)
    assert spec.kept_at_least >= spec.length
    assert spec.forgotten_by == 5 * interval
    assert WindowSpec(spec.text, 5) == spec  # text reads back


def test_generations_set_the_interval_and_the_forgetting_bound():
    spec = WindowSpec("8h", generations=9)
    assert spec.interval == 3600.0
    assert spec.kept_at_least == 8 * 3600.0
    assert spec.forgotten_by == 9 * 3600.0
    assert WindowSpec(spec) == spec
    assert WindowSpec("8h", 9) != WindowSpec("8h", 5)
    assert WindowSpec("480m") == WindowSpec("8h")
    assert hash(WindowSpec("480m")) == hash(WindowSpec("8h"))


@pytest.mark.parametrize(
    "window, message",
    [
        ("7 d", "window '7 d' is not a positive number of units; expected a key count such as '1e6'"),
        ("-7d", "window '-7d' is not a positive number"),
        ("1.5", "window '1.5' is not a whole number of keys"),
        (1.5, "window '1.5' is not a whole number of keys"),
        (0, "window '0' is not a positive number"),
        (-3, "window '-3' is not a positive number"),
        ("1e19", "window '1e19' has more than 2\\*\\*63 - 1 keys"),
        ("0.0001s", "a time window must be in \\[0.001 s, 1e10 s\\], got 0.0001 s"),
        (datetime.timedelta(0), "window '0.0s' is not a positive number of units"),
        ("week", "window 'week' is not a positive number"),
    ],
)
def test_malformed_windows_are_a_value_error_naming_them(window, message):
    with pytest.raises(ValueError, match=message):
        WindowSpec(window)


@pytest.mark.parametrize("generations", [1, 65, -1, 2**40])
def test_generations_outside_2_to_64_are_refused(generations):
    with pytest.raises(ValueError, match=f"generations must be in \\[2, 64\\], got {generations}"):
        WindowSpec("7d", generations)


@pytest.mark.parametrize("window", [None, True, [7], b"7d"])
def test_windows_of_other_types_are_a_type_error(window):
    with pytest.raises(TypeError, match="window must be a duration"):
        WindowSpec(window)


def test_time_generations_follow_a_fake_clock():
    spec = WindowSpec("4h")  # I = 1 h, 5 live generations
    clock = FakeClock(1_700_000_000.0)
    added = spec.generation_at(clock())
    assert added == math.floor(1_700_000_000.0 / 3600.0)
    # Kept for at least the window, whatever the add time inside its interval ...
    for offset in (0.0, 1799.5, 3599.9):
        clock.now = 3600.0 * added + offset
        g = spec.generation_at(clock())
        clock.now += 4 * 3600.0 - 1e-3
        assert g in spec.live(spec.generation_at(clock()))
        # ... and forgotten one interval later at the latest.
        clock.now = 3600.0 * added + offset + 5 * 3600.0
        assert g not in spec.live(spec.generation_at(clock()))
    assert [spec.slot(g) for g in spec.live(added)] == sorted(
        [spec.slot(g) for g in spec.live(added)], key=lambda s: (s - spec.slot(added) - 1) % 5
    )
    assert sorted(spec.slot(g) for g in spec.live(added)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="clock value nan is outside the window's range"):
        spec.generation_at(float("nan"))
    with pytest.raises(ValueError, match="a time window has no generation after a key count"):
        spec.generation_after(10)


def test_key_generations_count_every_key():
    spec = WindowSpec(1000)  # 250 keys per generation
    assert [spec.generation_after(c) for c in (0, 249, 250, 999, 1000, 10**18)] == [0, 0, 1, 3, 4, 4 * 10**15]
    for position in range(0, 3000, 13):
        g = spec.generation_after(position)
        assert spec.is_live(g, spec.generation_after(position + 1000))
        assert not spec.is_live(g, spec.generation_after(position + 1250))
    with pytest.raises(ValueError, match="a key window has no generation at a time"):
        spec.generation_at(0.0)


@pytest.mark.parametrize("generations", [2, 5, 8, 64])
@pytest.mark.parametrize("error_rate", [0.1, 0.01, 1e-6])
def test_generation_sizing_keeps_the_whole_window_at_the_rate(generations, error_rate):
    spec = WindowSpec("7d", generations)
    p_g = spec.generation_error_rate(error_rate)
    assert p_g == pytest.approx(1 - (1 - error_rate) ** (1 / generations), rel=1e-9)
    assert _core.window_error_rate(p_g, generations) == pytest.approx(error_rate, rel=1e-12)
    assert spec.generation_capacity(10**6) == math.ceil(10**6 / (generations - 1))


def test_pickle_and_repr():
    spec = WindowSpec("90m", 7)
    assert repr(spec) == "WindowSpec('90m', generations=7)"
    assert str(WindowSpec(1e6)) == "1000000"
    copy = pickle.loads(pickle.dumps(spec))
    assert type(copy) is WindowSpec and copy == spec
