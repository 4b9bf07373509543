"""A time window in Redis: "seen in the last N days" for a crawler fleet.

:class:`RedisWindowFilter` keeps the generations of a
:class:`~bloomkit.WindowSpec` (the same window arithmetic as the local
:class:`~bloomkit.RotatingBloomFilter`): generation ``floor(t / I)`` of a
window W in g generations (I = W / (g - 1)) is one Redis string of bits,
``KEY:g:N``, that expires when it leaves the window. A lookup ORs the live
generations; an add tests the older live generations and sets the key's bits
in the current one, in one Lua script, so test-and-set is exact across
generations and processes. A key is remembered at least W and forgotten by
W + I after it was first added (a key found in an older generation is not
added again: its window runs from its first sighting, so a page is re-crawled
a window after it was crawled, however often it is linked). Each generation
is sized for ``capacity / (g - 1)`` keys at ``1 - (1 - p)^(1/g)``, so the OR
of the g live ones stays within ``error_rate``.

Storage (docs/integrations.md, "Time windows"):

* ``KEY``: the parameters (JSON), written once;
* ``KEY:gens``: a sorted set of the generations created (member and score
  the generation number; ``created``, score +inf, marks the set itself);
* ``KEY:g:N``: generation N's bits as docs/FORMAT.md's payload, one string
  (so a generation holds at most 2**32 bits), allocated whole when the first
  key of its interval is added.

An older generation is *sealed* once the client's clock is ``clock_skew``
past its end (no client whose clock differs by less writes to it again):
each window object fetches it once and probes it with the local Bloom
filter's core, so adds and lookups read only the unsealed generations' bits
in Redis, for the keys no sealed one holds (at most ``_SEALED_BYTES`` held).

A live generation the registry lists but whose key is gone, a gone registry,
or gone parameters raise :class:`~bloomkit.redis.FilterLostError` (checked in
the script for writes, in the reading transaction for lookups). A generation
nobody wrote to is empty. Generations expire by the server's clock a
``clock_skew`` after the client's clock says they left the window, so clients
whose clocks differ by less than that never see a live generation expire.
"""

from __future__ import annotations

import hashlib
import json
import math
import time

import numpy as np

from . import _batch, _core, calc
from ._window import WindowSpec
from .redis import (
    FilterLostError,
    RedisReplyError,
    _check_client,
    _decode,
    _HeldConnection,
    _resp,
    _run_script,
    _sized_geometry,
)

__all__ = ["RedisWindowFilter"]


def _rereadable(batch):
    """``batch`` itself, or its keys in a list if it is an iterator (read by more than one core call)."""
    try:
        once = iter(batch) is batch
    except TypeError:
        return batch  # a core batch (Arrow buffers), or not keys: the core says which
    return list(batch) if once else batch


_META_KIND = "bloomkit.RedisWindowFilter"
_META_VERSION = 1
_MAX_GENERATION_BITS = 2**32
# Bit positions per script call: the script hands 3 values per position to
# BITFIELD_RO and builds 4 per new key's position for BITFIELD, through
# unpack(), which refuses more than 8,000 (Lua's LUAI_MAXCSTACK).
_POSITIONS_PER_CALL = 1024
_LOST_PREFIX = "BLOOMKIT_LOST "
# Most bytes of sealed generations a window holds in the client (a larger window reads every generation in Redis).
_SEALED_BYTES = 64 * 2**20

# Creates the window (KEYS: parameters, registry; ARGV[1]: parameters) or returns the stored parameters.
_CREATE = b"""\
local stored = redis.call('GET', KEYS[1])
if stored then return stored end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], '+inf', 'created')
return false
"""
_CREATE_SHA = hashlib.sha1(_CREATE).hexdigest().encode()

# Test-and-set across generations. KEYS: parameters, registry, current
# generation, then the older live generations. ARGV: current generation number,
# its expiry in ms from now, bytes of a generation, k, oldest live generation
# number, number of older generations G, their numbers (G values), one
# character per older generation ('1': read its bits, '0': only check it
# exists, the client holds it sealed), then the positions as BITFIELD triples
# "GET u1 OFFSET". Returns one character per key, '1' if it was present (in a
# live generation read here) before.
_ADD = b"""\
local params, reg, cur = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', params) == 0 then return redis.error_reply('BLOOMKIT_LOST ' .. params) end
if redis.call('EXISTS', reg) == 0 then return redis.error_reply('BLOOMKIT_LOST ' .. reg) end
local k, nold = tonumber(ARGV[4]), tonumber(ARGV[6])
local read = ARGV[7 + nold]
local first = 8 + nold
local olds = {}
for i = 1, nold do
  local key = KEYS[3 + i]
  if redis.call('EXISTS', key) == 1 then
    if string.sub(read, i, i) == '1' and #ARGV >= first then
      olds[#olds + 1] = redis.call('BITFIELD_RO', key, unpack(ARGV, first))
    end
  elseif redis.call('ZSCORE', reg, ARGV[6 + i]) then
    return redis.error_reply('BLOOMKIT_LOST ' .. key)
  end
end
if redis.call('EXISTS', cur) == 0 then
  if redis.call('ZSCORE', reg, ARGV[1]) then return redis.error_reply('BLOOMKIT_LOST ' .. cur) end
  redis.call('SETRANGE', cur, tonumber(ARGV[3]) - 1, '\\0')
  redis.call('PEXPIRE', cur, ARGV[2])
  redis.call('ZADD', reg, ARGV[1], ARGV[1])
  redis.call('ZREMRANGEBYSCORE', reg, '-inf', '(' .. ARGV[5])
end
local answers, ops, fresh = {}, {}, {}
for key = 0, (#ARGV - first + 1) / (3 * k) - 1 do
  local seen = false
  for _, bits in ipairs(olds) do
    seen = true
    for j = key * k + 1, key * k + k do
      if bits[j] == 0 then seen = false; break end
    end
    if seen then break end
  end
  if seen then
    answers[key + 1] = '1'
  else
    fresh[#fresh + 1] = key
    for j = 0, k - 1 do
      local n = #ops
      ops[n + 1], ops[n + 2], ops[n + 3], ops[n + 4] = 'SET', 'u1', ARGV[first + 3 * (key * k + j) + 2], '1'
    end
  end
end
if #fresh > 0 then
  local old = redis.call('BITFIELD', cur, unpack(ops))
  for i, key in ipairs(fresh) do
    local present = '1'
    for j = (i - 1) * k + 1, i * k do
      if old[j] == 0 then present = '0'; break end
    end
    answers[key + 1] = present
  end
end
return table.concat(answers)
"""
_ADD_SHA = hashlib.sha1(_ADD).hexdigest().encode()


class RedisWindowFilter:
    """ "Seen in the last ``window``": a Bloom filter in Redis whose keys are forgotten after the window.

    Parameters
    ----------
    client : redis.Redis
        A redis-py client with ``decode_responses=False`` (the default).
    key : str
        The window's key (parameters); generations go to ``KEY:g:N``.
    capacity : int
        Keys added per window (``window`` of time); each generation takes
        ``capacity / (generations - 1)``. ``None`` opens an existing window.
    error_rate : float
        False-positive rate of a lookup (all live generations together).
    window : str or timedelta, keyword-only
        ``"7d"``, ``"12h"``, ``"90m"``, ``"30s"``: as :class:`~bloomkit.WindowSpec`
        (time windows only: a Redis window is shared by clients that agree on the time).
    generations : int, keyword-only
        Generations per window (default 5: a key is forgotten by W + W/4).
    seed, num_hashes : keyword-only
        As :class:`~bloomkit.redis.RedisBloomFilter` (``num_hashes`` trades
        memory for server work).
    clock : callable, keyword-only
        Seconds since the epoch (default ``time.time``); tests pass a fake clock.
    clock_skew : float, keyword-only
        Seconds a generation is kept in Redis past the end of its life
        (default 60): clients whose clocks differ by less never see a live
        generation expire.
    """

    def __init__(
        self,
        client,
        key,
        capacity=None,
        error_rate=0.01,
        *,
        window="7d",
        generations=5,
        seed=0,
        num_hashes=None,
        clock=time.time,
        clock_skew=60.0,
    ):
        _check_client(client)
        if not callable(clock):
            raise TypeError(f"clock must be callable (returning seconds), got {type(clock).__name__}")
        if isinstance(clock_skew, bool) or not isinstance(clock_skew, (int, float)) or not 0 <= clock_skew <= 86400:
            raise ValueError(f"clock_skew must be seconds in [0, 86400], got {clock_skew!r}")
        self._client = client
        self._link = _HeldConnection(client)
        self._clock = clock
        self._skew_ms = round(clock_skew * 1000)
        self.key = str(key)
        stored = self._read_meta()
        if capacity is None:
            if stored is None:
                raise KeyError(f"Redis key {self.key!r} holds no bloomkit window; give capacity to create one")
            self._attach(stored)
            return
        spec = WindowSpec(window, generations)
        if spec.unit != "seconds":
            raise ValueError(f"a Redis window is a duration such as '7d' (got a window of {spec.text} keys)")
        geometry = _sized_geometry(
            spec.generation_capacity(calc.check_capacity(capacity)),
            spec.generation_error_rate(calc.check_error_rate(error_rate)),
            calc.check_seed(seed),
            "classic",
            num_hashes,
        )
        mine = {
            "kind": _META_KIND,
            "version": _META_VERSION,
            "capacity": int(capacity),
            "error_rate": float(error_rate),
            "window": spec.text,
            "generations": spec.generations,
            "seed": geometry.seed,
            "num_bits": geometry.num_bits,
            "num_hashes": geometry.num_hashes,
        }
        self._attach(mine)  # validates before anything is written
        if stored is None:
            found = _run_script(
                self._link,
                [_resp(b"EVALSHA", _CREATE_SHA, b"2", self.key.encode(), self._registry, json.dumps(mine).encode())],
                _CREATE,
                _CREATE_SHA,
            )[0]
            if isinstance(found, Exception):
                raise found
            stored = mine if found is None else self._read_meta()
        if stored != mine:
            differing = sorted(name for name in mine if stored.get(name) != mine[name])
            detail = ", ".join(f"{name}={stored.get(name)!r} (asked {mine[name]!r})" for name in differing)
            raise ValueError(
                f"Redis key {self.key!r} already holds a window with other parameters: {detail}; "
                f"open it with RedisWindowFilter(client, {self.key!r}) or use another key"
            )

    def _read_meta(self):
        from redis.exceptions import ResponseError

        try:
            raw = self._client.get(self.key)
        except ResponseError as error:
            raise ValueError(f"Redis key {self.key!r} holds something that is not a bloomkit window: {error}") from None
        if raw is None:
            return None
        try:
            meta = json.loads(_decode(raw))
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or meta.get("kind") != _META_KIND or meta.get("version") != _META_VERSION:
            raise ValueError(f"Redis key {self.key!r} holds something that is not a bloomkit window (version 1)")
        return meta

    def _attach(self, meta: dict) -> None:
        try:
            spec = WindowSpec(meta["window"], meta["generations"])
            positions = _core.BloomPositions(
                meta["num_bits"],
                meta["num_hashes"],
                calc.check_seed(meta["seed"]),
                spec.generation_capacity(meta["capacity"]),
                spec.generation_error_rate(meta["error_rate"]),
                "classic",
            )
            if not 0 < meta["num_bits"] <= _MAX_GENERATION_BITS:
                raise ValueError(f"num_bits {meta['num_bits']} is above 2**32 (one Redis string per generation)")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"Redis key {self.key!r}: window parameters {meta} are not valid ({error})") from None
        self._meta, self.spec, self._positions = meta, spec, positions
        self.num_bits, self.num_hashes = meta["num_bits"], meta["num_hashes"]
        self.nbytes = 8 * -(-self.num_bits // 64)
        self._registry = (self.key + ":gens").encode()
        self._keys_per_call = max(1, _POSITIONS_PER_CALL // self.num_hashes)
        self._core_args = (
            self.num_bits,
            self.num_hashes,
            calc.check_seed(meta["seed"]),
            spec.generation_capacity(meta["capacity"]),
            spec.generation_error_rate(meta["error_rate"]),
            "classic",
        )
        self._held = {}  # sealed generation -> its bits in a core Bloom filter (None: never created)
        self._held_bytes = _SEALED_BYTES

    capacity = property(lambda self: self._meta["capacity"], doc="Keys added per window.")
    error_rate = property(lambda self: self._meta["error_rate"], doc="False-positive rate of a lookup.")

    def generation_key(self, generation: int) -> str:
        return f"{self.key}:g:{generation}"

    def _now(self) -> tuple:
        """(seconds now by the clock, current generation, live generations oldest first)."""
        now = float(self._clock())
        current = self.spec.generation_at(now)
        return now, current, list(self.spec.live(current))

    def _lost(self, gone: str) -> FilterLostError:
        return FilterLostError(
            f"RedisWindowFilter {self.key!r}: Redis key {gone!r} is gone (restart without persistence, FLUSHDB, "
            "eviction or DEL) while the window still needs it: the keys it held are lost"
        )

    # -- sealed generations -------------------------------------------------------
    def _sealed(self, now: float, olds: list) -> dict:
        """{generation: its bits in a core Bloom filter, or None if never created} for the sealed ``olds``.

        An older generation is sealed once this client's clock is
        ``clock_skew`` past its end: a client whose clock differs by less
        writes to a later one, so its bits never change again and are
        fetched once (one round trip, checked like a lookup) and probed
        here. Lookups and adds then read only the unsealed generations in
        Redis, while their loss checks still cover every live one.
        """
        held = self._held
        for generation in [g for g in held if g not in olds]:
            del held[generation]  # left the window
        if self.nbytes * len(olds) > self._held_bytes:
            return {}
        sealed_below = self.spec.generation_at(now - self._skew_ms / 1000)
        wanted = [g for g in olds if g < sealed_below and g not in held]
        if wanted:
            keys = [self.generation_key(g).encode() for g in wanted]
            commands = [
                _resp(b"MULTI"),
                _resp(b"EXISTS", self.key.encode()),
                _resp(b"EXISTS", self._registry),
                _resp(b"ZRANGEBYSCORE", self._registry, str(wanted[0]).encode(), str(wanted[-1]).encode()),
            ]
            for key in keys:
                # STRLEN before the bytes: at most a generation's bytes are read, whatever the key holds.
                commands += [_resp(b"STRLEN", key), _resp(b"GETRANGE", key, b"0", str(self.nbytes - 1).encode())]
            commands.append(_resp(b"EXEC"))
            replies = self._link.round_trip(commands)
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
            executed = replies[-1]
            if type(executed) is not list or len(executed) != 3 + 2 * len(wanted):
                raise RedisReplyError(f"RedisWindowFilter {self.key!r}: Redis answered {executed!r:.120} to a fetch")
            if executed[0] != 1:
                raise self._lost(self.key)
            if executed[1] != 1:
                raise self._lost(self._registry.decode())
            created = {int(g) for g in executed[2]}
            for index, generation in enumerate(wanted):
                size, bits = executed[3 + 2 * index], executed[4 + 2 * index]
                if isinstance(size, Exception):
                    raise size  # not a string (WRONGTYPE)
                if size == 0:
                    if generation in created:
                        raise self._lost(self.generation_key(generation))
                    held[generation] = None  # nobody added a key in its interval, and nobody will
                    continue
                if size != self.nbytes or type(bits) is not bytes or len(bits) != self.nbytes:
                    raise RedisReplyError(
                        f"RedisWindowFilter {self.key!r}: generation {generation} is {size!r} bytes, "
                        f"the parameters say {self.nbytes:,}"
                    )
                core = _core.BloomCore(*self._core_args)
                core._assign_payload(bits)
                held[generation] = core
        return {g: held[g] for g in olds if g in held}

    @staticmethod
    def _in_sealed(sealed: dict, batch, count: int) -> np.ndarray:
        """Per key, whether a sealed generation holds it (the local filter's lookup on its bits)."""
        found = np.zeros(count, dtype=bool)
        for core in sealed.values():
            if core is not None:
                found |= core._contains_many(batch)
        return found

    # -- writes ----------------------------------------------------------------
    def add_many(self, keys) -> np.ndarray:
        """Insert every key in order; per key, whether it was (probably) seen within the window before.

        One round trip (one more when an older generation has just been
        sealed); each script call is atomic across the generations. A key
        a sealed generation holds answers "seen" here and is not sent.
        """
        batch = _rereadable(_batch.single_batch(keys))
        positions = self._positions.positions_many(batch)
        answers = np.zeros(len(positions), dtype=bool)
        if not len(positions):
            return answers
        now, current, live = self._now()
        olds = live[:-1]
        sealed = self._sealed(now, olds)
        answers = self._in_sealed(sealed, batch, len(positions))
        sent = np.flatnonzero(~answers)
        expire_ms = max(1, math.ceil(((current + self.spec.generations) * self.spec.interval - now) * 1000))
        head = [
            b"EVALSHA",
            _ADD_SHA,
            str(3 + len(olds)).encode(),
            self.key.encode(),
            self._registry,
            self.generation_key(current).encode(),
            *[self.generation_key(g).encode() for g in olds],
            str(current).encode(),
            str(expire_ms + self._skew_ms).encode(),
            str(self.nbytes).encode(),
            str(self.num_hashes).encode(),
            str(live[0]).encode(),
            str(len(olds)).encode(),
            *[str(g).encode() for g in olds],
            "".join("0" if g in sealed else "1" for g in olds).encode(),
        ]
        step = self._keys_per_call
        # Every key held by a sealed generation: one call without keys still checks every generation for loss.
        firsts = range(0, len(sent), step) if len(sent) else [0]
        packed = [
            _core.redis_bitfield(head, b"GET", b"", positions[sent[first : first + step]].ravel(), 0)
            for first in firsts
        ]
        replies = _run_script(self._link, packed, _ADD, _ADD_SHA)
        for first, reply in zip(firsts, replies):
            part = sent[first : first + step]
            if isinstance(reply, Exception):
                message = str(reply)
                if message.startswith(_LOST_PREFIX):
                    raise self._lost(message[len(_LOST_PREFIX) :])
                raise reply
            if type(reply) is not bytes or len(reply) != len(part) or reply.translate(None, b"01"):
                raise RedisReplyError(
                    f"RedisWindowFilter {self.key!r}: Redis answered {reply!r:.80} to an add of {len(part)} keys"
                )
            answers[part] = np.frombuffer(reply, dtype=np.uint8) == ord("1")
        return answers

    def update(self, keys) -> None:
        """Insert every key (``add_many`` without the answers)."""
        self.add_many(keys)

    def add(self, key) -> bool:
        return bool(self.add_many([key])[0])

    # -- lookups ---------------------------------------------------------------
    def contains_many(self, keys) -> np.ndarray:
        """Per key, whether it was (probably) added within the window: the OR of the live generations.

        One round trip (one more when an older generation has just been
        sealed); per 1,024 bit positions one MULTI/EXEC reads the
        parameters' and registry's existence, the generations created, each
        live generation's existence and the bits of the unsealed ones, for the
        keys no sealed generation holds.
        """
        batch = _rereadable(_batch.single_batch(keys))
        positions = self._positions.positions_many(batch)
        found = np.zeros(len(positions), dtype=bool)
        if not len(positions):
            return found
        now, current, live = self._now()
        sealed = self._sealed(now, live[:-1])
        found = self._in_sealed(sealed, batch, len(positions))
        sent = np.flatnonzero(~found)
        firsts = range(0, len(sent), self._keys_per_call) if len(sent) else [0]
        step = self._keys_per_call
        head = [
            _resp(b"MULTI"),
            _resp(b"EXISTS", self.key.encode()),
            _resp(b"EXISTS", self._registry),
            _resp(b"ZRANGEBYSCORE", self._registry, str(live[0]).encode(), str(current).encode()),
        ]
        commands = []
        nothing = np.zeros(0, dtype=np.uint64)
        for first in firsts:
            flat = positions[sent[first : first + step]].ravel()
            commands += head
            for generation in live:
                key = self.generation_key(generation).encode()
                commands.append(_resp(b"EXISTS", key))
                read = nothing if generation in sealed else flat  # a sealed generation was probed here
                commands.append(_core.redis_bitfield([b"BITFIELD_RO", key], b"GET", b"", read, 0))
            commands.append(_resp(b"EXEC"))
        replies = self._link.round_trip(commands)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        per_chunk = len(head) + 2 * len(live) + 1
        for chunk, first in enumerate(firsts):
            part = sent[first : first + step]
            found[part] = self._found(replies[(chunk + 1) * per_chunk - 1], positions[part], live, sealed)
        return found

    def _found(self, executed, positions: np.ndarray, live: list, sealed: dict) -> np.ndarray:
        """The OR over the unsealed live generations of one lookup transaction's reply, after its loss checks."""
        found = np.zeros(len(positions), dtype=bool)
        if type(executed) is not list or len(executed) != 3 + 2 * len(live):
            raise RedisReplyError(f"RedisWindowFilter {self.key!r}: Redis answered {executed!r:.120} to a lookup")
        if executed[0] != 1:
            raise self._lost(self.key)
        if executed[1] != 1:
            raise self._lost(self._registry.decode())
        created = {int(g) for g in executed[2]}
        for index, generation in enumerate(live):
            exists, bits = executed[3 + 2 * index], executed[4 + 2 * index]
            if exists != 1:
                if generation in created:
                    raise self._lost(self.generation_key(generation))
                continue
            if generation in sealed:
                continue
            if type(bits) is not list or len(bits) != positions.size:
                raise RedisReplyError(
                    f"RedisWindowFilter {self.key!r}: BITFIELD_RO answered "
                    f"{len(bits) if type(bits) is list else bits!r} values for {positions.size} bits"
                )
            found |= np.asarray(bits, dtype=np.uint8).reshape(positions.shape).all(axis=1).astype(bool)
        return found

    def contains(self, key) -> bool:
        return bool(self.contains_many([key])[0])

    __contains__ = contains

    def delete(self) -> None:
        """Delete the window: parameters, registry and every generation it lists."""
        listed = self._client.zrange(self._registry, 0, -1)
        generations = [self.generation_key(int(g)) for g in listed if g != b"created"]
        self._client.delete(self.key, self._registry, *generations)

    def __repr__(self) -> str:
        return (
            f"RedisWindowFilter(key={self.key!r}, window={self.spec.text!r}, generations={self.spec.generations}, "
            f"capacity={self.capacity}, error_rate={self.error_rate}, num_bits={self.num_bits}, "
            f"num_hashes={self.num_hashes})"
        )
