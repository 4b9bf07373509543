"""bloomkit.redis trusts nothing Redis says beyond what it can check.

Stored metadata is bounded and checked against the bits before anything is
sized from it (a real redis-server); every BITFIELD reply is checked against
the operations sent (a fake RESP server on loopback answers with the wrong
shape).
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

import bloomkit
from support import url_keys

redis = pytest.importorskip("redis")

from bloomkit.redis import RedisBloomFilter, RedisReplyError, load, save  # noqa: E402

pytestmark = pytest.mark.integration


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


# -- stored parameters --------------------------------------------------------------
def test_parameters_edited_to_2_40_bits_are_refused_on_open(client):
    remote = RedisBloomFilter(client, "m", 20_000, 0.01)
    remote.update(url_keys(0, 1_000))
    stored = json.loads(client.get("m"))
    edited = json.dumps({**stored, "num_bits": 2**40, "capacity": 2**40 // 10})
    client.set("m", edited)
    before = _rss_bytes()
    with pytest.raises(ValueError, match=r"shard 'm:bits:0' is 26,336 bytes, its stored parameters say 268,435,456"):
        RedisBloomFilter(client, "m")
    assert _rss_bytes() - before < 16 * 2**20
    assert client.get("m") == edited.encode() and client.strlen("m:bits:0") == 26_336
    # A filter opened before the edit keeps its own geometry.
    assert remote.contains_many(url_keys(0, 1_000)).all() and len(remote) == pytest.approx(1_000, rel=0.05)


def test_parameters_needing_too_many_shards_are_refused_before_any_shard_is_listed(client):
    RedisBloomFilter(client, "m", 1_000, 0.01)
    stored = json.loads(client.get("m"))
    client.set("m", json.dumps({**stored, "num_bits": 2**62, "layout": "classic", "shard_bits": 64}))
    with pytest.raises(ValueError, match=r"are 72,057,594,037,927,936 shards; at most 65,536"):
        RedisBloomFilter(client, "m")
    with pytest.raises(ValueError, match="at most 65,536"):
        RedisBloomFilter(client, "n", 10**6, 0.01, shard_bits=64)
    assert client.exists("n") == 0


def test_a_version_1_filter_is_upgraded_in_place_with_every_bit_kept(client):
    """Version 1 grew shards lazily (a short or missing shard was "not written yet"): opening
    one extends its shards with zero bytes and marks it version 2, so every key stays found and
    a later loss is detected."""
    keys = url_keys(0, 3)  # 3 keys touch at most 3 of the 6 shards: the others were never written
    local = bloomkit.BloomFilter(2_000, 0.01, layout="split_block")  # a key's bits in one block
    local.update(keys)
    shard_bytes = 512  # 4,096-bit shards
    payload = bytes(local._payload())
    shards = [payload[i : i + shard_bytes] for i in range(0, len(payload), shard_bytes)]
    meta = {**_v1_meta(local), "shard_bits": 8 * shard_bytes}
    client.set("v1", json.dumps(meta))
    for index, shard in enumerate(shards):
        written = shard.rstrip(b"\0")  # lazily grown: up to the last byte a bit was set in
        if written:
            client.set(f"v1:bits:{index}", written)
    shards_before = [client.strlen(f"v1:bits:{i}") for i in range(len(shards))]
    assert shards_before.count(0) >= 3 and all(n < len(shard) for n, shard in zip(shards_before, shards))

    reopened = RedisBloomFilter(client, "v1")
    assert json.loads(client.get("v1"))["version"] == 2
    assert [client.strlen(f"v1:bits:{i}") for i in range(len(shards))] == [len(shard) for shard in shards]
    assert reopened.to_local() == local
    assert reopened.contains_many(keys).all()
    touched = shards_before.index(max(shards_before))  # a shard the keys' bits are in
    client.delete(f"v1:bits:{touched}")
    with pytest.raises(bloomkit.redis.FilterLostError, match=f"v1:bits:{touched}"):
        reopened.contains_many(keys)


def _v1_meta(local) -> dict:
    """The parameters as bloomkit's version 1 RedisBloomFilter wrote them."""
    return {
        "kind": "bloomkit.RedisBloomFilter",
        "version": 1,
        "capacity": local.capacity,
        "error_rate": local.error_rate,
        "seed": local.seed,
        "layout": local.layout,
        "num_bits": local.num_bits,
        "num_hashes": local.num_hashes,
    }


def test_unknown_versions_are_refused_with_their_version(client):
    RedisBloomFilter(client, "m", 1_000, 0.01)
    client.set("m", json.dumps({**json.loads(client.get("m")), "version": 3}))
    with pytest.raises(ValueError, match="unsupported version 3"):
        RedisBloomFilter(client, "m")


# -- save/load headers --------------------------------------------------------------
@pytest.mark.parametrize(
    "field, value, message",
    [
        ("chunks", 10**9, r"chunks 1000000000 is not an integer in \[1, min\(length, 65536\)\]"),
        ("chunks", "3", r"chunks '3' is not an integer"),
        ("chunks", 2.0, r"chunks 2.0 is not an integer"),
        ("chunks", True, r"chunks True is not an integer"),
        ("length", -1, r"length -1 is not an integer in \[1, 1099511627776\]"),
        ("length", None, r"length None is not an integer"),
        ("checksum", 5, r"checksum 5 is not 32 hex digits"),
    ],
)
def test_corrupt_frame_headers_are_refused_by_load_and_save(client, field, value, message):
    filter = bloomkit.BloomFilter(20_000, 0.01)
    filter.update(url_keys(0, 500))
    save(client, "f", filter, chunk_size=4096)
    header = json.loads(client.get("f"))
    client.set("f", json.dumps({**header, field: value}))
    snapshot = {key: client.get(key) for key in client.keys("*")}
    before = _rss_bytes()
    with pytest.raises(ValueError, match=f"saved filter at Redis key 'f' has a corrupt header: {message}"):
        load(client, "f")
    with pytest.raises(ValueError, match="has a corrupt header"):
        save(client, "f", filter)
    assert _rss_bytes() - before < 16 * 2**20
    assert {key: client.get(key) for key in client.keys("*")} == snapshot  # nothing written


def test_header_lengths_are_checked_against_the_chunks_before_reading_them(client):
    filter = bloomkit.BloomFilter(20_000, 0.01)
    save(client, "f", filter, chunk_size=4096)
    header = json.loads(client.get("f"))
    # In bounds, but not what the chunks hold: refused from their STRLENs, nothing fetched.
    client.set("f", json.dumps({**header, "length": 2**40, "chunks": 2**16}))
    with pytest.raises(ValueError, match=r"is incomplete: a chunk is missing"):
        load(client, "f")
    client.set("f", json.dumps({**header, "length": header["length"] + 7}))
    with pytest.raises(ValueError, match=r"is 26408 bytes, its header says 26415"):
        load(client, "f")
    client.set("f", json.dumps(header))
    assert load(client, "f") == filter
    with pytest.raises(ValueError, match="is 65,536 chunks; at most 65,536|at most 65,536"):
        save(client, "g", bloomkit.BloomFilter(10**6, 0.01), chunk_size=16)
    assert client.exists("g") == 0


# -- replies ------------------------------------------------------------------------
class FakeRedis:
    """A loopback RESP peer: answers GET/STRLEN/MULTI/EXEC like Redis for one stored filter, EVALSHA with ``reply``."""

    def __init__(self, meta: bytes, shard_bytes: int):
        self.meta, self.shard_bytes, self.reply = meta, shard_bytes, b"+OK\r\n"
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(sock,), daemon=True).start()

    def _session(self, sock):
        stream, queued = sock.makefile("rb"), None
        with sock, stream:
            while True:
                line = stream.readline()
                if not line:
                    return
                args = []
                for _ in range(int(line[1:])):
                    size = int(stream.readline()[1:])
                    args.append(stream.read(size + 2)[:-2])
                name = args[0].upper()
                if name == b"MULTI":
                    queued = []
                    sock.sendall(b"+OK\r\n")
                elif name == b"EXEC":
                    sock.sendall(b"*%d\r\n" % len(queued) + b"".join(queued))
                    queued = None
                elif queued is not None:
                    queued.append(self._answer(name, args))
                    sock.sendall(b"+QUEUED\r\n")
                else:
                    sock.sendall(self._answer(name, args))

    def _answer(self, name, args) -> bytes:
        if name == b"GET":
            return b"$%d\r\n%s\r\n" % (len(self.meta), self.meta)
        if name == b"STRLEN":
            return b":%d\r\n" % self.shard_bytes
        if name in (b"EVALSHA", b"BITFIELD_RO"):
            return self.reply
        if name == b"EXISTS":
            return b":%d\r\n" % (len(args) - 1)
        if name == b"HELLO":  # redis-py asks for RESP3 (a map reply)
            return b"%%1\r\n$5\r\nproto\r\n:%s\r\n" % args[1]
        return b"+OK\r\n"  # CLIENT SETINFO and the like

    def close(self):
        self.listener.close()


@pytest.fixture
def fake(client):
    RedisBloomFilter(client, "seen", 1_000, 0.01, layout="split_block")  # k = 8, whatever the default
    server = FakeRedis(client.get("seen"), client.strlen("seen:bits:0"))
    yield server
    server.close()


@pytest.mark.parametrize(
    "reply, message",
    [
        (b"*1\r\n:1\r\n", r"answered a list of 1 to a BITFIELD of 1024 bits"),
        (b":0\r\n", r"answered a int to a BITFIELD of 1024 bits"),
        (b"$5\r\nhello\r\n", r"answered a bytes to a BITFIELD of 1024 bits"),
        (b"*1024\r\n" + b":2\r\n" * 1024, r"values other than 0 and 1"),
        (b"*1024\r\n" + b"$1\r\n1\r\n" * 1024, r"values other than 0 and 1"),
    ],
    ids=["one-element", "integer", "bulk", "out-of-range", "strings"],
)
def test_replies_that_do_not_match_the_operations_sent_raise(fake, reply, message):
    remote = RedisBloomFilter(redis.Redis(port=fake.port), "seen")
    assert remote.num_shards == 1 and remote.num_hashes == 8
    # 1,000 keys x 8 bits: 8 commands, the first seven of 1,024 sub-operations (the most per command).
    never_added = [f"absent-{i}" for i in range(1_000)]
    fake.reply = b"*1024\r\n" + b":0\r\n" * 1024  # well-formed first: the peer is a valid Redis
    assert not remote.contains_many(never_added[:128]).any()
    fake.reply = reply
    with pytest.raises(RedisReplyError, match=message):
        remote.contains_many(never_added)
    with pytest.raises(RedisReplyError, match=message):
        remote.add_many(never_added)
