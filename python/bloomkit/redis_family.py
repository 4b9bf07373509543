"""Families of small Bloom filters in Redis: one per user, tenant or feed, under one key prefix.

A recommendation backend keeps an "already shown" filter per user; a family
holds all of them with one geometry, stored once in the parameters key, so
opening a member costs no round trip and one pipeline serves a batch of
(member, keys) pairs for many members. Per member (docs/integrations.md,
"Filter families"):

* **exact test-and-set**: a member's write is a compare-and-set of its
  whole current generation against the one the answers were computed from,
  so of several processes adding the same key to a member exactly one is
  told it was new, and ``add_many`` answers as a local filter would;
* **generations**: a member's bits fill one generation; a key that could
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

Reads fetch a member's two generations whole (``GET`` of ~1.5 KB each for
1,000 keys at 1 %) and probe them in the client; writes compute the new
generation in the client from the last read (kept for the last 1,024
members) and compare-and-set it. Both are one core call on the generations'
bytes (the classic payload of docs/FORMAT.md; family_member.hpp), so a
member answers as a local filter, through the one hashing path, with no
per-key Python or NumPy call. docs/decisions.md has the measurements that
chose this over per-bit ``BITFIELD_RO`` reads and over test-and-set in Lua.
"""

from __future__ import annotations

import collections
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
# Keys per write call: at most one rotation per call (a fresh generation
# takes at least limit / k keys), and a bounded amount of client work.
_KEYS_PER_CALL = 128
# Rounds of compare-and-set before a write gives up (each round that fails was beaten by a write that succeeded).
_MAX_ROUNDS = 1000
# Members whose last-read generations a family keeps, to write without reading again.
_CACHED_MEMBERS = 1024
# Key batches the generations' core reads again and slices per call; others are handled on their positions.
_SLICEABLE = (list, tuple, np.ndarray)

# One script for reads and writes, so the loss checks exist once. It moves
# whole generations: a read returns both (one GET each, ~1.5 KB for 1,000 keys
# at 1 %); a write is a compare-and-set of the whole current generation,
# computed by the client from the generations it read, so the server does a
# handful of commands whatever the number of keys or k (docs/decisions.md).
# KEYS: parameters, current generation, previous generation, registry set.
# ARGV: mode ("read" or "write"), member, bytes of bits, ttl in ms (0: none),
# refresh (1/0); for "write": the current generation as read ('' absent, '?'
# unknown), whether a previous one was read ('1'/'0'), the new current
# generation, and, when the write rotated, the previous one (else '').
# "read" returns {current, previous} ('' for a missing generation); "write"
# returns 1 if done, else {current, previous}: the state to compute from again.
_MEMBER_SCRIPT = b"""\
local meta, cur, prev, reg = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', meta) == 0 then return redis.error_reply('BLOOMKIT_LOST ' .. meta) end
local mode, member = ARGV[1], ARGV[2]
local nbytes, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local forever = 4503599627370496
local now_ms = nil
local function now()
  if now_ms == nil then
    local t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
local cur_s = redis.call('GET', cur)
local prev_s = false
local prev_until = 0
if cur_s then
  for i = nbytes + 9, nbytes + 16 do prev_until = prev_until * 256 + string.byte(cur_s, i) end
else
  -- The current generation outlives the previous one; the registry says until when it lives.
  local until_ms = tonumber(redis.call('ZSCORE', reg, member) or '0')
  if redis.call('EXISTS', prev) == 1 or until_ms > now() then return redis.error_reply('BLOOMKIT_LOST ' .. cur) end
end
if prev_until ~= 0 then
  -- A write that goes through needs only to know the previous generation exists (~2 us less than a GET of it).
  if mode == 'read' then prev_s = redis.call('GET', prev) else prev_s = redis.call('EXISTS', prev) == 1 end
  if not prev_s and prev_until > now() then return redis.error_reply('BLOOMKIT_LOST ' .. prev) end
end
if mode == 'read' or (cur_s or '') ~= ARGV[6] or (prev_s and '1' or '0') ~= ARGV[7] then
  if prev_s == true then prev_s = redis.call('GET', prev) end
  return {cur_s or '', prev_s or ''}
end
local new_cur, new_prev = ARGV[8], ARGV[9]
local function register()
  if ttl == 0 then
    redis.call('ZADD', reg, forever, member)
  else
    redis.call('PEXPIREAT', cur, now() + ttl)
    redis.call('ZADD', reg, now() + ttl, member)
  end
end
if new_prev ~= '' then
  -- Rotation: the current generation, with the keys added before it, becomes the previous one (keeping its expiry).
  prev_until = redis.call('PEXPIRETIME', cur)
  if prev_until < 0 then prev_until = forever end
  redis.call('RENAME', cur, prev)
  redis.call('SETRANGE', prev, 0, new_prev)
  local b = {}
  for i = 8, 1, -1 do b[i] = prev_until % 256; prev_until = math.floor(prev_until / 256) end
  redis.call('SET', cur, string.sub(new_cur, 1, nbytes + 8) .. string.char(unpack(b)))
  register()
elseif cur_s then
  redis.call('SETRANGE', cur, 0, new_cur)
  if ttl > 0 and ARGV[5] == '1' then register() end
else
  redis.call('SET', cur, new_cur)
  redis.call('ZREMRANGEBYSCORE', reg, '-inf', now())
  register()
end
return 1
"""
_MEMBER_SCRIPT_SHA = hashlib.sha1(_MEMBER_SCRIPT).hexdigest().encode()
_LOST_PREFIX = "BLOOMKIT_LOST "


def _unpack(generation: bytes, nbytes: int) -> np.ndarray:
    """A generation's bits, one uint8 per bit (bloomkit bit i is bit i % 8 of byte i // 8)."""
    return np.unpackbits(np.frombuffer(generation, dtype=np.uint8, count=nbytes), bitorder="little")


def _pack(bits: np.ndarray) -> bytes:
    return np.packbits(bits, bitorder="little").tobytes()


def _bulk_strings(*args: bytes) -> bytes:
    """RESP bulk strings of ``args``: a command's arguments without its array header (``_resp``)."""
    return b"".join([b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args])


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
    """(num_bits, num_hashes) of one generation rotating at ``rotate_at`` of its bits set.

    At that fill a generation errs at most ``error_rate / 2`` (k hashes, each
    bit set with probability at most ``rotate_at``), and ``capacity`` keys
    fit in one generation in all but ~3e-5 of members (a 4-sigma margin on
    the number of bits they set). The formula is the core's
    (``rotating_generation_size`` in sizing.hpp).
    """
    n = calc.check_capacity(capacity)
    p = calc.check_error_rate(error_rate)
    if isinstance(rotate_at, bool) or not isinstance(rotate_at, (int, float)):
        raise ValueError(f"rotate_at must be a fill fraction strictly between 0 and 1, got {rotate_at!r}")
    num_bits, k, _ = _core.rotating_generation_size(n, p, float(rotate_at))
    if num_bits > _MAX_MEMBER_BITS:
        raise ValueError(
            f"capacity {n:,} at error_rate {p!r} needs {num_bits:,} bits per member; a family member is one "
            f"Redis string read whole, at most 2**32 bits (use RedisBloomFilter for large filters)"
        )
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

    Raises
    ------
    ValueError
        If ``prefix`` holds a family with other parameters, or something that
        is not a family.
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
        self._keys_per_call = max(1, min(_KEYS_PER_CALL, self._limit // num_hashes))
        # _command's RESP template: EVALSHA, the SHA, 4 keys (the parameters key, then the member's
        # current, previous and registry keys, whose lengths and tails are filled in), mode, member,
        # then bytes, ttl and refresh.
        prefix = self._prefix_bytes = self.prefix.encode()
        escaped = prefix.replace(b"%", b"%%")
        self._member_key_length = len(prefix) + 3  # "P:c:" + member
        self._registry_key_length = len(prefix) + 3  # "P:r:" + set number
        self._command_head = (
            b"*%d\r\n"
            + _bulk_strings(b"EVALSHA", _MEMBER_SCRIPT_SHA, b"4").replace(b"%", b"%%")
            + _bulk_strings(prefix).replace(b"%", b"%%")
            + b"$%d\r\n"
            + escaped
            + b":c:%b\r\n"
            + b"$%d\r\n"
            + escaped
            + b":p:%b\r\n"
            + b"$%d\r\n"
            + escaped
            + b":r:%b\r\n"
            + b"$%d\r\n%b\r\n$%d\r\n%b\r\n"
            + _bulk_strings(str(self.nbytes).encode(), str(ttl_ms).encode(), b"1" if refresh else b"0").replace(
                b"%", b"%%"
            )
        )
        self._cache = collections.OrderedDict()  # member -> (current, previous) as last read or written

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
        prefix = self._prefix_bytes
        registry = zlib.crc32(member) % self._meta["registry_sets"]
        return [prefix, prefix + b":c:" + member, prefix + b":p:" + member, b"%s:r:%d" % (prefix, registry)]

    def _command(self, mode: bytes, member: bytes, *write) -> bytes:
        """The member script's EVALSHA in RESP; the family's fixed arguments are encoded once (_attach).

        One ``%`` formatting per command: the member appears in three keys
        and as an argument, each framed here rather than by a per-argument
        join (a request's two commands are ~1/10 of its client CPU).
        """
        registry = b"%d" % (zlib.crc32(member) % self._meta["registry_sets"])
        n = len(member)
        head = self._command_head % (
            12 + len(write),
            self._member_key_length + n,
            member,
            self._member_key_length + n,
            member,
            self._registry_key_length + len(registry),
            registry,
            len(mode),
            mode,
            n,
            member,
        )
        return head + _bulk_strings(*write) if write else head

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
        """[(member bytes, keys, positions (n, k))] with every key validated before anything is sent.

        ``keys`` is the batch itself when it can be read again and sliced (a
        list, tuple or NumPy array: the generations' core then hashes it),
        else None (the positions are probed and set with NumPy).
        """
        if isinstance(pairs, (str, bytes, dict)):
            raise TypeError("a batch is an iterable of (member, keys) pairs")
        prepared = []
        for pair in pairs:
            try:
                member, keys = pair
            except (TypeError, ValueError):
                raise TypeError(f"a batch is an iterable of (member, keys) pairs, got {pair!r:.60}") from None
            batch = keys if type(keys) is list or type(keys) is tuple else _batch.single_batch(keys)
            positions = self._positions.positions_many(batch)
            prepared.append((_member_bytes(member), batch if isinstance(batch, _SLICEABLE) else None, positions))
        return prepared

    def add_many(self, pairs) -> list:
        """Insert each pair's keys into its member; per pair, per key, whether it was (probably) present before.

        Pairs and keys are applied in order (a key added twice answers
        False, then True; a member may appear in several pairs). Each write
        is a compare-and-set of the member's current generation against the
        one the answers were computed from (read by this family's last
        ``contains_many`` of the member, or fetched by the write itself):
        one round trip when nobody else wrote the member in between, one
        more per write that beat it. So each member's answers and count are
        exactly those of one process adding the keys in some order.
        """
        prepared = self._pairs(pairs)
        calls, answers = [], []
        step = self._keys_per_call
        for member, keys, positions in prepared:
            answers.append(np.zeros(len(positions), dtype=bool))
            for first in range(0, len(positions), step):
                part = None if keys is None else keys[first : first + step]
                calls.append((member, part, positions[first : first + step], len(answers) - 1, first))
        pending = list(range(len(calls)))
        for _round in range(_MAX_ROUNDS):
            if not pending:
                return answers
            packed, plan, projected = [], [], {}
            for index in pending:
                member, keys, positions, _pair, _first = calls[index]
                state = projected[member] if member in projected else self._cache.get(member)
                if state is None:  # not known: the write answers with the state
                    packed.append(self._command(b"write", member, b"?", b"0", b"", b""))
                    plan.append((index, None, None))
                    projected[member] = None
                    continue
                found, current, previous, rotated = self._test_and_set(state, keys, positions)
                packed.append(
                    self._command(
                        b"write", member, state[0], b"1" if state[1] else b"0", current, previous if rotated else b""
                    )
                )
                # Rotated: Redis writes the previous generation's expiry into the current one, so its bytes are not known here.
                after = None if rotated else (current, previous)
                plan.append((index, found, after))
                projected[member] = after
            replies = self._run(packed, [calls[index][0] for index, _, _ in plan])
            pending, failed = [], set()
            for (index, found, after), reply in zip(plan, replies):
                member, _keys, _positions, pair, first = calls[index]
                if member in failed:
                    pending.append(index)
                elif reply == 1 and found is not None:
                    answers[pair][first : first + len(found)] = found
                    self._remember(member, after)
                else:
                    self._remember(member, self._state(reply, member))
                    failed.add(member)
                    pending.append(index)
        raise RuntimeError(
            f"RedisFilterFamily {self.prefix!r}: a member kept changing under {_MAX_ROUNDS} rounds of writes"
        )

    def _remember(self, member: bytes, state) -> None:
        self._cache[member] = state
        self._cache.move_to_end(member)
        if len(self._cache) > _CACHED_MEMBERS:
            self._cache.popitem(last=False)

    def _test_and_set(self, state: tuple, keys, positions: np.ndarray) -> tuple:
        """Add the keys to the generations ``state`` here: (answers, current, previous, rotated).

        Sequential like a local filter: a key is present if all its bits are
        in the previous generation, or were set in the current one before it
        (by the state or by an earlier key of the batch). Before a key that
        could carry the current generation past its limit, the current one
        becomes the previous one (at most once per call, _KEYS_PER_CALL).

        Keys in a list, tuple or array go through one core call on the
        generations' bytes (``_member_add_many``, family_member.hpp: hashing,
        probing and the new bytes); other batches through ``positions``.
        """
        if keys is None:
            return self._test_and_set_positions(state, positions)
        nbytes = self.nbytes
        current, previous = state
        count = int.from_bytes(current[nbytes : nbytes + 8], "big") if current else 0
        trailer_rest = current[nbytes + 8 :] if current else bytes(8)
        found, bits, rotated, fresh, fresh_before = self._positions._member_add_many(
            keys, current, previous, self._limit
        )
        if rotated is None:
            return found, bits + (count + fresh).to_bytes(8, "big") + trailer_rest, previous, False
        # The current generation, with the keys added before the rotation, became the previous one.
        previous = rotated + (count + fresh_before).to_bytes(8, "big") + trailer_rest
        return found, bits + (count + fresh).to_bytes(8, "big") + bytes(8), previous, True

    def _test_and_set_positions(self, state: tuple, positions: np.ndarray) -> tuple:
        """``_test_and_set`` on the keys' bit positions, key by key where a rotation may fall."""
        nbytes, k = self.nbytes, self.num_hashes
        current, previous = state
        bits = np.zeros(8 * nbytes, dtype=np.uint8) if not current else _unpack(current, nbytes)
        count = int.from_bytes(current[nbytes : nbytes + 8], "big") if current else 0
        trailer_rest = current[nbytes + 8 :] if current else bytes(8)
        old = _unpack(previous, nbytes) if previous else None
        filled = int.from_bytes(current[:nbytes], "little").bit_count() if current else 0
        found = np.zeros(len(positions), dtype=bool)
        rotated = False
        start = 0
        if filled + len(positions) * k > self._limit:  # a rotation may fall in this call: key by key
            for i, key_positions in enumerate(positions):
                if old is not None and old[key_positions].all():
                    found[i] = True
                    continue
                if filled + k > self._limit:
                    previous = _pack(bits) + count.to_bytes(8, "big") + trailer_rest
                    old, bits, filled, rotated = bits, np.zeros_like(bits), 0, True
                    start = i
                    break
                before = bits[key_positions]
                found[i] = before.all()
                filled += len(np.unique(key_positions[before == 0]))
                bits[key_positions] = 1
                count += not found[i]
            else:
                start = len(positions)
        if start < len(positions):
            rest = positions[start:]
            in_previous = old[rest].all(axis=1) if old is not None else np.zeros(len(rest), dtype=bool)
            fresh = rest if old is None else rest[~in_previous]
            flat = fresh.ravel()
            key_of = np.repeat(np.arange(len(fresh), dtype=np.int32), k)
            # A bit was set before a key if the state had it or an earlier key of the batch set it first.
            setter = np.empty(len(bits), dtype=np.int32)
            setter[flat] = len(fresh)
            np.minimum.at(setter, flat, key_of)
            present = (bits[flat].astype(bool) | (setter[flat] < key_of)).reshape(len(fresh), k).all(axis=1)
            bits[flat] = 1
            count += int((~present).sum())
            answers = np.ones(len(rest), dtype=bool)
            answers[~in_previous] = present
            found[start:] = answers
        current = _pack(bits) + count.to_bytes(8, "big") + (bytes(8) if rotated else trailer_rest)
        return found, current, previous or b"", rotated

    def _state(self, reply, member: bytes) -> tuple:
        """(current, previous) from a read reply, checked against the family's geometry."""
        if type(reply) is not list or len(reply) != 2 or any(type(g) is not bytes for g in reply):
            raise RedisReplyError(f"RedisFilterFamily {self.prefix!r}: Redis answered {reply!r:.120} to a read")
        for generation in reply:
            if generation and len(generation) != self.nbytes + _TRAILER_BYTES:
                raise RedisReplyError(
                    f"RedisFilterFamily {self.prefix!r}, member {member!r}: a generation is {len(generation):,} "
                    f"bytes, the family's parameters say {self.nbytes + _TRAILER_BYTES:,}"
                )
        return tuple(reply)

    def update(self, pairs) -> None:
        """Insert each pair's keys into its member (``add_many`` without the answers)."""
        self.add_many(pairs)

    def _read(self, members: list) -> list:
        """[(current, previous)] generation bytes (b"" if absent) of each member, one round trip, checked."""
        replies = self._run([self._command(b"read", member) for member in members], members)
        states = [self._state(reply, member) for member, reply in zip(members, replies)]
        for member, state in zip(members, states):
            self._remember(member, state)
        return states

    def contains_many(self, pairs) -> list:
        """Per pair, per key, whether it is (probably) in its member (current or previous generation).

        One round trip reads every member named (each once); the bits are probed here.
        """
        prepared = self._pairs(pairs)
        unique = list(dict.fromkeys(member for member, _, _ in prepared))
        generations = dict(zip(unique, self._read(unique))) if unique else {}
        return [self._probe(generations[member], keys, positions) for member, keys, positions in prepared]

    def _probe(self, generations: tuple, keys, positions: np.ndarray) -> np.ndarray:
        if keys is not None:  # one core call probes both generations' bytes (family_member.hpp)
            return self._positions._member_contains_many(keys, *generations)
        found = None
        for generation in generations:
            if generation and len(positions):
                in_generation = _unpack(generation, self.nbytes)[positions].all(axis=1).astype(bool)
                found = in_generation if found is None else found | in_generation
        return np.zeros(len(positions), dtype=bool) if found is None else found

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
