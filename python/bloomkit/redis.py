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
  shards past Redis' 512 MB string limit are never needed.

:func:`save` and :func:`load` store a whole filter of any type as its
``to_bytes()`` frame, for filters that are loaded and saved rather than shared.
"""

from __future__ import annotations

import json
import math
import os
import threading
import weakref
from typing import NamedTuple

import numpy as np

from . import _base, _batch, _core, calc
from ._core import hash128
from ._fill import estimate_cardinality, fill_false_positive_rate
from .bloom import BloomFilter

__all__ = ["RedisBloomFilter", "save", "load", "DEFAULT_SHARD_BITS"]

# 2**31 bits = 256 MiB per Redis string: half of Redis' 512 MB limit
# (proto-max-bulk-len), so one shard is also sendable in one reply.
DEFAULT_SHARD_BITS = 2**31
# Redis addresses bit offsets below 2**32 in one string.
_MAX_SHARD_BITS = 2**32
# BITFIELD sub-operations per command: large batches are split into several
# commands in the same pipeline (still one round trip) so that neither side
# builds one enormous reply.
_OPS_PER_COMMAND = 1 << 16
# Bytes per GETRANGE/SETRANGE when whole shards or frames are moved.
_TRANSFER_CHUNK = 32 << 20
# A pool this small may need every connection for the application's own commands.
_MIN_POOL_TO_HOLD = 8
_META_KIND = "bloomkit.RedisBloomFilter"
_META_VERSION = 1


# BITFIELD sub-operations: (command, op, value); see cpp/include/bloomkit/redis_bitfield.hpp,
# which also maps bloomkit bit numbering (LSB first) to Redis' (MSB first in each byte).
_SET_BIT = (b"BITFIELD", b"SET", b"1")
_GET_BIT = (b"BITFIELD_RO", b"GET", b"")


def _round_trip(connection, packed: list) -> list:
    """Send pre-packed commands in one write and read their replies (a pipeline without redis-py's encoder)."""
    try:
        connection.send_packed_command(packed)
        return [connection.read_response() for _ in packed]
    except BaseException:
        # A reply may be left unread: drop the socket (the next send reconnects).
        connection.disconnect()
        raise


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
    benchmarks/results/2026-11-24-redis-crawler-held.md), paid on every page a
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
        instance._publish_meta(stored)
        payload = filter._payload()
        pipe = client.pipeline(transaction=True)
        for shard, (start, stop) in enumerate(instance._shard_byte_ranges()):
            shard_key = instance._shard_key(shard)
            pipe.delete(shard_key)
            for offset in range(start, stop, _TRANSFER_CHUNK):
                pipe.setrange(shard_key, offset - start, payload[offset : min(stop, offset + _TRANSFER_CHUNK)])
        pipe.execute()
        return instance

    # -- parameters ------------------------------------------------------
    def _attach(self, geometry: "_Geometry", shard_bits: int) -> None:
        self._geometry = geometry
        # Validates the geometry (as a local filter's constructor would).
        self._positions = _core.BloomPositions(*geometry)
        self.shard_bits = shard_bits
        self.num_shards = -(-geometry.num_bits // shard_bits)

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
        if meta.get("version") != _META_VERSION:
            raise ValueError(
                f"Redis key {self.key!r} holds a RedisBloomFilter of unsupported version {meta.get('version')!r}"
            )
        return meta

    def _publish_meta(self, stored) -> None:
        """Store this filter's parameters, or check them against the stored ones.

        ``SET NX`` makes creation race-free: of two processes creating the
        same key at once, one writes and the other reads and compares.
        """
        mine = self._meta()
        if stored is None and self._client.set(self.key, json.dumps(mine), nx=True):
            return
        if stored is None:
            stored = self._read_meta()
        if stored != mine:
            differing = sorted(name for name in mine if stored.get(name) != mine[name])
            detail = ", ".join(f"{name}={stored.get(name)!r} (asked {mine[name]!r})" for name in differing)
            raise ValueError(
                f"Redis key {self.key!r} already holds a Bloom filter with other parameters: {detail}; "
                f"open it with RedisBloomFilter(client, {self.key!r}) or use another key"
            )

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
        """
        positions = self._positions.positions_many(_batch.single_batch(keys))
        flat = positions.ravel()
        replies = np.empty(flat.shape, dtype=np.uint8)
        if flat.size == 0:
            return replies.reshape(positions.shape)
        packed, plan = [], []  # plan: (indices into flat or None for all, first, count) per command
        for shard, where in self._group_by_shard(flat):
            bits = flat if where is None else flat[where]
            command, op, value = operation
            for first in range(0, len(bits), _OPS_PER_COMMAND):
                part = bits[first : first + _OPS_PER_COMMAND]
                packed.append(
                    _core.redis_bitfield(
                        command, self._shard_key(shard).encode(), op, value, part, shard * self.shard_bits
                    )
                )
                plan.append((where, first, len(part)))
        for (where, first, count), reply in zip(plan, self._link.round_trip(packed)):
            # Every reply is 0 or 1 (u1 fields): bytes() packs the list in C.
            bits = np.frombuffer(bytes(reply), dtype=np.uint8)
            if where is None:
                replies[first : first + count] = bits
            else:
                replies[where[first : first + count]] = bits
        return replies.reshape(positions.shape)

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
    def _set_bits(self) -> int:
        pipe = self._client.pipeline(transaction=True)
        for shard_key in self.shard_keys:
            pipe.bitcount(shard_key)
        return sum(pipe.execute())

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
        pipe = self._client.pipeline(transaction=True)
        for shard, (start, stop) in enumerate(ranges):
            for offset in range(start, stop, _TRANSFER_CHUNK):
                last = min(stop, offset + _TRANSFER_CHUNK) - 1
                pipe.getrange(self._shard_key(shard), offset - start, last - start)
        parts = pipe.execute()
        # Redis strings end at their last written byte; the rest is zero.
        payload = bytearray(self.nbytes)
        index = 0
        for start, stop in ranges:
            for offset in range(start, stop, _TRANSFER_CHUNK):
                part = parts[index]
                index += 1
                payload[offset : offset + len(part)] = part
        local = _local_filter(self._geometry)
        local._assign_payload(payload)
        return local

    def clear(self) -> None:
        """Remove every key (deletes the bit shards, keeps the parameters)."""
        self._client.delete(*self.shard_keys)

    def delete(self) -> None:
        """Delete the filter from Redis: parameters and bits."""
        self._client.delete(self.key, *self.shard_keys)

    def __repr__(self) -> str:
        return (
            f"RedisBloomFilter(key={self.key!r}, capacity={self.capacity}, error_rate={self.error_rate}, "
            f"num_bits={self.num_bits}, num_hashes={self.num_hashes}, seed={self.seed}, shards={self.num_shards})"
        )


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
    if isinstance(num_hashes, bool) or not hasattr(num_hashes, "__index__"):
        raise TypeError(f"num_hashes must be an int in [1, 64], got {type(num_hashes).__name__}")
    k = int(num_hashes.__index__())
    if not 1 <= k <= 64:
        raise ValueError(f"num_hashes must be in [1, 64], got {k}")
    n = calc.check_capacity(capacity)
    p = calc.check_error_rate(error_rate)
    # The fewest bits m at which k hashes meet p: (1 - e^(-kn/m))^k <= p
    # <=> m >= -k n / ln(1 - p^(1/k)), the classic layout's model (calc).
    num_bits = math.ceil(-k * n / math.log1p(-(p ** (1 / k))))
    if not 0 < num_bits < 2**63:
        raise ValueError(
            f"capacity {n:,} at error_rate {p!r} with {k} hashes needs {num_bits:,} bits; at most 2**63 - 1"
        )
    return _Geometry(num_bits, k, seed, n, float(p), "classic")


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
    """An empty local BloomFilter with exactly this geometry (capacity and error_rate included)."""
    local = BloomFilter.__new__(BloomFilter)
    _core.BloomCore.__init__(local, *geometry)
    return local


# -- whole filters of any type ---------------------------------------------
_FRAME_KIND = "bloomkit.frame"


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
        pipe = client.pipeline(transaction=True)
        pipe.get(key)
        for index in range(header["chunks"]):
            pipe.get(_frame_chunk_key(key, index))
        replies = pipe.execute()
        if replies[0] is None or json.loads(_decode(replies[0])) != header:
            continue  # a save() replaced it between our two reads: read again
        chunks = replies[1:]
        if any(chunk is None for chunk in chunks):
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
    return header
