"""A RedisBloomFilter whose keys vanish raises FilterLostError; it never answers from an empty bitmap.

Each test runs a real redis-server on loopback (tests/redis_server.py) and
removes the filter's keys the way production loses them: a restart without
persistence (SIGKILL by PID), FLUSHDB, DEL of one shard, LRU eviction. With
AOF ``appendfsync always`` a SIGKILL loses no acknowledged key.
"""

from __future__ import annotations

import numpy as np
import pytest

import bloomkit
from support import url_keys

redis = pytest.importorskip("redis")
from redis_server import RestartableRedis  # noqa: E402

from bloomkit.redis import FilterLostError, RedisBloomFilter  # noqa: E402

pytestmark = pytest.mark.integration


def _server(tmp_path, *args):
    try:
        return RestartableRedis(tmp_path, args)
    except FileNotFoundError as error:
        pytest.skip(str(error))


def _first_call_after_restart(operation):
    """The socket to the killed server is dead: redis-py reports that once, then reconnects."""
    try:
        return operation()
    except redis.ConnectionError:
        return operation()


def test_restart_without_persistence_makes_every_operation_raise(tmp_path):
    with _server(tmp_path) as server:
        client = redis.Redis.from_url(server.url)
        remote = RedisBloomFilter(client, "crawl", 20_000, 0.01, shard_bits=64 * 1024)
        keys = url_keys(0, 5_000)
        remote.update(keys)
        assert remote.contains_many(keys).all()
        server.kill()
        with pytest.raises(redis.ConnectionError):
            remote.add_many(keys[:10])  # during the outage: the client sees it
        server.start()
        operations = {
            "add": lambda: remote.add("https://new.example/"),
            "add_many": lambda: remote.add_many(keys[:50]),
            "contains_many": lambda: remote.contains_many(keys[:50]),
            "in": lambda: keys[0] in remote,
            "update": lambda: remote.update(keys[:50]),
            "len": lambda: len(remote),
            "to_local": remote.to_local,
            "clear": remote.clear,
        }
        for name, operation in operations.items():
            with pytest.raises(
                FilterLostError, match=r"RedisBloomFilter 'crawl': Redis key 'crawl(:bits:\d+)?' is gone"
            ):
                _first_call_after_restart(operation)
            # Nothing was re-created implicitly: the server is still empty.
            assert client.dbsize() == 0, name
        # Re-opening by name does not "succeed" on an empty server either.
        with pytest.raises(KeyError, match="holds no bloomkit filter"):
            RedisBloomFilter(client, "crawl")
        # Re-creating is explicit.
        remote.recreate()
        assert remote.add_many(keys[:3]).tolist() == [False, False, False]
        assert remote.contains_many(keys[:3]).all() and not remote.contains_many(keys[3:100]).any()
        assert RedisBloomFilter(client, "crawl").num_bits == remote.num_bits
        client.close()


def test_aof_always_keeps_every_acknowledged_key_through_sigkill(tmp_path):
    with _server(tmp_path, "--appendonly", "yes", "--appendfsync", "always") as server:
        client = redis.Redis.from_url(server.url)
        remote = RedisBloomFilter(client, "crawl", 20_000, 0.01, shard_bits=64 * 1024)
        local = bloomkit.BloomFilter(20_000, 0.01)
        acknowledged = url_keys(0, 12_000)
        for first in range(0, len(acknowledged), 50):
            page = acknowledged[first : first + 50]
            np.testing.assert_array_equal(remote.add_many(page), local.add_many(page))
        server.kill()
        server.start()
        assert _first_call_after_restart(lambda: remote.contains_many(acknowledged)).all()
        assert remote.to_local() == local
        assert RedisBloomFilter(client, "crawl").to_local() == local
        client.close()


def test_flushdb_is_detected_by_reads_and_writes(client):
    remote = RedisBloomFilter(client, "f", 5_000, 0.01)
    remote.update(url_keys(0, 1_000))
    client.flushdb()
    with pytest.raises(FilterLostError, match="Redis key 'f:bits:0' is gone"):
        remote.contains_many(url_keys(0, 10))
    with pytest.raises(FilterLostError, match="Redis key 'f:bits:0' is gone"):
        remote.add_many(url_keys(0, 10))
    assert client.dbsize() == 0


def test_del_of_one_shard_is_detected_and_the_others_untouched(client):
    remote = RedisBloomFilter(client, "f", 5_000, 0.01, shard_bits=4096)
    assert remote.num_shards == 13
    keys = url_keys(0, 2_000)
    remote.update(keys)
    client.delete("f:bits:5")
    before = {key: client.get(key) for key in remote.shard_keys if key != "f:bits:5"}
    with pytest.raises(FilterLostError, match="Redis key 'f:bits:5' is gone"):
        remote.add_many(keys)  # every batch of 2,000 keys touches every shard
    with pytest.raises(FilterLostError, match="'f:bits:5'"):
        remote.contains_many(keys)
    with pytest.raises(FilterLostError, match="'f:bits:5'"):
        RedisBloomFilter(client, "f")  # re-opening checks every shard
    assert client.exists("f:bits:5") == 0
    assert {key: client.get(key) for key in before} == before
    # Deleting the parameters key is a loss too; its orphaned shards are not adopted.
    other = RedisBloomFilter(client, "g", 1_000, 0.01)
    other.add("x")
    client.delete("g")
    with pytest.raises(FilterLostError, match="Redis key 'g' is gone"):
        other.add("y")
    with pytest.raises(FilterLostError, match="Redis key 'g' is gone"):
        assert "x" in other
    with pytest.raises(FilterLostError, match="no parameters but its shard 'g:bits:0' exists"):
        RedisBloomFilter(client, "g", 1_000, 0.01)
    assert client.exists("g") == 0


def test_lru_eviction_of_a_shard_is_detected(tmp_path):
    with _server(tmp_path, "--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru") as server:
        client = redis.Redis.from_url(server.url)
        remote = RedisBloomFilter(client, "f", 100_000, 0.01, shard_bits=64 * 1024)
        remote.update(url_keys(0, 1_000))
        for index in range(400):  # 8 MB of other data: Redis evicts least recently used keys
            client.set(f"junk:{index}", b"x" * 20_000)
        assert client.exists(*remote.shard_keys, remote.key) < 1 + remote.num_shards
        with pytest.raises(FilterLostError, match="is gone"):
            remote.contains_many(url_keys(0, 1_000))
        client.close()


def test_shards_are_allocated_once_at_their_exact_size(client):
    # The default 1 % filter for 1 M keys: a 1.26 MiB bitmap. Grown lazily by
    # BITFIELD, Redis doubled its string (2.5 MiB); allocated at creation it
    # is one string of exactly nbytes, rounded up to an allocator size class.
    remote = RedisBloomFilter(client, "mem", 1_000_000, 0.01)
    assert client.strlen("mem:bits:0") == remote.nbytes == 1_316_160
    used = client.memory_usage("mem:bits:0", samples=0)
    assert remote.nbytes < used <= remote.nbytes * 1.25  # jemalloc's classes are 1/4 of a power of two apart
    remote.update(url_keys(0, 200_000))
    assert client.memory_usage("mem:bits:0", samples=0) == used
    assert client.strlen("mem:bits:0") == remote.nbytes


def test_expiry_of_one_shard_is_detected(client):
    import time

    remote = RedisBloomFilter(client, "f", 5_000, 0.01, shard_bits=4096)
    keys = url_keys(0, 2_000)
    remote.update(keys)
    client.pexpire("f:bits:3", 1)
    time.sleep(0.05)
    with pytest.raises(FilterLostError, match="Redis key 'f:bits:3' is gone"):
        remote.add_many(keys)
    with pytest.raises(FilterLostError, match="Redis key 'f:bits:3' is gone"):
        remote.to_local()
    assert client.exists("f:bits:3") == 0
