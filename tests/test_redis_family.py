"""bloomkit.redis_family.RedisFilterFamily against a real redis-server on loopback.

Per-member exact test-and-set from 4 processes, the exact count, rotation at
the fill asked for (false-positive rate within target, recent keys kept), TTL
expiry, and loss of a member's keys or of the family detected, never read as
an empty member.
"""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest

import bloomkit
from support import url_keys

redis = pytest.importorskip("redis")
from redis_server import RestartableRedis  # noqa: E402

from bloomkit.redis import FilterLostError  # noqa: E402
from bloomkit.redis_family import RedisFilterFamily, family_geometry  # noqa: E402

pytestmark = pytest.mark.integration


def _local_twin(family):
    """A local filter with a generation's geometry: its answers and bits are a member's until it rotates."""
    return bloomkit.BloomFilter.from_params(family.num_bits, family.num_hashes, seed=family.seed, layout="classic")


def _generation_bits(client, key, family) -> bytes:
    return client.get(key)[: family.nbytes]


def _bits_set_margin(m, k, n, sigmas=4.0):
    """Expected bits set by n keys of k probes in m bits, plus `sigmas` standard deviations (balls into bins)."""
    t = k * n
    clear = m * (1 - 1 / m) ** t
    variance = clear + m * (m - 1) * (1 - 2 / m) ** t - clear**2
    return (m - clear) + sigmas * variance**0.5


def test_geometry_keeps_each_generation_at_half_the_target_when_it_rotates():
    # k = ceil(ln(0.005) / ln(0.5)) = 8; the expected-fill size 8 * 1000 / ln 2 = 11,542 bits would rotate
    # half of the members holding exactly 1,000 keys; the 4-sigma margin (plus the k bits by which rotation
    # comes early) makes it 11,968.
    assert family_geometry(1000, 0.01, 0.5) == (11_968, 8)
    for capacity, error_rate, rotate_at in [(1000, 0.01, 0.5), (50, 0.001, 0.3), (10**6, 0.05, 0.7), (1, 0.01, 0.5)]:
        m, k = family_geometry(capacity, error_rate, rotate_at)
        assert m % 64 == 0
        assert rotate_at**k <= error_rate / 2 < rotate_at ** (k - 1)
        # The fewest whole words at which capacity keys stay k bits under the rotation point at 4 sigma.
        assert _bits_set_margin(m, k, capacity) + k <= np.floor(rotate_at * m)
        assert m == 64 or _bits_set_margin(m - 64, k, capacity) + k > np.floor(rotate_at * (m - 64))
    with pytest.raises(ValueError, match="rotate_at must be a fill fraction strictly between 0 and 1, got 1$"):
        family_geometry(1000, 0.01, 1.0)
    with pytest.raises(ValueError, match="error_rate 1e-30 at rotate_at 0.5 needs 101 hashes; at most 64"):
        family_geometry(1000, 1e-30, 0.5)
    with pytest.raises(ValueError, match="at most 2\\*\\*32 bits"):
        family_geometry(10**9, 0.01, 0.5)


def test_a_member_holding_its_capacity_is_one_generation(client):
    # 300 members, each given exactly `capacity` distinct keys: none rotates, so a member at capacity costs
    # one generation. (Sized at the expected fill, 11,584 bits, 119 of these 300 members rotated.)
    family = RedisFilterFamily(client, "cap", 1000, 0.01)
    members = [f"u{i}" for i in range(300)]
    for first in range(0, 300, 50):
        family.update([(m, [f"{m}:item:{j}" for j in range(1000)]) for m in members[first : first + 50]])
    assert client.exists(*[f"cap:p:{m}" for m in members]) == 0
    counts = [family.member(m).count for m in members[:20]]
    assert min(counts) >= 985  # the rest were false positives at insert (at most 0.5 % each)


def test_a_member_answers_and_stores_exactly_as_a_local_filter(client):
    family = RedisFilterFamily(client, "shown", 1000, 0.01)
    local = _local_twin(family)
    keys = url_keys(0, 600)
    batches = [keys[i : i + 37] + keys[i : i + 3] for i in range(0, 600, 37)]  # duplicates inside a batch
    new = 0
    for batch in batches:
        expected = local.add_many(batch)
        np.testing.assert_array_equal(family.member("u1").add_many(batch), expected)
        new += int((~expected).sum())
    assert _generation_bits(client, "shown:c:u1", family) == local._payload()
    assert family.member("u1").count == new > 590  # 600 distinct keys, a few false positives at insert
    assert family.member("u1").contains_many(keys).all()
    probes = url_keys(10**6, 20_000)
    np.testing.assert_array_equal(family.member("u1").contains_many(probes), local.contains_many(probes))


def test_key_lists_and_other_batches_answer_and_store_the_same_through_rotations(client):
    # Lists, tuples and arrays go through the core's add_many/contains_many on a generation's bits, other
    # batches (an iterator here) through their bit positions: both give the same answers, counts and bytes,
    # with repeats inside a batch, keys re-sent from the previous generation and rotations within a call.
    by_list = RedisFilterFamily(client, "lists", 200, 0.01)
    by_positions = RedisFilterFamily(client, "iters", 200, 0.01)
    keys = url_keys(0, 900)
    rng = np.random.default_rng(3)
    previous_generations = set()
    for first in range(0, 900, 30):
        batch = keys[first : first + 30] + [keys[int(i)] for i in rng.integers(0, first + 30, size=12)]
        pairs = [("a", batch), ("b", tuple(batch[::2])), ("a", batch[:5])]
        listed = by_list.add_many(pairs)
        walked = by_positions.add_many([(member, iter(list(member_keys))) for member, member_keys in pairs])
        for got, expected in zip(listed, walked):
            np.testing.assert_array_equal(got, expected)
        previous_generations.add(client.get("lists:p:a"))
        for kind in ("c", "p"):
            for member in ("a", "b"):
                assert client.get(f"lists:{kind}:{member}") == client.get(f"iters:{kind}:{member}")
    assert len(previous_generations - {None}) >= 4  # ~1,100 keys into "a", ~200 per generation
    assert by_list.counts(["a", "b"]) == by_positions.counts(["a", "b"])
    probes = keys + url_keys(10**6, 3000)
    np.testing.assert_array_equal(
        by_list.member("a").contains_many(probes), by_positions.member("a").contains_many(iter(probes))
    )
    np.testing.assert_array_equal(
        by_list.member("b").contains_many(np.array(probes)), by_positions.member("b").contains_many(iter(probes))
    )


def test_one_call_serves_many_members_in_order(client):
    family = RedisFilterFamily(client, "shown", 1000, 0.01)
    answers = family.add_many([("a", ["x", "y"]), ("b", ["x"]), ("a", ["x", "z", "z"]), (b"b", [])])
    assert [a.tolist() for a in answers] == [[False, False], [False], [True, False, True], []]
    found = family.contains_many([("a", ["x", "y", "z", "w"]), ("b", ["x", "y"]), ("never", ["x"])])
    assert [f.tolist() for f in found] == [[True, True, True, False], [True, False], [False]]
    assert family.counts(["a", "b", "never"]) == [3, 1, 0]
    with pytest.raises(TypeError, match="iterable of \\(member, keys\\) pairs"):
        family.add_many([("a", ["x"]), "b"])
    with pytest.raises(TypeError, match="named by a str or bytes, got int"):
        family.add_many([(7, ["x"])])
    assert family.counts(["a", "b"]) == [3, 1]  # a bad batch sends nothing


def test_opening_a_member_costs_no_round_trip(client):
    family = RedisFilterFamily(client, "shown", 1000, 0.01)
    client.config_resetstat()
    members = [family.member(f"user:{i}") for i in range(1000)]
    calls = {name: stat["calls"] for name, stat in client.info("commandstats").items()}
    assert calls == {"cmdstat_config|resetstat": 1}  # the reset itself; the INFO is counted after its reply
    assert members[5].name == "user:5" and client.dbsize() == 1  # only the parameters key
    # Reopening the family reads its parameters; other parameters are refused.
    again = RedisFilterFamily(client, "shown")
    assert (again.num_bits, again.num_hashes, again.ttl) == (family.num_bits, family.num_hashes, None)
    with pytest.raises(ValueError, match="other parameters: capacity=1000 \\(asked 2000\\)"):
        RedisFilterFamily(client, "shown", 2000, 0.01)
    with pytest.raises(KeyError, match="holds no bloomkit filter family"):
        RedisFilterFamily(client, "other")


def _family_worker(url, process, members, shared_keys, own_keys):
    """Adds shared keys (every process) and own keys (this process only) to each member, in batches of pairs."""
    connection = redis.Redis.from_url(url)
    family = RedisFilterFamily(connection, "shown")
    rng = np.random.default_rng(process)
    work = [(m, key) for m in members for key in shared_keys[m] + own_keys[m]]
    order = rng.permutation(len(work))
    new = {}
    for first in range(0, len(order), 400):
        chunk = [work[i] for i in order[first : first + 400]]
        by_member = {}
        for member, key in chunk:
            by_member.setdefault(member, []).append(key)
        pairs = list(by_member.items())
        for (member, keys), answers in zip(pairs, family.add_many(pairs)):
            for key, present in zip(keys, answers):
                if not present:
                    new[(member, key)] = new.get((member, key), 0) + 1
    connection.close()
    return new


def test_four_processes_exact_test_and_set_per_member(client, redis_url):
    family = RedisFilterFamily(client, "shown", 1000, 0.01)
    members = [f"user:{i}" for i in range(120)]
    shared = {m: [f"{m}/item/{j}" for j in range(150)] for m in members}
    own = [{m: [f"{m}/p{p}/{j}" for j in range(40)] for m in members} for p in range(4)]
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        results = pool.starmap(_family_worker, [(redis_url, p, members, shared, own[p]) for p in range(4)])
    new = {}
    for result in results:
        for pair, times in result.items():
            new[pair] = new.get(pair, 0) + times
    # Exact test-and-set: no key was ever new to two processes, though all four raced to add it.
    assert max(new.values()) == 1
    distinct = len(members) * (150 + 4 * 40)
    assert distinct * 0.995 < len(new) <= distinct  # the rest: false positives at insert
    # The exact count of each member is the number of times it answered "new".
    counts = family.counts(members)
    for member, count in zip(members, counts):
        assert count == sum(1 for (m, _key) in new if m == member)
    # Every acknowledged key is found (310 keys per member: no member rotated).
    pairs = [(m, shared[m] + [key for p in range(4) for key in own[p][m]]) for m in members]
    assert all(found.all() for found in family.contains_many(pairs))
    assert client.exists(*[f"shown:p:{m}" for m in members]) == 0


def test_rotation_at_the_fill_asked_for_keeps_recent_keys_and_forgets_old_ones(client):
    family = RedisFilterFamily(client, "feed", 200, 0.01, rotate_at=0.5)
    member = family.member("u")
    keys = url_keys(0, 1000)
    answers, fills, rotated = [], [], []
    for batch, first in enumerate(range(0, 1000, 25)):
        had_previous = client.get("feed:p:u")
        answers.append(member.add_many(keys[first : first + 25]))
        current = _generation_bits(client, "feed:c:u", family)
        fills.append(bin(int.from_bytes(current, "little")).count("1") / family.num_bits)
        if had_previous != client.get("feed:p:u"):
            rotated.append(batch)
    inserted = ~np.concatenate(answers)  # the rest were false positives at insert: never stored
    assert int(inserted.sum()) == member.count  # carried through the rotations
    assert 4 <= len(rotated) <= 6  # 1,000 keys, ~200 per generation
    assert max(fills) <= 0.5  # a generation never passes rotate_at
    # Every key inserted after the batch of the last rotation but one is found; the oldest keys are forgotten.
    kept_from = 25 * (rotated[-2] + 1)
    assert 1000 - kept_from >= 200
    assert member.contains_many([key for key, new in zip(keys[kept_from:], inserted[kept_from:]) if new]).all()
    assert member.contains_many(keys[:200]).mean() < 0.05
    current = _generation_bits(client, "feed:c:u", family)
    # A key found in the previous generation answers "present" and is not copied forward.
    old_key = next(key for key, new in zip(keys[kept_from:], inserted[kept_from:]) if new)
    assert member.add(old_key) is True
    assert _generation_bits(client, "feed:c:u", family) == current


@pytest.mark.statistical
def test_rotation_keeps_the_false_positive_rate_within_target(client):
    family = RedisFilterFamily(client, "shown", 1000, 0.01)
    member = family.member("u")
    keys = url_keys(0, 4000)
    probes = url_keys(10**7, 100_000)
    worst = 0.0
    answers = []
    for first in range(0, 4000, 10):
        answers.append(member.add_many(keys[first : first + 10]))
        if first % 250 == 240:  # 16 checkpoints, on either side of each rotation
            worst = max(worst, float(member.contains_many(probes).mean()))
    assert client.exists("shown:p:u") == 1
    # Each generation rotates at half full with k = 8: at most 0.5**8 = 0.39 % each, 0.78 % together.
    assert 0.003 < worst <= 0.01
    # The last 1,000 keys inserted (those answered "new": a false positive at insert was never stored).
    inserted = ~np.concatenate(answers)[-1000:]
    assert member.contains_many([key for key, new in zip(keys[-1000:], inserted) if new]).all()


def test_ttl_expiry_is_observed_and_is_not_a_loss(client):
    family = RedisFilterFamily(client, "tmp", 1000, 0.01, ttl=0.6)
    family.member("a").update(["x", "y"])
    assert 0 < client.pttl("tmp:c:a") <= 600
    time.sleep(0.75)
    assert family.member("a").contains_many(["x", "y"]).tolist() == [False, False]
    assert family.counts(["a"]) == [0]
    assert family.member("a").add("x") is False  # a fresh member, not a FilterLostError
    # refresh_ttl: each write restarts the clock.
    refreshed = RedisFilterFamily(client, "tmp2", 1000, 0.01, ttl=0.6, refresh_ttl=True)
    member = refreshed.member("b")
    member.add("x")
    for _ in range(4):
        time.sleep(0.3)
        member.add("y")
    assert member.contains_many(["x", "y"]).all()  # 1.2 s after the first write
    time.sleep(0.75)
    assert not member.contains_many(["x", "y"]).any()


def test_loss_of_a_member_key_is_detected_not_read_as_empty(client):
    family = RedisFilterFamily(client, "shown", 200, 0.01)
    family.add_many([("a", url_keys(0, 150)), ("b", url_keys(0, 400)), ("c", ["x"])])
    assert client.exists("shown:p:b") == 1  # b rotated
    client.delete("shown:c:a")
    for operation in (lambda: family.member("a").contains("x"), lambda: family.member("a").add("x")):
        with pytest.raises(FilterLostError, match="member b'a': Redis key 'shown:c:a' is gone"):
            operation()
    assert client.exists("shown:c:a") == 0  # nothing re-created
    client.delete("shown:p:b")
    with pytest.raises(FilterLostError, match="member b'b': Redis key 'shown:p:b' is gone"):
        family.contains_many([("c", ["x"]), ("b", ["x"])])
    # An explicit delete makes a member empty, not lost.
    family.member("a").delete()
    assert family.member("a").add("x") is False
    client.flushdb()
    for operation in (lambda: family.member("c").contains("x"), lambda: family.member("c").add("x")):
        with pytest.raises(FilterLostError, match="Redis key 'shown' is gone"):
            operation()
    assert client.dbsize() == 0


def test_restart_without_persistence_is_a_loss(tmp_path):
    try:
        server = RestartableRedis(tmp_path)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    with server:
        connection = redis.Redis.from_url(server.url)
        family = RedisFilterFamily(connection, "shown", 1000, 0.01)
        family.member("u").update(url_keys(0, 100))
        server.kill()
        server.start()
        for attempt in range(2):  # the first call meets the dead socket
            try:
                family.member("u").contains_many(url_keys(0, 10))
            except redis.ConnectionError:
                assert attempt == 0
                continue
            except FilterLostError as error:
                assert "Redis key 'shown' is gone" in str(error)
                break
        else:
            pytest.fail("the lost family was read as empty")
        with pytest.raises(FilterLostError, match="Redis key 'shown' is gone"):
            family.member("u").add("x")
        assert connection.dbsize() == 0
        connection.close()


def test_the_member_core_refuses_generations_shorter_than_the_geometry(client):
    # The core reads a generation's bytes in place: a shorter buffer is refused before anything is read.
    family = RedisFilterFamily(client, "short", 1000, 0.01)
    core = family._positions
    whole = bytes(family.nbytes + 16)
    with pytest.raises(ValueError, match=f"the current generation is 10 bytes, the geometry needs {family.nbytes}$"):
        core._member_contains_many(["x"], bytes(10), whole)
    with pytest.raises(ValueError, match=f"the previous generation is {family.nbytes - 1} bytes"):
        core._member_add_many(["x"], whole, bytes(family.nbytes - 1), family._limit)
    with pytest.raises(TypeError, match="expected a bytes-like object, got 'int'"):
        core._member_add_many(["x"], whole, 5, family._limit)
    found, bits, rotated, fresh, before = core._member_add_many(["x", "y", "x"], whole, b"", family._limit)
    assert found.tolist() == [False, False, True] and rotated is None and (fresh, before) == (2, 2)
    assert len(bits) == family.nbytes and core._member_contains_many(["x", "y", "z"], bits, b"").tolist() == [
        True,
        True,
        False,
    ]
