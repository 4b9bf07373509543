"""bloomkit.redis_window.RedisWindowFilter against a real redis-server on loopback.

A fake clock moves the window: keys are kept at least the window and
forgotten by one interval more; test-and-set is exact across generations and
4 processes; the window's false-positive rate stays within target; a second-long
window expires in Redis; a lost generation, registry or parameters key raises.
"""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest

from support import url_keys

redis = pytest.importorskip("redis")

from bloomkit import WindowSpec  # noqa: E402
from bloomkit.redis import FilterLostError  # noqa: E402
from bloomkit.redis_window import RedisWindowFilter  # noqa: E402

pytestmark = pytest.mark.integration


class FakeClock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def test_keys_are_kept_for_the_window_and_forgotten_by_one_interval_more(client):
    clock = FakeClock(1_000_000.0)  # one hour in 5 generations: I = 900 s; 1,000,000 s is in generation 1111
    seen = RedisWindowFilter(client, "crawl", 10_000, 0.01, window="1h", clock=clock)
    assert seen.spec == WindowSpec("1h", 5) and seen.spec.interval == 900
    early, late = url_keys(0, 500), url_keys(500, 500)
    assert not seen.add_many(early).any()
    clock.now += 1800  # two generations later
    assert seen.add_many(early[:100]).all()  # seen within the window: not new, and not added again
    assert not seen.add_many(late).any()
    assert client.exists("crawl:g:1111", "crawl:g:1113") == 2
    clock.now = 1_000_000.0 + 3599  # the window after the first adds: all kept
    assert seen.contains_many(early).all() and seen.contains_many(late).all()
    clock.now = 1_000_800.0 + 4500  # generation 1111 has left the window (W + I after its start)
    found = seen.contains_many(early)
    assert found.mean() < 0.02  # forgotten, re-sightings included (they were not re-added)
    assert seen.contains_many(late).all()  # added 1,800 s later: still within the window
    # Forgotten keys are new again; the expired generation's registry entry is cleaned on the next write.
    assert (~seen.add_many(early)).sum() >= 490
    assert 1111 not in {int(g) for g in client.zrange("crawl:gens", 0, -1) if g != b"created"}


def test_generations_expire_in_redis(client):
    seen = RedisWindowFilter(client, "short", 1_000, 0.01, window="2s", generations=2, clock_skew=0.2)
    seen.update(url_keys(0, 100))
    key = seen.generation_key(seen.spec.generation_at(time.time()))
    # Generation N lives until (N + 2) * I, I = 2 s, plus the skew allowance.
    assert 0 < client.pttl(key) <= 4_200
    time.sleep(0.1)
    assert seen.contains_many(url_keys(0, 100)).all()
    deadline = time.monotonic() + 6
    while client.exists(key) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not client.exists(key)
    assert not seen.contains_many(url_keys(0, 100)).any()  # expired: empty, not a FilterLostError


def test_a_batch_is_sequential_and_equal_to_a_local_filter_within_one_generation(client):
    import bloomkit

    clock = FakeClock(50.0)
    seen = RedisWindowFilter(client, "w", 8_000, 0.01, window="1h", clock=clock)
    local = bloomkit.BloomFilter.from_params(seen.num_bits, seen.num_hashes, layout="classic")
    keys = url_keys(0, 1500)
    batch = keys + keys[:10]
    np.testing.assert_array_equal(seen.add_many(batch), local.add_many(batch))
    assert client.get(seen.generation_key(0)) == local._payload()


def _window_worker(url, keys):
    connection = redis.Redis.from_url(url)
    seen = RedisWindowFilter(connection, "fleet", clock=lambda: 10_000.0)
    new = [
        key
        for first in range(0, len(keys), 50)
        for key, old in zip(keys[first : first + 50], seen.add_many(keys[first : first + 50]))
        if not old
    ]
    connection.close()
    return new


def test_four_processes_exact_test_and_set_across_generations(client, redis_url):
    clock = FakeClock(10_000.0 - 2 * 900)
    seen = RedisWindowFilter(client, "fleet", 40_000, 0.01, window="1h", clock=clock)
    older = url_keys(0, 3000)
    seen.update(older)  # two generations ago
    rng = np.random.default_rng(3)
    shared = url_keys(3000, 4000)
    parts = [list(rng.permutation(shared + older[:1000] + url_keys(10_000 * (p + 1), 1000))) for p in range(4)]
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        new = pool.starmap(_window_worker, [(redis_url, part) for part in parts])
    every = [key for part in new for key in part]
    assert len(every) == len(set(every))  # no key was new to two processes
    assert 0.99 * 8000 < len(every) <= 8000  # shared keys once, own keys once; the older ones never
    assert not set(every) & set(older)
    clock.now = 10_000.0
    assert seen.contains_many(shared + older).all()


@pytest.mark.statistical
def test_the_window_false_positive_rate_stays_within_target(client):
    clock = FakeClock(0.0)
    seen = RedisWindowFilter(client, "fpr", 100_000, 0.01, window="1h", clock=clock)
    keys = url_keys(0, 125_000)
    # 100,000 keys per hour, spread over 75 minutes: every live generation full.
    for step, first in enumerate(range(0, len(keys), 5000)):
        clock.now = step * 180.0
        seen.update(keys[first : first + 5000])
    live = seen.spec.live(seen.spec.generation_at(clock.now))
    assert len(live) == 5 and client.exists(*[seen.generation_key(g) for g in live]) == 5
    fpr = seen.contains_many(url_keys(10**7, 100_000)).mean()
    assert 0.004 < fpr <= 0.01
    assert seen.contains_many(keys[-100_000:]).all()


def test_a_lost_generation_registry_or_parameters_key_raises(client):
    clock = FakeClock(0.0)
    seen = RedisWindowFilter(client, "w", 10_000, 0.01, window="1h", clock=clock)
    seen.update(url_keys(0, 100))
    clock.now = 900.0
    seen.update(url_keys(100, 100))
    client.delete("w:g:0")
    for operation in (lambda: seen.contains_many(["x"]), lambda: seen.add("x")):
        with pytest.raises(FilterLostError, match="RedisWindowFilter 'w': Redis key 'w:g:0' is gone"):
            operation()
    assert client.exists("w:g:0") == 0  # nothing re-created
    client.delete("w:gens")
    with pytest.raises(FilterLostError, match="Redis key 'w:gens' is gone"):
        seen.add("x")
    client.flushdb()
    for operation in (lambda: seen.contains_many(["x"]), lambda: seen.add("x")):
        with pytest.raises(FilterLostError, match="Redis key 'w' is gone"):
            operation()
    assert client.dbsize() == 0


def _calls(client, command):
    return client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def test_a_sealed_generation_is_fetched_once_probed_here_and_still_checked_for_loss(client):
    start = 1111 * 900.0  # "1h" in 5 generations: I = 900 s, generation 1111 starts; clock_skew 60 s
    clock = FakeClock(start + 100)
    seen = RedisWindowFilter(client, "w", 10_000, 0.01, window="1h", clock=clock)
    first, second, absent = url_keys(0, 100), url_keys(100, 100), url_keys(10**6, 3000)  # 100 keys: one call
    assert not seen.add_many(first).any()  # the older generations 1107..1110 are sealed and were never created
    clock.now = start + 930  # generation 1112; 1111 ended 30 s ago, less than the skew: read in Redis
    client.config_resetstat()
    assert seen.add_many(first).all()
    assert _calls(client, "bitfield_ro") == 1 and _calls(client, "getrange") == 0
    clock.now = start + 961  # generation 1111 is sealed: fetched once, its keys answered here and not sent
    client.config_resetstat()
    answers = seen.add_many(first + second)
    assert answers[:100].all() and not answers[100:].any()
    assert _calls(client, "getrange") == 1 and _calls(client, "bitfield_ro") == 0
    assert seen.add_many(second).all() and seen.contains_many(first + second).all()
    assert seen.contains_many(absent).mean() < 0.01
    assert _calls(client, "getrange") == 1  # held since
    # Its loss is still an error, on adds and lookups alike, though the client holds its bits.
    client.delete("w:g:1111")
    for operation in (lambda: seen.contains_many(first), lambda: seen.add_many(first)):
        with pytest.raises(FilterLostError, match="RedisWindowFilter 'w': Redis key 'w:g:1111' is gone"):
            operation()


def test_held_and_unheld_sealed_generations_answer_alike_through_the_window(client):
    # One window holds its sealed generations, the other (as a window above the held-bytes bound would)
    # reads every generation in Redis: same answers, generation after generation, until keys are forgotten.
    clock = FakeClock(0.0)
    held = RedisWindowFilter(client, "held", 20_000, 0.01, window="1h", clock=clock, clock_skew=100)
    unheld = RedisWindowFilter(client, "unheld", 20_000, 0.01, window="1h", clock=clock, clock_skew=100)
    unheld._held_bytes = 0
    rng = np.random.default_rng(11)
    keys = url_keys(0, 6000)
    for step in range(40):  # 40 steps of 150 s: 6,000 s, the window and more
        clock.now = step * 150.0
        batch = [keys[int(i)] for i in rng.integers(0, min(6000, 300 * (step + 1)), size=200)]
        batch += keys[150 * step : 150 * step + 150]
        np.testing.assert_array_equal(held.add_many(batch), unheld.add_many(batch))
        probe = keys[: 150 * step + 150] + url_keys(10**6 + 1000 * step, 200)
        np.testing.assert_array_equal(held.contains_many(probe), unheld.contains_many(iter(probe)))
    assert sorted(held._held) == [2, 3, 4, 5] and not unheld._held  # at t = 5,850 the live ones are 2..6


def test_parameters_are_stored_and_checked(client):
    RedisWindowFilter(client, "w", 10_000, 0.01, window="7d")
    again = RedisWindowFilter(client, "w")
    assert again.spec == WindowSpec("7d") and again.capacity == 10_000
    with pytest.raises(ValueError, match="other parameters: window='1d' \\(asked '7d'\\)|window="):
        RedisWindowFilter(client, "w", 10_000, 0.01, window="1d")
    with pytest.raises(ValueError, match="a Redis window is a duration"):
        RedisWindowFilter(client, "k", 10_000, 0.01, window=10**6)
