"""Bloom filters whose bits live in Redis, shared by many processes and machines.

Needs redis-py (``pip install 'bloomkit[redis]'``) and Redis >= 6.2 (for
``BITFIELD_RO``). Keys are hashed here, in the client, exactly as a local
:class:`bloomkit.BloomFilter` with the same parameters hashes them; Redis only
stores and flips bits. So :meth:`RedisBloomFilter.to_local` returns a filter
equal bit-for-bit to one built locally from the same keys, and any number of
processes can add to one filter at once without losing bits (every bit write
is an atomic Redis command).

Storage (docs/integrations.md has the details):

* ``KEY`` holds the filter's parameters as JSON, written once with ``SET NX``,
  so a process that opens the key with different parameters gets a
  ``ValueError`` instead of silently using other bit positions.
* ``KEY:bits:0``, ``KEY:bits:1``, ... hold the bits: shard ``s`` is the payload
  of docs/FORMAT.md from byte ``s * shard_bits / 8`` on, byte for byte, so
  shards past Redis' 512 MB string limit are never needed. Every shard is
  allocated, zeroed, when the filter is created.

A filter whose keys vanish (a restart without persistence, FLUSHDB, eviction,
expiry, DEL) raises :class:`FilterLostError` on its next operation, reads
included: every BITFIELD checks that its shard and the parameters key exist
in the same atomic step (writes in a Lua script, reads in MULTI/EXEC). Nothing is re-created
except by :meth:`RedisBloomFilter.recreate`. Replies are checked against the
commands sent (:class:`RedisReplyError`), and stored sizes against the bits
before anything is allocated from them.

:func:`save` and :func:`load` store a whole filter of any type as its
``to_bytes()`` frame, for filters that are loaded and saved rather than shared.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import weakref
from typing import NamedTuple

import numpy as np

from . import _base, _batch, _core, calc
from ._core import hash128
from ._fill import estimate_cardinality, fill_false_positive_rate
from .bloom import BloomFilter

__all__ = ["RedisBloomFilter", "FilterLostError", "RedisReplyError", "save", "load", "DEFAULT_SHARD_BITS"]

# 2**31 bits = 256 MiB per Redis string: half of Redis' 512 MB limit
# (proto-max-bulk-len), so one shard is also sendable in one reply.
DEFAULT_SHARD_BITS = 2**31
# Redis addresses bit offsets below 2**32 in one string.
_MAX_SHARD_BITS = 2**32
# BITFIELD sub-operations per command: large batches are split into several
# commands in the same pipeline (still one round trip). The checking script
# passes its arguments on with Lua's unpack(), which refuses more than 8,000
# values (LUAI_MAXCSTACK in Redis' Lua 5.1): 1,024 SETs are 4,096.
_OPS_PER_COMMAND = 1 << 10
# Shards per filter: bounds every per-shard command list built from stored
# parameters (2**16 default shards are 16 TiB).
_MAX_SHARDS = 1 << 16
# Bytes per GETRANGE/SETRANGE when whole shards or frames are moved.
_TRANSFER_CHUNK = 32 << 20
# A pool this small may need every connection for the application's own commands.
_MIN_POOL_TO_HOLD = 8
_META_KIND = "bloomkit.RedisBloomFilter"
# Version 2: every shard is allocated at creation (full length), so a missing
# or short shard is a loss, never "not written yet". Version 1 grew shards lazily.
_META_VERSION = 2


class FilterLostError(LookupError):
    """A RedisBloomFilter's keys vanished from Redis (restart without persistence,
    FLUSHDB, eviction, expiry, DEL): its bits are gone, so no answer can be trusted."""


class RedisReplyError(RuntimeError):
    """Redis answered with something other than the replies the commands sent call for."""


# Runs one BITFIELD (ARGV[1]: BITFIELD or BITFIELD_RO, ARGV[2..]: its
# sub-operations) on shard KEYS[1] only if both it and the parameters key
# KEYS[2] exist, in one atomic step: a separate EXISTS would race with the
# loss, and a plain BITFIELD SET on a vanished shard would silently re-create
# it empty.
_CHECKED_BITFIELD = b"""\
if redis.call('EXISTS', KEYS[1], KEYS[2]) ~= 2 then
  local gone = KEYS[2]
  if redis.call('EXISTS', KEYS[1]) == 0 then gone = KEYS[1] end
  return redis.error_reply('BLOOMKIT_LOST ' .. gone)
end
return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))
"""
_CHECKED_BITFIELD_SHA = hashlib.sha1(_CHECKED_BITFIELD).hexdigest().encode()
_LOST_PREFIX = "BLOOMKIT_LOST "

# Creates a filter atomically: KEYS[1] the parameters key, KEYS[2..] the
# shards; ARGV[1] the parameters, ARGV[2] bytes of a full shard, ARGV[3] of
# the last. Returns the stored parameters if the key exists already; refuses
# shards without parameters (their geometry is unknown). SETRANGE at the last
# byte allocates a new string at exactly its length, zero-filled.
_CREATE = b"""\
local stored = redis.call('GET', KEYS[1])
if stored then return stored end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return redis.error_reply('BLOOMKIT_ORPHAN ' .. KEYS[i]) end
end
redis.call('SET', KEYS[1], ARGV[1])
for i = 2, #KEYS do
  local size = ARGV[2]
  if i == #KEYS then size = ARGV[3] end
  redis.call('SETRANGE', KEYS[i], tonumber(size) - 1, '\\0')
end
return false
"""

# Upgrades a version 1 filter (shards grown lazily) in place: KEYS as _CREATE;
# ARGV[1] the version 1 parameters as read, ARGV[2] the version 2 ones,
# ARGV[3]/ARGV[4] the byte sizes of a full and of the last shard. A shard
# shorter than its size is extended with zero bytes (SETRANGE at its last
# byte, which does not exist yet), so no bit changes. Returns 0 without
# writing if the parameters changed since they were read.
_UPGRADE_VERSION_1 = b"""\
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #KEYS do
  local size = tonumber(ARGV[3])
  if i == #KEYS then size = tonumber(ARGV[4]) end
  if redis.call('STRLEN', KEYS[i]) < size then redis.call('SETRANGE', KEYS[i], size - 1, '\\0') end
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""

# Zeroes a filter (KEYS and sizes as _CREATE) only if all its keys exist.
_CLEAR = b"""\
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then return redis.error_reply('BLOOMKIT_LOST ' .. KEYS[i]) end
end
for i = 2, #KEYS do
  local size = ARGV[1]
  if i == #KEYS then size = ARGV[2] end
  redis.call('DEL', KEYS[i])
  redis.call('SETRANGE', KEYS[i], tonumber(size) - 1, '\\0')
end
return true
"""


# BITFIELD sub-operations: (command, op, value); see cpp/include/bloomkit/redis_bitfield.hpp,
# which also maps bloomkit bit numbering (LSB first) to Redis' (MSB first in each byte).
_SET_BIT = (b"BITFIELD", b"SET", b"1")
_GET_BIT = (b"BITFIELD_RO", b"GET", b"")


def _resp(*args: bytes) -> bytes:
    """One command in RESP (for the few commands not packed by _core.redis_bitfield)."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args)


_MULTI = _resp(b"MULTI")
_EXEC = _resp(b"EXEC")


def _round_trip(connection, packed: list) -> list:
    """Send pre-packed commands in one write and read their replies (a pipeline without redis-py's encoder).

    An error reply is returned as its ``ResponseError`` (the remaining
    replies are still read, so the connection stays in step), except
    CROSSSLOT, which no retry can cure: it raises ``ValueError``.
    """
    response_error = _redis_errors()[0]
    try:
        connection.send_packed_command(packed)
        replies = []
        for _ in packed:
            try:
                replies.append(connection.read_response())
            except response_error as error:
                replies.append(error)
    except BaseException:
        # A reply may be left unread: drop the socket (the next send reconnects).
        connection.disconnect()
        raise
    for reply in replies:
        if isinstance(reply, response_error) and _is_cross_slot(reply):
            raise ValueError(_CROSS_SLOT_ADVICE)
    return replies


@functools.cache
def _redis_errors() -> tuple:
    """(ResponseError, NoScriptError) of redis-py, imported once: every round trip needs them (~1 µs an import)."""
    from redis.exceptions import NoScriptError, ResponseError

    return ResponseError, NoScriptError


# Every bloomkit filter in Redis runs scripts and transactions over several
# keys (parameters and bits; a family member's generations and registry; a
# window's generations), which Redis Cluster allows only within one hash slot.
_CROSS_SLOT_ADVICE = (
    "Redis Cluster refused a command over this filter's keys, which are in different hash slots: on a cluster, "
    "name the filter with a hash tag, e.g. '{shown}' instead of 'shown', so that all its keys share one slot "
    "(docs/integrations.md, 'Redis Cluster')"
)


def _is_cross_slot(error) -> bool:
    return str(error).startswith("CROSSSLOT") or type(error).__name__ == "ClusterCrossSlotError"


def _pooled_round_trip(pool, packed: list) -> list:
    connection = pool.get_connection()
    try:
        return _round_trip(connection, packed)
    finally:
        pool.release(connection)


def _release_if_owner(pool, connection, pid: int) -> None:
    if os.getpid() == pid:  # a forked child never hands back its parent's socket
        pool.release(connection)


class _HeldConnection:
    """One connection a filter keeps checked out of the client's pool for its batches.

    Checking a connection out of redis-py's pool and back in costs about as
    much client CPU as the round trip itself (~25 µs with redis-py 8.1,
    benchmarks/results/2026-11-24-redis-crawler-held-22e0ecd-epyc2.md), paid on every page a
    crawler checks. A filter therefore keeps one connection between batches,
    when the pool has room to spare: never from a ``BlockingConnectionPool``
    or a pool of fewer than 8 connections, where holding one could starve the
    application's own commands. A thread that finds the held connection busy
    (another thread is mid-batch) uses the pool as before; a forked child
    leaves its parent's socket alone and checks out its own. The connection
    goes back to the pool when the filter is garbage-collected.
    """

    def __init__(self, client):
        from redis import BlockingConnectionPool

        self._pool = client.connection_pool
        self._lock = threading.Lock()
        self._connection = None
        self._pid = 0
        self._finalizer = None
        self._holds = not isinstance(self._pool, BlockingConnectionPool) and (
            getattr(self._pool, "max_connections", 0) >= _MIN_POOL_TO_HOLD
        )

    def round_trip(self, packed: list) -> list:
        if not self._holds or not self._lock.acquire(blocking=False):
            return _pooled_round_trip(self._pool, packed)
        try:
            if self._connection is None or self._pid != os.getpid():
                self._check_out()
            return _round_trip(self._connection, packed)
        finally:
            self._lock.release()

    def _check_out(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()  # the parent's connection, seen from a forked child
        connection = self._pool.get_connection()
        self._connection, self._pid = connection, os.getpid()
        self._finalizer = weakref.finalize(self, _release_if_owner, self._pool, connection, self._pid)


def _run_script(link, packed: list, script: bytes, sha: bytes) -> list:
    """Replies to pre-packed commands, some ``EVALSHA sha``; loads ``script`` into a server that lacks it.

    A restarted server has no scripts: the commands it refused with
    NOSCRIPT did nothing, so exactly those are sent again, in order.
    """
    no_script = _redis_errors()[1]
    replies = link.round_trip(packed)
    again = [i for i, reply in enumerate(replies) if isinstance(reply, no_script)]
    if again:
        loaded = link.round_trip([_resp(b"SCRIPT", b"LOAD", script)])[0]
        if isinstance(loaded, Exception):
            raise loaded
        if loaded != sha:
            raise RedisReplyError(f"SCRIPT LOAD answered {loaded!r:.80}, not the script's SHA-1")
        for i, reply in zip(again, link.round_trip([packed[i] for i in again])):
            replies[i] = reply
    return replies


def _decode(value):
    return value.decode() if isinstance(value, bytes) else value


def _check_client(client) -> None:
    """Bits and frames are binary: a client that decodes replies to str cannot read them."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None and pool.connection_kwargs.get("decode_responses"):
        raise ValueError("bloomkit.redis needs a redis client with decode_responses=False (bits are binary)")


class RedisBloomFilter:
    """A Bloom filter stored in Redis, with the local :class:`~bloomkit.BloomFilter` API.

    Parameters
    ----------
    client : redis.Redis
        A redis-py client with ``decode_responses=False`` (the default).
    key : str
        The Redis key of the filter; the bits go to ``KEY:bits:N``.
    capacity, error_rate, seed, layout
        As for :class:`bloomkit.BloomFilter`. With ``capacity=None`` an
        existing filter is opened with its stored parameters.
    shard_bits : int, keyword-only
        Bits per Redis string (a multiple of 64, at most 2**32); default
        2**31 (256 MiB). Fixed when the filter is created.
    num_hashes : int, keyword-only
        Use this many bits per key (classic layout) and as many bits as that
        needs to meet ``error_rate``, instead of the memory-optimal k. Every
        bit is one ``BITFIELD`` sub-operation in the server, so k = 3 costs
        the server 3/7 of the default's work at 1 % for ~1.3x the memory
        (k = 2: 2/7, ~2x); see docs/integrations.md.

    Raises ``ValueError`` if ``key`` already holds a filter with other
    parameters, or something that is not a bloomkit filter.

    Every batch is one network round trip: ``add_many`` sends one
    ``BITFIELD ... SET u1 OFFSET 1 ...`` per shard and reads the old bits from
    its reply, so its test-and-set answers are exactly those of a local
    ``add_many`` on the same sequence of batches. The client computes
    positions from the filter's geometry alone: it holds none of the bits
    (see docs/integrations.md).
    """

    def __init__(
        self, client, key, capacity=None, error_rate=0.01, *, seed=0, layout=None, shard_bits=None, num_hashes=None
    ):
        _check_client(client)
        self._client = client
        self._link = _HeldConnection(client)
        self.key = str(key)
        stored = self._read_meta()
        if capacity is None:
            if stored is None:
                raise KeyError(f"Redis key {self.key!r} holds no bloomkit filter; give capacity to create one")
            self._attach(_geometry_from_meta(stored, self.key), stored["shard_bits"])
            self._check_shards()
            return
        geometry = _sized_geometry(capacity, error_rate, calc.check_seed(seed), layout, num_hashes)
        self._attach(geometry, _check_shard_bits(DEFAULT_SHARD_BITS if shard_bits is None else shard_bits))
        self._publish_meta(stored)

    @classmethod
    def from_local(cls, client, key, filter, *, shard_bits=None) -> "RedisBloomFilter":
        """Upload a local :class:`~bloomkit.BloomFilter` to ``key``, replacing its bits.

        Creates the key with the filter's parameters if it is new; raises
        ``ValueError`` if it holds a filter with other parameters. All shards
        are written in one MULTI/EXEC transaction.
        """
        if not isinstance(filter, BloomFilter):
            raise TypeError(f"from_local needs a bloomkit.BloomFilter, got {type(filter).__name__}")
        if filter.keyed:
            # Clients hash without a key: a keyed filter's bits would sit where
            # no client looks (every lookup a false negative).
            raise ValueError("from_local needs an unkeyed BloomFilter: RedisBloomFilter has no secret_key")
        _check_client(client)
        instance = cls.__new__(cls)
        instance._client = client
        instance._link = _HeldConnection(client)
        instance.key = str(key)
        stored = instance._read_meta()
        geometry = _Geometry(
            filter.num_bits, filter.num_hashes, filter.seed, filter.capacity, filter.error_rate, filter.layout
        )
        instance._attach(geometry, _check_shard_bits(DEFAULT_SHARD_BITS if shard_bits is None else shard_bits))
        instance._publish_meta(stored, check_shards=False)  # every shard is rewritten below
        payload = filter._payload()
        pipe = client.pipeline(transaction=True)
        for shard, (start, stop) in enumerate(instance._shard_byte_ranges()):
            shard_key = instance._shard_key(shard)
            pipe.delete(shard_key)
            # Full length first (one allocation of the exact size), then the bytes.
            pipe.setrange(shard_key, stop - start - 1, b"\0")
            for offset in range(start, stop, _TRANSFER_CHUNK):
                pipe.setrange(shard_key, offset - start, payload[offset : min(stop, offset + _TRANSFER_CHUNK)])
        pipe.execute()
        return instance

    # -- parameters ------------------------------------------------------
    def _attach(self, geometry: "_Geometry", shard_bits: int) -> None:
        self._geometry = geometry
        # Validates the geometry (as a local filter's constructor would).
        self._positions = _core.BloomPositions(*geometry)
        num_shards = -(-geometry.num_bits // shard_bits)
        if num_shards > _MAX_SHARDS:
            raise ValueError(
                f"{geometry.num_bits:,} bits in shards of {shard_bits:,} bits are {num_shards:,} shards; "
                f"at most {_MAX_SHARDS:,} (use larger shard_bits)"
            )
        self.shard_bits = shard_bits
        self.num_shards = num_shards

    def _meta(self) -> dict:
        g = self._geometry
        return {
            "kind": _META_KIND,
            "version": _META_VERSION,
            "capacity": g.capacity,
            "error_rate": g.error_rate,
            "seed": g.seed,
            "layout": g.layout,
            "num_bits": g.num_bits,
            "num_hashes": g.num_hashes,
            "shard_bits": self.shard_bits,
        }

    def _read_meta(self):
        from redis.exceptions import ResponseError

        try:
            raw = self._client.get(self.key)
        except ResponseError as error:  # WRONGTYPE: a hash, list, ... under this name
            raise ValueError(f"Redis key {self.key!r} holds something that is not a bloomkit filter: {error}") from None
        if raw is None:
            return None
        try:
            meta = json.loads(_decode(raw))
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or meta.get("kind") != _META_KIND:
            raise ValueError(f"Redis key {self.key!r} holds something that is not a bloomkit RedisBloomFilter")
        if meta.get("version") == 1:
            meta = self._upgrade_version_1(raw, meta)
        if meta.get("version") != _META_VERSION:
            raise ValueError(
                f"Redis key {self.key!r} holds a RedisBloomFilter of unsupported version {meta.get('version')!r} "
                f"(this bloomkit reads version {_META_VERSION}, whose shards are allocated at creation)"
            )
        return meta

    def _upgrade_version_1(self, raw, meta: dict) -> dict:
        """Allocate a version 1 filter's shards at full length and mark it version 2 (one atomic script).

        Version 1 grew shards lazily, so its missing or short shards are "not
        written yet": extending each with zero bytes keeps every bit and makes
        the filter one whose missing shard is a loss. Readers from before
        version 2 refuse the upgraded filter by its version.
        """
        upgraded = {**meta, "version": _META_VERSION}
        geometry = _geometry_from_meta(upgraded, self.key)
        shard_bits = upgraded["shard_bits"]
        num_shards = -(-geometry.num_bits // shard_bits)
        if num_shards > _MAX_SHARDS:
            raise ValueError(f"Redis key {self.key!r}: {num_shards:,} shards; at most {_MAX_SHARDS:,}")
        payload_bytes = 8 * -(-geometry.num_bits // 64)
        last = payload_bytes - (num_shards - 1) * (shard_bits // 8)
        shard_keys = [f"{self.key}:bits:{shard}" for shard in range(num_shards)]
        done = self._client.eval(
            _UPGRADE_VERSION_1,
            1 + num_shards,
            self.key,
            *shard_keys,
            raw,
            json.dumps(upgraded),
            shard_bits // 8,
            last,
        )
        if done != 1:  # another client changed the parameters meanwhile: read what is there now
            return self._read_meta() or {}
        return upgraded

    def _publish_meta(self, stored, check_shards: bool = True) -> None:
        """Create the filter (parameters and zeroed shards), or check its parameters against the stored ones.

        Creation is one Lua script (atomic): of two processes creating the
        same key at once, one creates and the other reads and compares.
        """
        mine = self._meta()
        if stored is None:
            stored = self._create(mine)
            if stored is None:
                return
        if stored != mine:
            differing = sorted(name for name in mine if stored.get(name) != mine[name])
            detail = ", ".join(f"{name}={stored.get(name)!r} (asked {mine[name]!r})" for name in differing)
            raise ValueError(
                f"Redis key {self.key!r} already holds a Bloom filter with other parameters: {detail}; "
                f"open it with RedisBloomFilter(client, {self.key!r}) or use another key"
            )
        if check_shards:
            self._check_shards()

    def _create(self, meta: dict):
        """Run the creation script; None if it created the filter, else the parameters found stored."""
        from redis.exceptions import ResponseError

        last = self._shard_byte_ranges()[-1]
        try:
            found = self._client.eval(
                _CREATE,
                1 + self.num_shards,
                self.key,
                *self.shard_keys,
                json.dumps(meta),
                self.shard_bits // 8,
                last[1] - last[0],
            )
        except ResponseError as error:
            if str(error).startswith("BLOOMKIT_ORPHAN "):
                raise FilterLostError(
                    f"Redis key {self.key!r} has no parameters but its shard {str(error).split(' ', 1)[1]!r} "
                    "exists: the parameters were lost; delete() it to start again"
                ) from None
            if _is_cross_slot(error):
                raise ValueError(_CROSS_SLOT_ADVICE) from None
            raise
        return None if found is None else self._read_meta()

    def _check_shards(self) -> None:
        """Every shard exists at exactly the length the parameters give (one MULTI/EXEC).

        A shard of another length means the parameters do not describe these
        bits (edited, or another writer): refused before anything is sized
        from them.
        """
        pipe = self._client.pipeline(transaction=True)
        for shard_key in self.shard_keys:
            pipe.strlen(shard_key)
        lengths = _expect_ints(pipe.execute(), self.num_shards, self.key)
        for shard, ((start, stop), length) in enumerate(zip(self._shard_byte_ranges(), lengths)):
            if length == 0:
                raise self._lost(self._shard_key(shard))
            if length != stop - start:
                raise ValueError(
                    f"Redis key {self.key!r}: shard {self._shard_key(shard)!r} is {length:,} bytes, its stored "
                    f"parameters say {stop - start:,} (num_bits={self.num_bits:,}, shard_bits={self.shard_bits:,})"
                )

    def _lost(self, gone: str) -> FilterLostError:
        return FilterLostError(
            f"RedisBloomFilter {self.key!r}: Redis key {gone!r} is gone (restart without persistence, FLUSHDB, "
            "eviction, expiry or DEL): its bits are lost; recreate() starts the filter again, empty"
        )

    def recreate(self) -> None:
        """Start this filter again, empty, after its keys were lost (explicit: nothing is re-created otherwise).

        Deletes whatever is left of it, then creates its parameters and
        zeroed shards with the creation script (``ValueError`` if another
        client created the key in between).
        """
        self._client.delete(self.key, *self.shard_keys)
        if self._create(self._meta()) is not None:
            raise ValueError(f"Redis key {self.key!r} was re-created by another client meanwhile")

    num_bits = property(lambda self: self._geometry.num_bits, doc="Number of bits m.")
    num_hashes = property(lambda self: self._geometry.num_hashes, doc="Bits set per key k.")
    seed = property(lambda self: self._geometry.seed, doc="Hash seed.")
    capacity = property(lambda self: self._geometry.capacity, doc="Keys the filter was sized for.")
    error_rate = property(lambda self: self._geometry.error_rate, doc="False-positive rate asked for at capacity.")
    layout = property(lambda self: self._geometry.layout, doc="Bloom layout (where a key's bits are).")
    nbytes = property(
        lambda self: 8 * -(-self._geometry.num_bits // 64), doc="Bytes of bits stored in Redis (when full length)."
    )

    @property
    def shard_keys(self) -> list:
        """The Redis keys holding the bits, in order."""
        return [self._shard_key(shard) for shard in range(self.num_shards)]

    def _shard_key(self, shard: int) -> str:
        return f"{self.key}:bits:{shard}"

    def _shard_byte_ranges(self):
        """(start, stop) payload byte range of each shard."""
        payload_bytes = self.nbytes
        step = self.shard_bits // 8
        return [(start, min(start + step, payload_bytes)) for start in range(0, payload_bytes, step)]

    # -- bit operations --------------------------------------------------
    def _bitfield(self, operation: tuple, keys):
        """Run ``op`` on every position of ``keys``; return the replies as a (n, k) uint8 array.

        The positions are validated and computed locally first (nothing is
        sent if a key is invalid), then grouped by shard in key order and sent
        as BITFIELD commands in one round trip; Redis runs them in order, so
        within a shard the operations happen in key order.

        Each command is checked atomically against a loss of its shard or
        the parameters key: writes inside the checking script (a plain
        BITFIELD SET would re-create a lost shard), reads in a MULTI/EXEC
        after an EXISTS (a read cannot re-create anything, and a transaction
        costs the server a fraction of the script's argument conversions).
        """
        positions = self._positions.positions_many(_batch.single_batch(keys))
        flat = positions.ravel()
        replies = np.empty(flat.shape, dtype=np.uint8)
        if flat.size == 0:
            return replies.reshape(positions.shape)
        packed, plan = [], []  # plan: (indices into flat or None for all, first, count) per command
        key = self.key.encode()
        command, op, value = operation
        writes = operation is _SET_BIT
        for shard, where in self._group_by_shard(flat):
            bits = flat if where is None else flat[where]
            shard_key = self._shard_key(shard).encode()
            if writes:
                head = [b"EVALSHA", _CHECKED_BITFIELD_SHA, b"2", shard_key, key, command]
            else:
                head = [command, shard_key]
            for first in range(0, len(bits), _OPS_PER_COMMAND):
                part = bits[first : first + _OPS_PER_COMMAND]
                bitfield = _core.redis_bitfield(head, op, value, part, shard * self.shard_bits)
                if writes:
                    packed.append(bitfield)
                else:
                    packed += [_MULTI, _resp(b"EXISTS", shard_key, key), bitfield, _EXEC]
                plan.append((where, first, len(part), shard_key))
        answers = self._run_checked(packed)
        if not writes:
            answers = [self._checked_read(answers[i : i + 4], plan[i // 4][3]) for i in range(0, len(answers), 4)]
        for (where, first, count, _shard_key), reply in zip(plan, answers):
            bits = self._bits_from_reply(reply, count)
            if where is None:
                replies[first : first + count] = bits
            else:
                replies[where[first : first + count]] = bits
        return replies.reshape(positions.shape)

    def _run_checked(self, packed: list) -> list:
        """Replies to checked-BITFIELD commands (``_run_script``)."""
        return _run_script(self._link, packed, _CHECKED_BITFIELD, _CHECKED_BITFIELD_SHA)

    def _checked_read(self, replies: list, shard_key: bytes):
        """The BITFIELD_RO reply out of the replies to MULTI, EXISTS, BITFIELD_RO, EXEC, once both keys existed."""
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        if replies[:3] != [b"OK", b"QUEUED", b"QUEUED"] or type(replies[3]) is not list or len(replies[3]) != 2:
            raise RedisReplyError(
                f"RedisBloomFilter {self.key!r}: Redis answered {replies!r:.120} to MULTI, EXISTS, BITFIELD_RO, EXEC"
            )
        present, bits = replies[3]
        if present != 2:
            gone = shard_key.decode() if not self._client.exists(shard_key) else self.key
            raise self._lost(gone)
        return bits

    def _bits_from_reply(self, reply, count: int) -> np.ndarray:
        """The ``count`` bits of one BITFIELD reply, after checking it is exactly ``count`` values 0 or 1."""
        if isinstance(reply, Exception):
            message = str(reply)
            if message.startswith(_LOST_PREFIX):
                raise self._lost(message[len(_LOST_PREFIX) :])
            raise reply
        if type(reply) is not list or len(reply) != count:
            shape = f"a list of {len(reply)}" if type(reply) is list else f"a {type(reply).__name__}"
            raise RedisReplyError(
                f"RedisBloomFilter {self.key!r}: Redis answered {shape} to a BITFIELD of {count} bits"
            )
        try:
            packed = bytes(reply)  # C-speed packing; TypeError/ValueError for anything but ints in [0, 256)
        except (TypeError, ValueError):
            packed = None
        if packed is None or packed.translate(None, b"\x00\x01"):
            raise RedisReplyError(
                f"RedisBloomFilter {self.key!r}: Redis answered values other than 0 and 1 to a BITFIELD of u1 fields"
            )
        return np.frombuffer(packed, dtype=np.uint8)

    def _group_by_shard(self, flat: np.ndarray):
        """(shard, indices of flat in that shard, in their original order) for each shard touched."""
        if self.num_shards == 1:
            return [(0, None)]
        shards = flat // np.uint64(self.shard_bits)
        order = np.argsort(shards, kind="stable")  # stable: key order kept within a shard
        starts = np.flatnonzero(np.diff(shards[order], prepend=np.uint64(shards.max()) + 1))
        return [(int(shards[order[a]]), order[a:b]) for a, b in zip(starts, [*starts[1:], len(order)])]

    def add_many(self, keys) -> np.ndarray:
        """Insert every key in order; per key, whether it was (probably) present before.

        Sequential like the local filter (``add_many(["x", "x"])`` gives
        ``[False, True]``); one round trip for the whole batch. A bad key
        raises before anything is sent.
        """
        return self._bitfield(_SET_BIT, keys).all(axis=1)

    def update(self, keys) -> None:
        """Insert every key (``add_many`` without the answers)."""
        self._bitfield(_SET_BIT, keys)

    def contains_many(self, keys) -> np.ndarray:
        """Per key, whether it is (probably) in the filter; one ``BITFIELD_RO`` per shard."""
        return self._bitfield(_GET_BIT, keys).all(axis=1)

    def add(self, key) -> bool:
        """Insert one key; True if it was (probably) present before."""
        return bool(self.add_many([key])[0])

    def contains(self, key) -> bool:
        """True if the key is (probably) in the filter."""
        return bool(self.contains_many([key])[0])

    __contains__ = contains

    # -- estimates -------------------------------------------------------
    def _snapshot(self, add_reads) -> list:
        """Replies to the reads ``add_reads(pipe)`` queues, run in one MULTI/EXEC after an EXISTS of every key.

        Raises FilterLostError if any key of the filter is gone, so a
        vanished shard never reads as zeros.
        """
        keys = [self.key, *self.shard_keys]
        pipe = self._client.pipeline(transaction=True)
        pipe.exists(*keys)
        add_reads(pipe)
        replies = pipe.execute()
        if replies[0] != len(keys):
            pipe = self._client.pipeline(transaction=False)  # only to name the first missing key
            for key in keys:
                pipe.exists(key)
            raise self._lost(next((key for key, there in zip(keys, pipe.execute()) if not there), self.key))
        return replies[1:]

    def _set_bits(self) -> int:
        def add_reads(pipe):
            for shard_key in self.shard_keys:
                pipe.bitcount(shard_key)

        counts = _expect_ints(self._snapshot(add_reads), self.num_shards, self.key)
        for (start, stop), count in zip(self._shard_byte_ranges(), counts):
            if not 0 <= count <= 8 * (stop - start):
                raise RedisReplyError(
                    f"RedisBloomFilter {self.key!r}: BITCOUNT answered {count} for a shard of {8 * (stop - start)} bits"
                )
        return sum(counts)

    @property
    def fill_ratio(self) -> float:
        """Fraction of bits set (one ``BITCOUNT`` per shard)."""
        return self._set_bits() / self.num_bits

    def estimated_fpr(self) -> float:
        """False-positive rate implied by the current fill, as the local filter's."""
        return fill_false_positive_rate(self.layout, self.num_bits, self.num_hashes, self._set_bits())

    def __len__(self) -> int:
        """Estimated number of distinct keys inserted (Swamidass & Baldi, as the local filter)."""
        return round(estimate_cardinality(self.num_bits, self.num_hashes, self._set_bits()))

    # -- whole-filter operations -----------------------------------------
    def to_local(self) -> BloomFilter:
        """A local :class:`~bloomkit.BloomFilter` with the bits currently in Redis.

        All shards are read in one MULTI/EXEC transaction (a consistent
        snapshot even while other processes add).
        """
        ranges = self._shard_byte_ranges()

        def add_reads(pipe):
            for shard, (start, stop) in enumerate(ranges):
                for offset in range(start, stop, _TRANSFER_CHUNK):
                    last = min(stop, offset + _TRANSFER_CHUNK) - 1
                    pipe.getrange(self._shard_key(shard), offset - start, last - start)

        parts = self._snapshot(add_reads)
        payload = bytearray(self.nbytes)
        index = 0
        for start, stop in ranges:
            for offset in range(start, stop, _TRANSFER_CHUNK):
                part = parts[index]
                index += 1
                expected = min(stop, offset + _TRANSFER_CHUNK) - offset
                if type(part) is not bytes or len(part) != expected:
                    raise RedisReplyError(
                        f"RedisBloomFilter {self.key!r}: GETRANGE answered {len(part) if type(part) is bytes else type(part).__name__} "
                        f"bytes where the shard holds {expected:,} (shard shorter than its parameters say)"
                    )
                payload[offset : offset + expected] = part
        local = _local_filter(self._geometry)
        local._assign_payload(payload)
        return local

    def clear(self) -> None:
        """Remove every key: zero every shard, in one script that first checks the filter is still there."""
        from redis.exceptions import ResponseError

        last = self._shard_byte_ranges()[-1]
        try:
            self._client.eval(
                _CLEAR, 1 + self.num_shards, self.key, *self.shard_keys, self.shard_bits // 8, last[1] - last[0]
            )
        except ResponseError as error:
            if str(error).startswith(_LOST_PREFIX):
                raise self._lost(str(error)[len(_LOST_PREFIX) :]) from None
            raise

    def delete(self) -> None:
        """Delete the filter from Redis: parameters and bits."""
        self._client.delete(self.key, *self.shard_keys)

    def __repr__(self) -> str:
        return (
            f"RedisBloomFilter(key={self.key!r}, capacity={self.capacity}, error_rate={self.error_rate}, "
            f"num_bits={self.num_bits}, num_hashes={self.num_hashes}, seed={self.seed}, shards={self.num_shards})"
        )


def _expect_ints(replies, count: int, key: str) -> list:
    """``replies`` if it is exactly ``count`` non-negative integers, else RedisReplyError."""
    if type(replies) is not list or len(replies) != count or any(type(r) is not int or r < 0 for r in replies):
        raise RedisReplyError(f"Redis key {key!r}: expected {count} non-negative integer replies, got {replies!r:.120}")
    return replies


def _check_shard_bits(shard_bits) -> int:
    if isinstance(shard_bits, bool) or not isinstance(shard_bits, int):
        raise TypeError(f"shard_bits must be an int, got {type(shard_bits).__name__}")
    if not (64 <= shard_bits <= _MAX_SHARD_BITS and shard_bits % 64 == 0):
        raise ValueError(f"shard_bits must be a multiple of 64 in [64, 2**32], got {shard_bits}")
    return shard_bits


class _Geometry(NamedTuple):
    """What fixes a Bloom filter's bit positions (the arguments of ``_core.BloomPositions``)."""

    num_bits: int
    num_hashes: int
    seed: int
    capacity: int
    error_rate: float
    layout: str


def _sized_geometry(capacity, error_rate, seed: int, layout, num_hashes) -> _Geometry:
    """The geometry for ``capacity`` keys at ``error_rate``: the local filter's, or with ``num_hashes`` bits per key."""
    if num_hashes is None:
        params = calc.bloom_params(capacity, error_rate, layout)
        return _Geometry(params.num_bits, params.num_hashes, seed, int(capacity), float(error_rate), params.layout)
    if layout not in (None, "classic"):
        raise ValueError(f"num_hashes needs the classic layout (layout {layout!r} fixes where a key's bits go)")
    # More bits than the optimal k needs, fewer bit operations per key (sizing.hpp).
    params = calc.classic_params_with_hashes(capacity, error_rate, num_hashes)
    n, p = calc.check_capacity(capacity), calc.check_error_rate(error_rate)
    return _Geometry(params.num_bits, params.num_hashes, seed, n, p, "classic")


def _geometry_from_meta(meta: dict, key: str) -> _Geometry:
    """The geometry a stored RedisBloomFilter's parameters describe, validated."""
    try:
        geometry = _Geometry(*(meta[name] for name in _Geometry._fields))
        _core.BloomPositions(*geometry)
        _check_shard_bits(meta["shard_bits"])
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"Redis key {key!r}: stored parameters {meta} do not describe a filter this bloomkit can build ({error})"
        ) from None
    return geometry


def _local_filter(geometry: _Geometry) -> BloomFilter:
    """An empty local BloomFilter with this geometry, described as a local filter would describe it.

    A filter sized for (capacity, error_rate) keeps them; one whose bits and
    hashes were chosen otherwise (``num_hashes=``) is, locally, an explicit
    geometry: ``BloomFilter.from_params`` derives its capacity and error rate.
    """
    sized = calc.bloom_params(geometry.capacity, geometry.error_rate, geometry.layout)
    if (sized.num_bits, sized.num_hashes) != (geometry.num_bits, geometry.num_hashes):
        return BloomFilter.from_params(
            geometry.num_bits, geometry.num_hashes, seed=geometry.seed, layout=geometry.layout
        )
    local = BloomFilter.__new__(BloomFilter)
    _core.BloomCore.__init__(local, *geometry)
    return local


# -- whole filters of any type ---------------------------------------------
_FRAME_KIND = "bloomkit.frame"
# Bounds on a stored header, checked before anything is sized from it.
_MAX_FRAME_CHUNKS = 1 << 16
_MAX_FRAME_BYTES = 1 << 40


def _frame_chunk_key(key: str, index: int) -> str:
    return f"{key}:frame:{index}"


def save(client, key, filter, *, chunk_size: int = _TRANSFER_CHUNK) -> None:
    """Store any bloomkit filter under ``key`` (its ``to_bytes()`` frame, chunked).

    ``KEY`` gets a JSON header (length, chunk count, MurmurHash3 checksum of
    the frame) and ``KEY:frame:0..N-1`` the chunks; everything, including
    the removal of a previous longer save's extra chunks, is written in one
    MULTI/EXEC transaction, so a concurrent :func:`load` sees the old filter
    or the new one.
    """
    if not isinstance(filter, _base.FilterBase):
        raise TypeError(f"save needs a bloomkit filter, got {type(filter).__name__}")
    _check_client(client)
    chunk_size = calc.check_capacity(chunk_size, "chunk_size")
    blob = filter.to_bytes()
    previous = _read_frame_header(client, key)
    count = -(-len(blob) // chunk_size)
    if count > _MAX_FRAME_CHUNKS:
        raise ValueError(
            f"a {len(blob):,}-byte frame in chunks of {chunk_size:,} bytes is {count:,} chunks; "
            f"at most {_MAX_FRAME_CHUNKS:,} (use a larger chunk_size)"
        )
    header = {"kind": _FRAME_KIND, "length": len(blob), "chunks": count, "checksum": _frame_checksum(blob)}
    pipe = client.pipeline(transaction=True)
    for index in range(count):
        pipe.set(_frame_chunk_key(key, index), blob[index * chunk_size : (index + 1) * chunk_size])
    stale = [_frame_chunk_key(key, index) for index in range(count, previous["chunks"] if previous else 0)]
    if stale:
        pipe.delete(*stale)
    pipe.set(key, json.dumps(header))
    pipe.execute()


def load(client, key):
    """Load a filter stored with :func:`save`; ``KeyError`` if there is none.

    The chunks are read in one transaction with the header; the length and
    checksum are verified (``ValueError`` on any mismatch), then the frame is
    validated by :func:`bloomkit.load` as from a file.
    """
    _check_client(client)
    for _attempt in range(5):
        header = _read_frame_header(client, key)
        if header is None:
            raise KeyError(f"Redis key {key!r} holds no saved bloomkit filter")
        # The chunks' sizes first: nothing is read (allocated) unless they add up to the header's length.
        replies = _per_chunk_under_header(client, key, header, "strlen")
        if replies is None:
            continue  # a save() replaced it between our reads: read again
        sizes = _expect_ints(replies, header["chunks"], key)
        if 0 in sizes:
            raise ValueError(f"saved filter at Redis key {key!r} is incomplete: a chunk is missing")
        if sum(sizes) != header["length"]:
            raise ValueError(
                f"saved filter at Redis key {key!r} is {sum(sizes)} bytes, its header says {header['length']}"
            )
        chunks = _per_chunk_under_header(client, key, header, "get")
        if chunks is None:
            continue
        if any(type(chunk) is not bytes for chunk in chunks):
            raise ValueError(f"saved filter at Redis key {key!r} is incomplete: a chunk is missing")
        blob = b"".join(chunks)
        if len(blob) != header["length"]:
            raise ValueError(
                f"saved filter at Redis key {key!r} is {len(blob)} bytes, its header says {header['length']}"
            )
        if _frame_checksum(blob) != header["checksum"]:
            raise ValueError(f"saved filter at Redis key {key!r} fails its checksum (corrupted in Redis)")
        return _base.load(blob)
    raise RuntimeError(f"saved filter at Redis key {key!r} kept changing while being read")


def _per_chunk_under_header(client, key, header, command):
    """``command`` (``"strlen"``, ``"get"``) of every chunk, in one transaction with the header.

    None if the header is no longer ``header`` (a ``save()`` replaced the filter meanwhile).
    """
    pipe = client.pipeline(transaction=True)
    pipe.get(key)
    for index in range(header["chunks"]):
        getattr(pipe, command)(_frame_chunk_key(key, index))
    replies = pipe.execute()
    if replies[0] is None or json.loads(_decode(replies[0])) != header:
        return None
    return replies[1:]


def _frame_checksum(blob: bytes) -> str:
    return f"{hash128(blob):032x}"


def _read_frame_header(client, key):
    from redis.exceptions import ResponseError

    try:
        raw = client.get(key)
    except ResponseError as error:
        raise ValueError(f"Redis key {key!r} holds something that is not a saved bloomkit filter: {error}") from None
    if raw is None:
        return None
    try:
        header = json.loads(_decode(raw))
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("kind") != _FRAME_KIND:
        raise ValueError(f"Redis key {key!r} holds something that is not a saved bloomkit filter")
    length, chunks, checksum = header.get("length"), header.get("chunks"), header.get("checksum")
    if not (_is_int(length) and 1 <= length <= _MAX_FRAME_BYTES):
        problem = f"length {length!r} is not an integer in [1, {_MAX_FRAME_BYTES}]"
    elif not (_is_int(chunks) and 1 <= chunks <= min(length, _MAX_FRAME_CHUNKS)):
        problem = f"chunks {chunks!r} is not an integer in [1, min(length, {_MAX_FRAME_CHUNKS})]"
    elif not (isinstance(checksum, str) and len(checksum) == 32):
        problem = f"checksum {checksum!r} is not 32 hex digits"
    else:
        return header
    raise ValueError(f"saved filter at Redis key {key!r} has a corrupt header: {problem}")


def _is_int(value) -> bool:
    return type(value) is int
