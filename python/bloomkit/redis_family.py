"""Families of small Bloom filters in Redis: one per user, tenant or feed, under one key prefix.

A recommendation backend keeps an "already shown" filter per user; a family
holds all of them with one geometry, stored once in the parameters key, so
opening a member costs no round trip and one pipeline serves a batch of
(member, keys) pairs for many members. Per member (docs/integrations.md,
"Filter families"):

* **exact test-and-set**: a member's writes run in one Lua script, so of
  several processes adding the same key to a member exactly one is told it
  was new, and ``add_many`` answers as a local filter would;
* **generations**: a member's bits fill one generation; a batch that could
  carry it past ``rotate_at`` of its bits set (half by default) first turns
  it into the *previous* generation and starts a fresh one. Lookups OR both
  (a key in the previous one is "seen" and is not copied forward), so what
  was added since the last rotation is never forgotten, and each generation
  is sized so that at ``rotate_at`` its false-positive rate is at most half
  the target: the two together stay within ``error_rate``;
* **count**: the exact number of keys that were new when added, kept in the
  generation's trailer and carried through rotations;
* **TTL**: with ``ttl=`` a member expires that long after its generation
  was started, or after its last write with ``refresh_ttl=True``; the previous
  generation keeps its own expiry.

Storage, for a family at ``P`` and member ``M`` (UTF-8 or bytes):

* ``P``: the family's parameters (JSON), written once with the first open;
* ``P:c:M``: the current generation, the bits as in docs/FORMAT.md's payload
  (bloomkit bit i is bit ``i & 7`` of byte ``i >> 3``), followed by a 16-byte
  trailer: the member's count and the previous generation's expiry (0: no
  previous generation, 2**52: never), both big-endian int64;
* ``P:p:M``: the previous generation, same layout;
* ``P:r:B``: which members exist until when, member -> expiry in ms
  (2**52: never), in one of 4,096 sorted sets chosen by the member's CRC-32.

Nothing vanishes unnoticed (as :class:`~bloomkit.redis.RedisBloomFilter`): a
member whose generation key is gone while the registry or its trailer says it
should exist raises :class:`~bloomkit.redis.FilterLostError`, and so does
every operation once the parameters key is gone (restart without persistence,
FLUSHDB). Each check runs in the same script as the operation. A member that
expired or was never written is empty, not lost.

Reads fetch a member's two generations whole (``GET`` of ~1.4 KB each for
1,000 keys at 1 %) and probe them in the client; writes send the bit
positions. docs/decisions.md has the measurement that chose this over
per-bit ``BITFIELD_RO`` reads.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import zlib

import numpy as np

from . import _batch, _core, calc
from .redis import (
    FilterLostError,
    RedisReplyError,
    _check_client,
    _decode,
    _HeldConnection,
    _resp,
    _run_script,
)

__all__ = ["RedisFilterFamily", "FamilyMember"]

_META_KIND = "bloomkit.RedisFilterFamily"
_META_VERSION = 1
# Registry sorted sets per family: 4,096 keeps ~25 members per set up to
# 100,000 members, under Redis' zset-max-listpack-entries (128), where a
# member costs its name and ~10 bytes instead of a skiplist node (~70 bytes).
_REGISTRY_SETS = 4096
# "No expiry" in the registry and the trailer: 2**52 ms (year 144,683),
# exactly representable in a Redis score (a double) and a Lua number.
_FOREVER = 2**52
# Bytes after the bits of a generation: count, then the previous generation's expiry.
_TRAILER_BYTES = 16
# One generation is one Redis string fetched whole by every lookup: members are small filters.
_MAX_MEMBER_BITS = 2**32
# Bit positions per script call: the script passes 4 values per position to
# BITFIELD with unpack(), which refuses more than 8,000 (Lua's LUAI_MAXCSTACK).
_POSITIONS_PER_CALL = 1024

# One script for reads and writes, so the loss checks exist once.
# KEYS: parameters, current generation, previous generation, registry set.
# ARGV: mode ("read" or "add"), member, bytes of bits, rotation limit in set
# bits, ttl in ms (0: none), refresh (1/0), k, then for "add" the
# positions as BITFIELD triples "GET u1 OFFSET" (Redis bit numbering).
# "read" returns {current, previous} ('' for a missing generation); "add"
# returns one character per key, '1' if it was present before.
_MEMBER_SCRIPT = b"""\
local meta, cur, prev, reg = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', meta) == 0 then return redis.error_reply('BLOOMKIT_LOST ' .. meta) end
local mode, member = ARGV[1], ARGV[2]
local nbytes, limit, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local forever = 4503599627370496
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local trailer = nbytes * 8
local has_cur = redis.call('EXISTS', cur) == 1
local has_prev = redis.call('EXISTS', prev) == 1
local prev_until = 0
if has_cur then
  prev_until = redis.call('BITFIELD_RO', cur, 'GET', 'i64', trailer + 64)[1]
else
  -- The current generation outlives the previous one; the registry says until when it lives.
  local until_ms = tonumber(redis.call('ZSCORE', reg, member) or '0')
  if has_prev or until_ms > now then return redis.error_reply('BLOOMKIT_LOST ' .. cur) end
end
if prev_until > now and not has_prev then return redis.error_reply('BLOOMKIT_LOST ' .. prev) end
if mode == 'read' then
  return {redis.call('GET', cur) or '', redis.call('GET', prev) or ''}
end
local k = tonumber(ARGV[7])
local nkeys = (#ARGV - 7) / (3 * k)
local count, filled = 0, 0
if has_cur then
  count = redis.call('BITFIELD_RO', cur, 'GET', 'i64', trailer)[1]
  filled = redis.call('BITCOUNT', cur, 0, nbytes - 1)
end
-- A fresh current generation; the current one, if any, becomes the previous (keeping its expiry).
local function start_generation()
  if has_cur then
    prev_until = redis.call('PEXPIRETIME', cur)
    if prev_until < 0 then prev_until = forever end
    redis.call('RENAME', cur, prev)
    has_prev = true
  end
  redis.call('SETRANGE', cur, nbytes + 15, '\\0')
  redis.call('BITFIELD', cur, 'SET', 'i64', trailer + 64, prev_until)
  redis.call('ZREMRANGEBYSCORE', reg, '-inf', now)
  if ttl == 0 then
    redis.call('ZADD', reg, forever, member)
  else
    redis.call('PEXPIREAT', cur, now + ttl)
    redis.call('ZADD', reg, now + ttl, member)
  end
  has_cur, filled = true, 0
end
local function all_set(bits, first, last)
  for j = first, last do
    if bits[j] == 0 then return false end
  end
  return true
end
local function set_ops(keys)
  local ops = {}
  for _, key in ipairs(keys) do
    for j = 0, k - 1 do
      local n = #ops
      ops[n + 1], ops[n + 2], ops[n + 3], ops[n + 4] = 'SET', 'u1', ARGV[10 + 3 * (key * k + j)], '1'
    end
  end
  return ops
end
if has_cur then
  if ttl > 0 and ARGV[6] == '1' then
    redis.call('PEXPIREAT', cur, now + ttl)
    redis.call('ZADD', reg, now + ttl, member)
  end
else
  start_generation()
end
local answers = {}
if filled + nkeys * k <= limit then
  -- No key of the batch can carry the generation past its limit: one BITFIELD per generation.
  local in_prev = nil
  if has_prev then in_prev = redis.call('BITFIELD_RO', prev, unpack(ARGV, 8)) end
  local fresh = {}
  for key = 0, nkeys - 1 do
    if in_prev ~= nil and all_set(in_prev, key * k + 1, key * k + k) then
      answers[key + 1] = '1'
    else
      fresh[#fresh + 1] = key
    end
  end
  if #fresh > 0 then
    local old = redis.call('BITFIELD', cur, unpack(set_ops(fresh)))
    for i, key in ipairs(fresh) do
      if all_set(old, (i - 1) * k + 1, i * k) then
        answers[key + 1] = '1'
      else
        answers[key + 1], count = '0', count + 1
      end
    end
  end
else
  -- Near the limit: key by key, rotating before the first key that could carry it past.
  for key = 0, nkeys - 1 do
    local first = 8 + 3 * key * k
    local seen = has_prev and all_set(redis.call('BITFIELD_RO', prev, unpack(ARGV, first, first + 3 * k - 1)), 1, k)
    if not seen and filled + k > limit then
      start_generation()
      seen = all_set(redis.call('BITFIELD_RO', prev, unpack(ARGV, first, first + 3 * k - 1)), 1, k)
    end
    if seen then
      answers[key + 1] = '1'
    else
      local old = redis.call('BITFIELD', cur, unpack(set_ops({key})))
      for j = 1, k do filled = filled + 1 - old[j] end
      if all_set(old, 1, k) then
        answers[key + 1] = '1'
      else
        answers[key + 1], count = '0', count + 1
      end
    end
  end
end
redis.call('BITFIELD', cur, 'SET', 'i64', trailer, count)
return table.concat(answers)
"""
_MEMBER_SCRIPT_SHA = hashlib.sha1(_MEMBER_SCRIPT).hexdigest().encode()
_LOST_PREFIX = "BLOOMKIT_LOST "


def _member_bytes(member) -> bytes:
    if isinstance(member, str):
        return member.encode()
    if isinstance(member, (bytes, bytearray, memoryview)):
        return bytes(member)
    raise TypeError(f"a family member is named by a str or bytes, got {type(member).__name__}")


def _ttl_ms(ttl) -> int:
    """Milliseconds of ``ttl`` (seconds or a timedelta); 0 for None (no expiry)."""
    if ttl is None:
        return 0
    seconds = ttl.total_seconds() if isinstance(ttl, datetime.timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"ttl must be seconds (int or float) or a timedelta, got {type(ttl).__name__}")
    if not (0.001 <= seconds < 2**40):
        raise ValueError(f"ttl must be at least 1 ms and below 2**40 s, got {seconds!r} s")
    return round(seconds * 1000)


def family_geometry(capacity, error_rate, rotate_at) -> tuple:
    """(num_bits, num_hashes) of one generation: ``capacity`` keys reach ``rotate_at`` of the bits set
    while its false-positive rate is at most ``error_rate / 2``.

    Classic layout, k independent positions: a generation with a fraction f
    of its bits set answers "present" for an absent key with probability
    f^k, so k = ceil(ln(p/2) / ln f) keeps it at or below p/2 when it
    rotates; n keys set a fraction 1 - e^(-kn/m) of m bits, so
    m = -k n / ln(1 - f) reaches f at n keys. The OR of the current and
    previous generation then errs with probability at most
    1 - (1 - p/2)^2 < p.
    """
    n = calc.check_capacity(capacity)
    p = calc.check_error_rate(error_rate)
    if isinstance(rotate_at, bool) or not isinstance(rotate_at, (int, float)) or not 0 < rotate_at < 1:
        raise ValueError(f"rotate_at must be a fill fraction strictly between 0 and 1, got {rotate_at!r}")
    k = max(1, math.ceil(math.log(p / 2) / math.log(rotate_at)))
    if k > 64:
        raise ValueError(
            f"error_rate {p!r} at rotate_at {rotate_at!r} needs {k} hashes; at most 64 (rotate at a lower fill)"
        )
    num_bits = 64 * math.ceil(-k * n / math.log1p(-rotate_at) / 64)
    if num_bits > _MAX_MEMBER_BITS:
        raise ValueError(
            f"capacity {n:,} at error_rate {p!r} needs {num_bits:,} bits per member; a family member is one "
            f"Redis string read whole, at most 2**32 bits (use RedisBloomFilter for large filters)"
        )
    if math.floor(rotate_at * num_bits) < k:
        raise ValueError(f"capacity {n} is too small: a generation must take at least one key before it rotates")
    return num_bits, k


class RedisFilterFamily:
    """Many small Bloom filters ("members") under one Redis key prefix, with one geometry.

    Parameters
    ----------
    client : redis.Redis
        A redis-py client with ``decode_responses=False`` (the default).
    prefix : str
        The family's key: it holds the parameters; members live under ``prefix:c:``,
        ``prefix:p:`` and ``prefix:r:`` (module docstring).
    capacity : int
        Keys a member's generation takes before it rotates. With
        ``capacity=None`` an existing family is opened with its stored parameters.
    error_rate : float
        A member's false-positive rate is at most this, before and after
        rotations (each generation is sized for half of it).
    rotate_at : float, keyword-only
        Fraction of a generation's bits set at which it rotates (default 0.5, "half full").
    ttl : float or datetime.timedelta, keyword-only
        Seconds a member lives after its generation is started (or, with
        ``refresh_ttl=True``, after its last write); default no expiry.
    seed : int, keyword-only
        Hash seed.

    Raises ``ValueError`` if ``prefix`` holds a family with other parameters,
    or something that is not a family.
    """

    def __init__(
        self, client, prefix, capacity=None, error_rate=0.01, *, rotate_at=0.5, ttl=None, refresh_ttl=False, seed=0
    ):
        _check_client(client)
        self._client = client
        self._link = _HeldConnection(client)
        self.prefix = str(prefix)
        stored = self._read_meta()
        if capacity is None:
            if stored is None:
                raise KeyError(
                    f"Redis key {self.prefix!r} holds no bloomkit filter family; give capacity to create one"
                )
            self._attach(stored)
            return
        num_bits, num_hashes = family_geometry(capacity, error_rate, rotate_at)
        mine = {
            "kind": _META_KIND,
            "version": _META_VERSION,
            "capacity": int(capacity),
            "error_rate": float(error_rate),
            "rotate_at": float(rotate_at),
            "seed": calc.check_seed(seed),
            "num_bits": num_bits,
            "num_hashes": num_hashes,
            "ttl_ms": _ttl_ms(ttl),
            "refresh_ttl": bool(refresh_ttl),
            "registry_sets": _REGISTRY_SETS,
        }
        if stored is None and self._client.set(self.prefix, json.dumps(mine), nx=True):
            stored = mine
        elif stored is None:
            stored = self._read_meta()  # another client created it first
        if stored != mine:
            differing = sorted(name for name in mine if stored.get(name) != mine[name])
            detail = ", ".join(f"{name}={stored.get(name)!r} (asked {mine[name]!r})" for name in differing)
            raise ValueError(
                f"Redis key {self.prefix!r} already holds a filter family with other parameters: {detail}; "
                f"open it with RedisFilterFamily(client, {self.prefix!r}) or use another prefix"
            )
        self._attach(stored)

    def _read_meta(self):
        from redis.exceptions import ResponseError

        try:
            raw = self._client.get(self.prefix)
        except ResponseError as error:
            raise ValueError(
                f"Redis key {self.prefix!r} holds something that is not a filter family: {error}"
            ) from None
        if raw is None:
            return None
        try:
            meta = json.loads(_decode(raw))
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or meta.get("kind") != _META_KIND:
            raise ValueError(f"Redis key {self.prefix!r} holds something that is not a bloomkit filter family")
        if meta.get("version") != _META_VERSION:
            raise ValueError(
                f"Redis key {self.prefix!r} holds a filter family of unsupported version {meta.get('version')!r}"
            )
        return meta

    def _attach(self, meta: dict) -> None:
        try:
            num_bits, num_hashes = family_geometry(meta["capacity"], meta["error_rate"], meta["rotate_at"])
            if (num_bits, num_hashes) != (meta["num_bits"], meta["num_hashes"]):
                raise ValueError("num_bits/num_hashes are not those of its capacity, error_rate and rotate_at")
            self._positions = _core.BloomPositions(
                num_bits, num_hashes, calc.check_seed(meta["seed"]), meta["capacity"], meta["error_rate"], "classic"
            )
            ttl_ms, refresh, sets = meta["ttl_ms"], meta["refresh_ttl"], meta["registry_sets"]
            if not (type(ttl_ms) is int and 0 <= ttl_ms < 2**50 and type(refresh) is bool):
                raise ValueError("ttl_ms/refresh_ttl out of range")
            if not (type(sets) is int and 1 <= sets <= 2**20):
                raise ValueError("registry_sets out of range")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"Redis key {self.prefix!r}: stored family parameters {meta} are not valid ({error})"
            ) from None
        self._meta = meta
        self.num_bits, self.num_hashes = num_bits, num_hashes
        self.nbytes = num_bits // 8
        self._limit = math.floor(meta["rotate_at"] * num_bits)
        self._keys_per_call = max(1, min(_POSITIONS_PER_CALL, self._limit) // num_hashes)
        self._head_args = [
            str(self.nbytes).encode(),
            str(self._limit).encode(),
            str(ttl_ms).encode(),
            b"1" if refresh else b"0",
            str(num_hashes).encode(),
        ]

    capacity = property(lambda self: self._meta["capacity"], doc="Keys a generation takes before it rotates.")
    error_rate = property(lambda self: self._meta["error_rate"], doc="A member's false-positive rate bound.")
    rotate_at = property(lambda self: self._meta["rotate_at"], doc="Fill fraction at which a generation rotates.")
    seed = property(lambda self: self._meta["seed"], doc="Hash seed.")
    ttl = property(
        lambda self: self._meta["ttl_ms"] / 1000 if self._meta["ttl_ms"] else None,
        doc="Seconds a member lives (None: no expiry).",
    )
    refresh_ttl = property(lambda self: self._meta["refresh_ttl"], doc="Whether a write restarts the member's TTL.")

    def member(self, name) -> "FamilyMember":
        """The member called ``name`` (no round trip: a member exists once something is added to it)."""
        return FamilyMember(self, name)

    __getitem__ = member

    # -- Redis keys --------------------------------------------------------
    def _keys(self, member: bytes) -> list:
        prefix = self.prefix.encode()
        registry = zlib.crc32(member) % self._meta["registry_sets"]
        return [prefix, prefix + b":c:" + member, prefix + b":p:" + member, b"%s:r:%d" % (prefix, registry)]

    def _command(self, mode: bytes, member: bytes, positions=None) -> bytes:
        head = [b"EVALSHA", _MEMBER_SCRIPT_SHA, b"4", *self._keys(member), mode, member, *self._head_args]
        if positions is None:
            return _resp(*head)
        return _core.redis_bitfield(head, b"GET", b"", positions, 0)

    def _lost(self, member: bytes, gone: str) -> FilterLostError:
        return FilterLostError(
            f"RedisFilterFamily {self.prefix!r}, member {member!r}: Redis key {gone!r} is gone (restart without "
            "persistence, FLUSHDB, eviction or DEL) while the family says it exists: its bits are lost; "
            "delete the member to start it again, empty"
        )

    def _run(self, packed: list, members: list) -> list:
        replies = _run_script(self._link, packed, _MEMBER_SCRIPT, _MEMBER_SCRIPT_SHA)
        for reply, member in zip(replies, members):
            if isinstance(reply, Exception):
                message = str(reply)
                if message.startswith(_LOST_PREFIX):
                    raise self._lost(member, message[len(_LOST_PREFIX) :])
                raise reply
        return replies

    # -- batches of (member, keys) pairs ------------------------------------
    def _pairs(self, pairs) -> list:
        """[(member bytes, positions (n, k))] with every key validated before anything is sent."""
        if isinstance(pairs, (str, bytes, dict)):
            raise TypeError("a batch is an iterable of (member, keys) pairs")
        prepared = []
        for pair in pairs:
            try:
                member, keys = pair
            except (TypeError, ValueError):
                raise TypeError(f"a batch is an iterable of (member, keys) pairs, got {pair!r:.60}") from None
            prepared.append((_member_bytes(member), self._positions.positions_many(_batch.single_batch(keys))))
        return prepared

    def add_many(self, pairs) -> list:
        """Insert each pair's keys into its member; per pair, per key, whether it was (probably) present before.

        Pairs and keys are applied in order (a key added twice answers
        False, then True; a member may appear in several pairs), all in one
        round trip; each member's test-and-set is atomic in Redis.
        """
        prepared = self._pairs(pairs)
        packed, members, plan = [], [], []
        step = self._keys_per_call
        for member, positions in prepared:
            calls = 0
            for first in range(0, len(positions), step):
                packed.append(self._command(b"add", member, positions[first : first + step].ravel()))
                members.append(member)
                calls += 1
            plan.append((len(positions), calls))
        replies = self._run(packed, members) if packed else []
        answers, index = [], 0
        for count, calls in plan:
            parts = replies[index : index + calls]
            index += calls
            answers.append(self._answers(parts, count, members[index - 1] if calls else b""))
        return answers

    def _answers(self, parts: list, count: int, member: bytes) -> np.ndarray:
        if any(type(part) is not bytes for part in parts):
            raise RedisReplyError(f"RedisFilterFamily {self.prefix!r}: Redis answered {parts!r:.120} to an add")
        joined = b"".join(parts)
        if len(joined) != count or joined.translate(None, b"01"):
            raise RedisReplyError(
                f"RedisFilterFamily {self.prefix!r}, member {member!r}: Redis answered {len(joined)} characters "
                f"other than 0/1 to an add of {count} keys"
            )
        return np.frombuffer(joined, dtype=np.uint8) == ord("1")

    def update(self, pairs) -> None:
        """Insert each pair's keys into its member (``add_many`` without the answers)."""
        self.add_many(pairs)

    def _read(self, members: list) -> list:
        """[(current, previous)] generation bytes (b"" if absent) of each member, one round trip, checked."""
        replies = self._run([self._command(b"read", member) for member in members], members)
        generations = []
        for member, reply in zip(members, replies):
            if type(reply) is not list or len(reply) != 2 or any(type(g) is not bytes for g in reply):
                raise RedisReplyError(f"RedisFilterFamily {self.prefix!r}: Redis answered {reply!r:.120} to a read")
            for generation in reply:
                if generation and len(generation) != self.nbytes + _TRAILER_BYTES:
                    raise RedisReplyError(
                        f"RedisFilterFamily {self.prefix!r}, member {member!r}: a generation is {len(generation):,} "
                        f"bytes, the family's parameters say {self.nbytes + _TRAILER_BYTES:,}"
                    )
            generations.append(tuple(reply))
        return generations

    def contains_many(self, pairs) -> list:
        """Per pair, per key, whether it is (probably) in its member (current or previous generation).

        One round trip reads every member named (each once); the bits are probed here.
        """
        prepared = self._pairs(pairs)
        unique = list(dict.fromkeys(member for member, _ in prepared))
        generations = dict(zip(unique, self._read(unique))) if unique else {}
        return [self._probe(generations[member], positions) for member, positions in prepared]

    def _probe(self, generations: tuple, positions: np.ndarray) -> np.ndarray:
        found = np.zeros(len(positions), dtype=bool)
        if not len(positions):
            return found
        byte, bit = positions >> np.uint64(3), (positions & np.uint64(7)).astype(np.uint8)
        for generation in generations:
            if generation:
                bits = np.frombuffer(generation, dtype=np.uint8, count=self.nbytes)
                found |= ((bits[byte] >> bit) & 1).all(axis=1).astype(bool)
        return found

    def counts(self, members) -> list:
        """Per member, the exact number of keys it was told were new (since it was created or last expired)."""
        names = [_member_bytes(member) for member in members]
        return [
            int.from_bytes(current[self.nbytes : self.nbytes + 8], "big", signed=True) if current else 0
            for current, _previous in (self._read(names) if names else [])
        ]

    def delete_member(self, member) -> None:
        """Delete a member (both generations and its registry entry): it is empty afterwards, not lost."""
        _, current, previous, registry = self._keys(_member_bytes(member))
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(current, previous)
        pipe.zrem(registry, _member_bytes(member))
        pipe.execute()

    def delete(self) -> None:
        """Delete the whole family: parameters, registry and every member (SCAN of the prefix)."""
        prefix = self.prefix.encode()
        for kind in (b":c:", b":p:", b":r:"):
            pattern = _glob_escape(prefix + kind) + b"*"
            batch = []
            for key in self._client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    self._client.delete(*batch)
                    batch = []
            if batch:
                self._client.delete(*batch)
        self._client.delete(prefix)

    def __repr__(self) -> str:
        return (
            f"RedisFilterFamily(prefix={self.prefix!r}, capacity={self.capacity}, error_rate={self.error_rate}, "
            f"rotate_at={self.rotate_at}, num_bits={self.num_bits}, num_hashes={self.num_hashes}, ttl={self.ttl})"
        )


def _glob_escape(raw: bytes) -> bytes:
    """``raw`` as a literal in a Redis MATCH pattern."""
    out = bytearray()
    for byte in raw:
        if byte in b"*?[]\\":
            out += b"\\"
        out.append(byte)
    return bytes(out)


class FamilyMember:
    """One member of a :class:`RedisFilterFamily`, with the single-filter API (each call one round trip)."""

    def __init__(self, family: RedisFilterFamily, name):
        self.family = family
        self.name = name
        self._name = _member_bytes(name)

    def add_many(self, keys) -> np.ndarray:
        """Insert every key in order; per key, whether it was (probably) present before."""
        return self.family.add_many([(self._name, keys)])[0]

    def update(self, keys) -> None:
        self.family.add_many([(self._name, keys)])

    def contains_many(self, keys) -> np.ndarray:
        return self.family.contains_many([(self._name, keys)])[0]

    def add(self, key) -> bool:
        return bool(self.add_many([key])[0])

    def contains(self, key) -> bool:
        return bool(self.contains_many([key])[0])

    __contains__ = contains

    @property
    def count(self) -> int:
        """Exact number of keys this member was told were new."""
        return self.family.counts([self._name])[0]

    def delete(self) -> None:
        self.family.delete_member(self._name)

    def __repr__(self) -> str:
        return f"FamilyMember({self.family.prefix!r}, {self.name!r})"
