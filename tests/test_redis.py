"""bloomkit.redis against a real redis-server started on a free loopback port."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

import bloomkit
from bloomkit import _types
from support import fpr_upper_bound, url_keys

redis = pytest.importorskip("redis")

from bloomkit.redis import DEFAULT_SHARD_BITS, RedisBloomFilter, load, save  # noqa: E402

pytestmark = pytest.mark.integration


def bitmap(filter: bloomkit.BloomFilter) -> bytes:
    return filter._payload()


# A filter of 10,240 bits (blocked512, the default for 1,000 keys at 1 %: split_block's whole blocks would
# take 10,752, above 1.10x classic); 1,024-bit shards split it over 10 Redis strings.
SMALL = dict(capacity=1000, error_rate=0.01, seed=7)


@pytest.mark.parametrize("shard_bits", [DEFAULT_SHARD_BITS, 1024])
def test_sequential_batches_match_local_filter_exactly(client, shard_bits):
    remote = RedisBloomFilter(client, "seen", **SMALL, shard_bits=shard_bits)
    local = bloomkit.BloomFilter(**SMALL)
    assert local.layout == "blocked512" and local.num_bits == 10_240
    assert remote.num_shards == (1 if shard_bits == DEFAULT_SHARD_BITS else 10)
    rng = np.random.default_rng(1)
    for _ in range(20):
        batch = [f"k{i}" for i in rng.integers(0, 1500, size=50)]  # repeats within and across batches
        np.testing.assert_array_equal(remote.add_many(batch), local.add_many(batch))
    assert remote.add("k1") == local.add("k1")
    assert remote.add("fresh-key") is False and local.add("fresh-key") is False
    assert remote.add("fresh-key") is True
    local.add("fresh-key")
    assert remote.to_local() == local
    assert bitmap(remote.to_local()) == bitmap(local)
    assert len(remote) == len(local) and remote.fill_ratio == local.fill_ratio
    probes = [f"p{i}" for i in range(3000)]
    np.testing.assert_array_equal(remote.contains_many(probes), local.contains_many(probes))
    # The shards are the payload bytes, split, each allocated at full length at creation.
    assert sum(client.strlen(k) for k in remote.shard_keys) == local.nbytes


def test_repeated_key_in_one_batch_and_key_kinds(client):
    remote = RedisBloomFilter(client, "kinds", 10_000, 0.001)
    local = bloomkit.BloomFilter(10_000, 0.001)
    keys = ["x", "x", b"x", 5, np.uint64(5), "é", "é".encode(), np.int32(-1), 2**64 - 1]
    np.testing.assert_array_equal(remote.add_many(keys), [False, True, True, False, True, False, True, False, True])
    local.update(keys)
    assert remote.to_local() == local
    ints = np.arange(1000, dtype=np.uint64)
    np.testing.assert_array_equal(remote.add_many(ints), local.add_many(ints))
    assert 5 in remote and "é" in remote and remote.contains(b"x")
    assert remote.to_local() == local


def test_no_false_negatives_and_fpr_within_bound(client):
    n = 20_000
    remote = RedisBloomFilter(client, "fpr", n, 0.01)
    keys = url_keys(0, n)
    for first in range(0, n, 5000):
        remote.update(keys[first : first + 5000])
    assert remote.contains_many(keys).all()
    probes = url_keys(10**7, 20_000)
    measured = remote.contains_many(probes).mean()
    assert measured <= fpr_upper_bound(0.01, len(probes))
    assert abs(len(remote) - n) < 0.02 * n


def test_bad_key_sends_nothing(client):
    remote = RedisBloomFilter(client, "bad", **SMALL, shard_bits=1024)
    with pytest.raises(TypeError, match="unsupported type 'dict'"):
        remote.add_many(["ok", {}])
    with pytest.raises(ValueError, match="2\\*\\*64"):
        remote.update([2**64])
    assert remote.to_local() == bloomkit.BloomFilter(**SMALL)
    assert len(remote) == 0


def test_second_process_with_other_parameters_gets_clear_error(client):
    RedisBloomFilter(client, "shared", 1000, 0.01, seed=1)
    RedisBloomFilter(client, "shared", 1000, 0.01, seed=1)  # same parameters: fine
    with pytest.raises(
        ValueError, match=r"already holds a Bloom filter with other parameters: .*error_rate=0\.01 \(asked 0\.001\)"
    ):
        RedisBloomFilter(client, "shared", 1000, 0.001, seed=1)
    with pytest.raises(ValueError, match=r"seed=1 \(asked 2\)"):
        RedisBloomFilter(client, "shared", 1000, 0.01, seed=2)
    with pytest.raises(ValueError, match=r"shard_bits=2147483648 \(asked 1024\)"):
        RedisBloomFilter(client, "shared", 1000, 0.01, seed=1, shard_bits=1024)
    opened = RedisBloomFilter(client, "shared")  # stored parameters
    assert (opened.capacity, opened.error_rate, opened.seed) == (1000, 0.01, 1)
    with pytest.raises(KeyError, match="holds no bloomkit filter"):
        RedisBloomFilter(client, "missing")


def test_keys_holding_other_data_are_refused(client):
    client.set("text", "hello")
    client.hset("hash", "a", "b")
    with pytest.raises(ValueError, match="not a bloomkit RedisBloomFilter"):
        RedisBloomFilter(client, "text", 1000)
    with pytest.raises(ValueError, match="not a bloomkit filter: WRONGTYPE"):
        RedisBloomFilter(client, "hash", 1000)
    with pytest.raises(ValueError, match="not a saved bloomkit filter"):
        load(client, "text")
    assert client.get("text") == b"hello"


def test_argument_checks(client, redis_url):
    with pytest.raises(ValueError, match="multiple of 64"):
        RedisBloomFilter(client, "a", 1000, shard_bits=100)
    with pytest.raises(ValueError, match="multiple of 64"):
        RedisBloomFilter(client, "a", 1000, shard_bits=2**33)
    with pytest.raises(TypeError, match="shard_bits must be an int"):
        RedisBloomFilter(client, "a", 1000, shard_bits=1024.0)
    decoding = redis.Redis.from_url(redis_url, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses=False"):
        RedisBloomFilter(decoding, "a", 1000)
    with pytest.raises(TypeError, match="needs a bloomkit.BloomFilter"):
        RedisBloomFilter.from_local(client, "a", bloomkit.CuckooFilter(100))
    keyed = bloomkit.BloomFilter(100, secret_key=b"k" * 16)
    keyed.add("x")  # unkeyed clients would never find it
    with pytest.raises(ValueError, match="from_local needs an unkeyed BloomFilter"):
        RedisBloomFilter.from_local(client, "a", keyed)
    assert client.keys("*") == []


def test_from_local_to_local_round_trip(client):
    local = bloomkit.BloomFilter(50_000, 0.001, seed=3)
    local.update(url_keys(0, 30_000))
    remote = RedisBloomFilter.from_local(client, "up", local, shard_bits=64 * 1000)
    assert remote.num_shards == -(-local.num_bits // 64_000)
    assert remote.to_local() == local
    assert remote.contains_many(url_keys(0, 30_000)).all()
    again = RedisBloomFilter(client, "up")  # a second process opens it by name
    assert again.to_local() == local
    # from_local replaces the bits.
    other = bloomkit.BloomFilter(50_000, 0.001, seed=3)
    other.add("only")
    RedisBloomFilter.from_local(client, "up", other, shard_bits=64 * 1000)
    assert again.to_local() == other
    # An explicit geometry round-trips too.
    odd = bloomkit.BloomFilter.from_params(12_345, 5, seed=9)
    odd.update(["a", "b"])
    uploaded = RedisBloomFilter.from_local(client, "odd", odd)
    assert RedisBloomFilter(client, "odd").to_local() == odd == uploaded.to_local()
    remote.clear()
    assert len(remote) == 0 and client.exists("up") == 1
    assert [client.strlen(key) for key in remote.shard_keys] == [
        stop - start for start, stop in remote._shard_byte_ranges()
    ]
    remote.delete()
    assert client.exists("up", *remote.shard_keys) == 0


def _worker(url, key, keys, batch):
    connection = redis.Redis.from_url(url)
    remote = RedisBloomFilter(connection, key, 40_000, 0.01, shard_bits=32768)
    fresh = 0
    for first in range(0, len(keys), batch):
        fresh += int((~remote.add_many(keys[first : first + batch])).sum())
    connection.close()
    return fresh


def test_four_processes_add_disjoint_sets_concurrently(client, redis_url):
    parts = [url_keys(i * 8000, 8000) for i in range(4)]
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        fresh = pool.starmap(_worker, [(redis_url, "crawl", part, 50) for part in parts])
    local = bloomkit.BloomFilter(40_000, 0.01)
    for part in parts:
        local.update(part)
    remote = RedisBloomFilter(client, "crawl")
    assert remote.num_shards == 13  # 421,376 bits in 32,768-bit shards, written concurrently
    every = [key for part in parts for key in part]
    assert remote.contains_many(every).all()
    assert remote.to_local() == local  # no bit lost
    # Each key was new to its own process except for false positives.
    assert sum(fresh) > 0.98 * len(every)


@pytest.mark.parametrize("row", [row for row in _types.FRAMED], ids=lambda row: row.name)
def test_save_load_any_filter_type_chunked(client, row):
    filter = row.build(url_keys(0, 3000), 5000)
    save(client, "user:42", filter, chunk_size=1000)
    header = client.get("user:42")
    assert b'"chunks": ' in header
    loaded = load(client, "user:42")
    assert type(loaded) is type(filter) and loaded == filter
    assert loaded.to_bytes() == filter.to_bytes()


def test_save_replaces_and_removes_stale_chunks(client):
    big = bloomkit.BloomFilter(20_000, 0.01)
    save(client, "f", big, chunk_size=1000)
    chunks_before = len(client.keys("f:frame:*"))
    small = bloomkit.BloomFilter(100, 0.01)
    small.add("a")
    save(client, "f", small, chunk_size=1000)
    assert len(client.keys("f:frame:*")) == 1 < chunks_before
    assert load(client, "f") == small


def test_load_detects_corruption_and_missing_data(client):
    filter = bloomkit.BloomFilter(20_000, 0.01)
    filter.update(url_keys(0, 1000))
    save(client, "f", filter, chunk_size=4096)
    client.setrange("f:frame:2", 100, b"\x00\x01")
    with pytest.raises(ValueError, match="fails its checksum"):
        load(client, "f")
    client.append("f:frame:2", b"x")
    with pytest.raises(ValueError, match="bytes, its header says"):
        load(client, "f")
    client.delete("f:frame:1")
    with pytest.raises(ValueError, match="a chunk is missing"):
        load(client, "f")
    with pytest.raises(KeyError, match="no saved bloomkit filter"):
        load(client, "nothing")
    with pytest.raises(TypeError, match="needs a bloomkit filter"):
        save(client, "x", {"not": "a filter"})


def test_packed_bitfield_commands_equal_redis_py_encoding():
    from redis.connection import Connection

    bits = np.array([0, 1, 7, 9, 10, 99, 100, 123456789, 999_999_999, 1_000_000_000, 2**31, 2**32 - 1], dtype=np.uint64)
    base = 5 * 2**32
    reference = Connection()
    for command, op, value in [(b"BITFIELD", b"SET", b"1"), (b"BITFIELD_RO", b"GET", b"")]:
        for head in ([command, b"k:bits:5"], [b"EVALSHA", b"f" * 40, b"2", b"k:bits:5", b"k", command]):
            args = list(head)
            for bit in bits.tolist():
                args += [op, b"u1", bit ^ 7] + ([value] if value else [])  # Redis numbers bits MSB first
            packed = bloomkit._core.redis_bitfield(head, op, value, bits + np.uint64(base), base)
            assert packed == b"".join(reference.pack_command(*args))
    with pytest.raises(IndexError, match="outside the shard starting at bit 4294967296"):
        bloomkit._core.redis_bitfield([b"BITFIELD", b"k"], b"SET", b"1", np.array([5], dtype=np.uint64), 2**32)


@pytest.mark.parametrize("layout", bloomkit.calc.LAYOUTS)
def test_every_layout_matches_its_local_filter(client, layout):
    remote = RedisBloomFilter(client, f"layout:{layout}", 5000, 0.01, seed=3, layout=layout, shard_bits=4096)
    local = bloomkit.BloomFilter(5000, 0.01, seed=3, layout=layout)
    assert remote.num_bits == local.num_bits and local.layout == layout
    rng = np.random.default_rng(2)
    for _ in range(10):
        batch = [f"u{i}" for i in rng.integers(0, 6000, size=300)]
        np.testing.assert_array_equal(remote.add_many(batch), local.add_many(batch))
    assert remote.to_local() == local
    reopened = RedisBloomFilter(client, f"layout:{layout}")
    assert (
        reopened.to_local() == local
        and reopened.contains_many([f"u{i}" for i in range(6000)]).sum()
        == local.contains_many([f"u{i}" for i in range(6000)]).sum()
    )
    with pytest.raises(ValueError, match="layout="):
        other = next(name for name in bloomkit.calc.LAYOUTS if name != layout)
        RedisBloomFilter(client, f"layout:{layout}", 5000, 0.01, seed=3, layout=other, shard_bits=4096)


@pytest.mark.parametrize("layout", bloomkit.calc.LAYOUTS)
def test_estimates_equal_the_local_filters(client, layout):
    remote = RedisBloomFilter(client, f"estimates-{layout}", 5_000, 0.01, layout=layout)
    remote.update(url_keys(0, 4_000))
    local = remote.to_local()
    assert remote.fill_ratio == local.fill_ratio and len(remote) == len(local)
    # Blocked layouts use their block-load model, which fill ** k understates.
    assert remote.estimated_fpr() == local.estimated_fpr()
    if layout != "classic":
        assert remote.estimated_fpr() > remote.fill_ratio**remote.num_hashes


@pytest.mark.parametrize("layout", bloomkit.calc.LAYOUTS)
def test_positions_from_geometry_equal_the_local_filters(layout):
    # The client computes positions without the bit array; every key kind must
    # land exactly where the local filter puts it.
    local = bloomkit.BloomFilter(20_000, 0.001, seed=11, layout=layout)
    geometry = bloomkit._core.BloomPositions(
        local.num_bits, local.num_hashes, local.seed, local.capacity, local.error_rate, layout
    )
    for keys in (
        url_keys(0, 3000),
        np.arange(-1500, 1500, dtype=np.int64),
        [b"raw", "text", 7, 2.5, b""],
        np.array(["a", "bb", "ccc"]),
    ):
        np.testing.assert_array_equal(geometry.positions_many(keys), local._positions_many(keys))
    with pytest.raises(ValueError, match="num_bits of a split_block filter must be a multiple of 256"):
        bloomkit._core.BloomPositions(1000, 8, 0, 100, 0.01, "split_block")
    with pytest.raises(ValueError, match="unknown layout"):
        bloomkit._core.BloomPositions(1024, 3, 0, 100, 0.01, "nope")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_client_holds_no_copy_of_the_bits(client):
    # 250 M keys at 1 %: a 314 MiB filter (split_block) over 2 shards, which
    # Redis allocates at creation. The client must neither allocate nor touch it.
    before = _rss_bytes()
    remote = RedisBloomFilter(client, "huge", 250_000_000, 0.01)
    assert remote.nbytes > 300 * 2**20
    assert remote.num_shards == -(-remote.num_bits // DEFAULT_SHARD_BITS) == 2
    assert remote.contains_many(["a", "b", "c"]).tolist() == [False, False, False]
    assert _rss_bytes() - before < 64 * 2**20
    reopened = RedisBloomFilter(client, "huge")
    assert reopened.num_bits == remote.num_bits and "b" not in reopened
    assert _rss_bytes() - before < 64 * 2**20


def test_stored_parameters_that_describe_no_filter_are_refused(client):
    RedisBloomFilter(client, "meta", 1000, 0.01)
    import json

    stored = json.loads(client.get("meta"))
    for name, bad in [("num_bits", 0), ("num_hashes", "7"), ("layout", "nope"), ("shard_bits", 100)]:
        client.set("meta", json.dumps({**stored, name: bad}))
        with pytest.raises(ValueError, match="do not describe a filter this bloomkit can build"):
            RedisBloomFilter(client, "meta")
    client.set("meta", json.dumps({k: v for k, v in stored.items() if k != "seed"}))
    with pytest.raises(ValueError, match="do not describe a filter"):
        RedisBloomFilter(client, "meta")


def test_fewer_hashes_trade_memory_for_server_work(client):
    n, p = 20_000, 0.01
    remote = RedisBloomFilter(client, "k3", n, p, seed=4, num_hashes=3)
    # (1 - e^(-3n/m))^3 <= p at the fewest bits m.
    assert remote.num_hashes == 3 and remote.layout == "classic"
    m = remote.num_bits
    assert (1 - np.exp(-3 * n / m)) ** 3 <= p < (1 - np.exp(-3 * n / (m - 1))) ** 3
    assert 1.25 < m / bloomkit.BloomFilter(n, p, layout="classic").num_bits < 1.35
    local = bloomkit.BloomFilter.from_params(m, 3, seed=4)
    keys = url_keys(0, n)
    for first in range(0, n, 500):
        np.testing.assert_array_equal(
            remote.add_many(keys[first : first + 500]), local.add_many(keys[first : first + 500])
        )
    # Locally, a filter with a chosen k is an explicit geometry: equal to from_params', bits and parameters.
    assert remote.to_local() == local and bitmap(remote.to_local()) == bitmap(local)
    assert remote.to_local().num_hashes == 3
    absent = url_keys(n, n + 50_000)
    fp = int(remote.contains_many(absent).sum())
    assert fp <= fpr_upper_bound(p, len(absent)) * len(absent)
    reopened = RedisBloomFilter(client, "k3")
    assert (reopened.num_bits, reopened.num_hashes) == (m, 3)
    with pytest.raises(ValueError, match=r"num_hashes=3 \(asked 8\)"):  # the default layout, split_block
        RedisBloomFilter(client, "k3", n, p, seed=4)
    with pytest.raises(ValueError, match="num_hashes needs the classic layout"):
        RedisBloomFilter(client, "k4", n, p, layout="blocked512", num_hashes=3)
    with pytest.raises(ValueError, match=r"num_hashes must be in \[1, 64\], got 0"):
        RedisBloomFilter(client, "k4", n, p, num_hashes=0)
    with pytest.raises(TypeError, match="num_hashes must be an int"):
        RedisBloomFilter(client, "k4", n, p, num_hashes=2.0)
    assert client.exists("k4") == 0


# -- the connection a filter keeps between batches (_HeldConnection) ----------------
def _add_in_forked_child(remote, keys, results):
    # Uses the parent's filter object, whose held connection is the parent's socket.
    results.put(int((~remote.add_many(keys)).sum()))


def test_filter_keeps_one_connection_and_a_forked_child_uses_its_own(client):
    remote = RedisBloomFilter(client, "held", 20_000, 0.01)
    first, second, third = url_keys(0, 3000), url_keys(3000, 3000), url_keys(6000, 3000)
    remote.update(first)
    pool = client.connection_pool
    held = remote._link._connection
    assert held is not None and held in pool._in_use_connections
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_add_in_forked_child, args=(remote, second, results))
    child.start()
    new_in_child = results.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and new_in_child > 0.98 * len(second)
    # The parent's socket was left alone: its next batch reads its own replies.
    assert remote.add_many(first).all()
    remote.update(third)
    assert remote._link._connection is held
    assert remote.contains_many(first + second + third).all()
    local = bloomkit.BloomFilter(20_000, 0.01)
    local.update(first + second + third)
    assert remote.to_local() == local
    # Garbage collection hands the connection back to the pool.
    del remote
    import gc

    gc.collect()
    assert held not in pool._in_use_connections and held in pool._available_connections


def test_threads_share_a_filter_and_its_connection(client):
    import threading

    remote = RedisBloomFilter(client, "threads", 40_000, 0.01)
    parts = [url_keys(i * 5000, 5000) for i in range(4)]
    errors = []

    def add(part):
        try:
            for start in range(0, len(part), 50):
                remote.update(part[start : start + 50])
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=add, args=(part,)) for part in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    every = [key for part in parts for key in part]
    local = bloomkit.BloomFilter(40_000, 0.01)
    local.update(every)
    assert remote.to_local() == local


@pytest.mark.parametrize("blocking", [True, False])
def test_small_or_blocking_pools_are_never_held(redis_url, blocking):
    pool_class = redis.BlockingConnectionPool if blocking else redis.ConnectionPool
    pool = pool_class.from_url(redis_url, max_connections=1, **({"timeout": 5} if blocking else {}))
    client = redis.Redis(connection_pool=pool)
    client.flushdb()
    remote = RedisBloomFilter(client, "small-pool", 1000, 0.01)
    keys = url_keys(0, 200)
    assert not remote.add_many(keys).any()
    # The application's own command still gets the pool's only connection.
    assert client.set("app-key", b"1") and client.get("app-key") == b"1"
    assert remote.add_many(keys).all()
    assert remote._link._connection is None
    client.close()
