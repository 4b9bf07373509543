"""The per-user scenario of bench_redis.py: one small "already shown" filter per user.

A request for user u asks "which of these C candidates are new for u?" (one
round trip), then marks S of the new ones as shown (a second round trip, it
depends on the first answer). Compared, against one redis-server:

* ``bloomkit.redis_family.RedisFilterFamily``: ``contains_many([(u, candidates)])``,
  then ``update([(u, shown)])``;
* RedisBloom per-user keys: ``BF.MEXISTS u …`` then ``BF.INSERT u CAPACITY n ERROR p ITEMS …``.

Reported: requests/s of P processes together, bytes per user (``used_memory``
growth after loading every user with N items, divided by the users), the FPR
measured on absent items, and the protocol table that chose how the family
reads a member (whole-member ``GET`` probed in the client against per-bit
``BITFIELD_RO``).
"""

from __future__ import annotations

import multiprocessing
import time

import numpy as np

LOAD_USERS_PER_CALL = 50


def user_items(user: int, count: int) -> list:
    """The items user ``user`` was shown before the run (distinct per user)."""
    rng = np.random.default_rng(user)
    return [f"item:{j}" for j in rng.choice(10**9, size=count, replace=False)]


def absent_items(user: int, count: int) -> list:
    return [f"absent:{user}:{j}" for j in range(count)]


def _family(client, args):
    from bloomkit.redis_family import RedisFilterFamily

    return RedisFilterFamily(client, "shown", args.items, args.error_rate)


# -- loading every user with args.items items ---------------------------------------
def load_family(client, args) -> None:
    family = _family(client, args)
    for first in range(0, args.users, LOAD_USERS_PER_CALL):
        users = range(first, min(args.users, first + LOAD_USERS_PER_CALL))
        family.update([(f"u{user}", user_items(user, args.items)) for user in users])


def load_redisbloom(client, args) -> None:
    for first in range(0, args.users, LOAD_USERS_PER_CALL):
        pipe = client.pipeline(transaction=False)
        for user in range(first, min(args.users, first + LOAD_USERS_PER_CALL)):
            pipe.execute_command(
                "BF.INSERT",
                f"rb:u{user}",
                "CAPACITY",
                args.items,
                "ERROR",
                args.error_rate,
                "ITEMS",
                *user_items(user, args.items),
            )
        pipe.execute()


# -- one request ---------------------------------------------------------------------
def request_family(family, user: str, candidates: list, shown: int) -> int:
    new = ~family.contains_many([(user, candidates)])[0]
    picked = [item for item, fresh in zip(candidates, new) if fresh][:shown]
    family.update([(user, picked)])
    return len(picked)


def request_redisbloom(client, user: str, candidates: list, shown: int, args) -> int:
    seen = client.execute_command("BF.MEXISTS", f"rb:{user}", *candidates)
    picked = [item for item, present in zip(candidates, seen) if not present][:shown]
    if picked:
        client.execute_command(
            "BF.INSERT", f"rb:{user}", "CAPACITY", args.items, "ERROR", args.error_rate, "ITEMS", *picked
        )
    return len(picked)


def make_requests(args, part: int) -> list:
    """This process's requests: (user, candidates), half of them items the user was already shown."""
    rng = np.random.default_rng(1000 + part)
    requests = []
    for r in range(args.requests // args.processes):
        user = int(rng.integers(0, args.users))
        old = user_items(user, args.items)
        half = args.candidates // 2
        candidates = [old[i] for i in rng.choice(len(old), size=half, replace=False)]
        candidates += [f"new:{part}:{r}:{j}" for j in range(args.candidates - half)]
        requests.append((f"u{user}", candidates))
    return requests


def worker(url, method, args, part, barrier, results):
    import redis

    client = redis.Redis.from_url(url)
    requests = make_requests(args, part)
    family = _family(client, args) if method == "family" else None
    barrier.wait()
    start, cpu = time.perf_counter(), time.process_time()
    shown = 0
    for user, candidates in requests:
        if family is not None:
            shown += request_family(family, user, candidates, args.shown)
        else:
            shown += request_redisbloom(client, user, candidates, args.shown, args)
    results.put((time.perf_counter() - start, len(requests), shown, time.process_time() - cpu))
    client.close()


def measured_fpr(client, args, method) -> float:
    """Absent items over a sample of users (after the run: every generation the users have)."""
    users = range(0, args.users, max(1, args.users // 1000))
    per_user = max(1, args.probes // len(users))
    if method == "family":
        family = _family(client, args)
        found = family.contains_many([(f"u{user}", absent_items(user, per_user)) for user in users])
        return float(np.mean(np.concatenate(found)))
    pipe = client.pipeline(transaction=False)
    for user in users:
        pipe.execute_command("BF.MEXISTS", f"rb:u{user}", *absent_items(user, per_user))
    return float(np.mean(np.concatenate([np.asarray(r) for r in pipe.execute()])))


def run_per_user(url, method, args) -> dict:
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    base = client.info("memory")["used_memory"]
    start = time.perf_counter()
    (load_family if method == "family" else load_redisbloom)(client, args)
    load_seconds = time.perf_counter() - start
    per_user = (client.info("memory")["used_memory"] - base) / args.users
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(args.processes + 1)
    results = context.Queue()
    workers = [
        context.Process(target=worker, args=(url, method, args, p, barrier, results)) for p in range(args.processes)
    ]
    for process in workers:
        process.start()
    barrier.wait()
    start, server = time.perf_counter(), _server_cpu(client)
    outcome = [results.get() for _ in workers]
    wall, server = time.perf_counter() - start, _server_cpu(client) - server
    for process in workers:
        process.join()
    requests = sum(item[1] for item in outcome)
    fpr = measured_fpr(client, args, method)
    after = (client.info("memory")["used_memory"] - base) / args.users
    client.close()
    return {
        "rate": requests / wall,
        "load_s": load_seconds,
        "bytes_per_user": per_user,
        "bytes_after": after,
        "fpr": fpr,
        "shown": sum(item[2] for item in outcome),
        "requests": requests,
        "client_us": 1e6 * sum(item[3] for item in outcome) / requests,
        "server_us": 1e6 * server / requests,
    }


# -- how the family reads a member: whole GET vs per-bit BITFIELD_RO ---------------------
def read_protocol_cost(url, args, rounds: int) -> dict:
    """One user's 50-candidate lookup, sent the two ways, interleaved on one connection, one round trip each.

    "whole GET": the family's read (its script checks the keys, returns both
    generations; the client probes them). "per-bit": the same candidates'
    bits read by ``BITFIELD_RO`` (k GETs per candidate) on both generations
    in a MULTI/EXEC with the parameters' EXISTS — a lower bound of that
    protocol (no registry check). Median wall µs per request including the
    client's probing, and server CPU µs per request (``INFO cpu``).
    """
    import redis

    from bloomkit import _core
    from bloomkit.redis import _resp

    client = redis.Redis.from_url(url)
    client.flushall()
    family = _family(client, args)
    users = min(args.users, 200)
    for first in range(0, users, LOAD_USERS_PER_CALL):
        family.update([(f"u{u}", user_items(u, args.items)) for u in range(first, min(users, first + 50))])
    rng = np.random.default_rng(7)
    lookups = []
    for r in range(rounds):
        user = int(rng.integers(0, users))
        lookups.append((f"u{user}", user_items(user, args.items)[:25] + [f"n:{r}:{j}" for j in range(25)]))
    connection = client.connection_pool.get_connection()

    def whole(member, candidates):
        return family.contains_many([(member, candidates)])[0]

    def per_bit(member, candidates):
        positions = family._positions.positions_many(candidates).ravel()
        keys = family._keys(member.encode())
        commands = [_resp(b"MULTI"), _resp(b"EXISTS", keys[0])]
        for generation in keys[1:3]:
            commands.append(_core.redis_bitfield([b"BITFIELD_RO", generation], b"GET", b"", positions, 0))
        commands.append(_resp(b"EXEC"))
        connection.send_packed_command(commands)
        replies = [connection.read_response() for _ in commands][-1]
        found = np.zeros(len(candidates), dtype=bool)
        for bits in replies[1:]:
            found |= np.asarray(bits, dtype=np.uint8).reshape(len(candidates), -1).all(axis=1)
        return found

    variants = {"whole-member GET, probed in the client": whole, "per-bit BITFIELD_RO (MULTI/EXEC)": per_bit}
    times = {name: [] for name in variants}
    cpu = {name: 0.0 for name in variants}
    for first in range(0, rounds, 100):
        for name, read in variants.items():
            before = _server_cpu(client)
            for member, candidates in lookups[first : first + 100]:
                start = time.perf_counter()
                read(member, candidates)
                times[name].append(time.perf_counter() - start)
            cpu[name] += _server_cpu(client) - before
    agree = all((whole(m, c) == per_bit(m, c)).all() for m, c in lookups[:200])
    client.connection_pool.release(connection)
    client.close()
    return {name: (1e6 * float(np.median(times[name])), 1e6 * cpu[name] / rounds) for name in variants} | {
        "agree": agree
    }


def _server_cpu(client) -> float:
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def print_per_user(results: dict, protocol: dict, args) -> None:
    print(
        f"## Per-user filters: {args.users:,} users × {args.items:,} items at {args.error_rate:.0%}, "
        f"{args.candidates} candidates / {args.shown} shown per request, {args.processes} processes"
    )
    print()
    print(
        f"{args.requests:,} requests, each one user's lookup then its mark (two round trips, the second "
        "depends on the first). Bytes/user = `used_memory` growth after loading every user with "
        f"{args.items:,} items, divided by the users (and after the run). FPR on absent items, "
        f"~{args.probes:,} over 1,000 users, after the run."
    )
    print()
    print(
        "CPU µs/request: the processes' own CPU time (`time.process_time`) and redis-server's (`INFO cpu`) "
        "during the requests, per request: what the work costs, whatever else the machine runs."
    )
    print()
    print(
        "| method | requests/s | vs RedisBloom | client CPU µs/request | server CPU µs/request | bytes/user loaded "
        "| after run | vs RedisBloom | measured FPR | load s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rb = results.get("redisbloom")
    names = {"family": "bloomkit `RedisFilterFamily`", "redisbloom": "RedisBloom `BF.MEXISTS` + `BF.INSERT`"}
    for method, r in results.items():
        speed = f"{r['rate'] / rb['rate']:.2f}×" if rb else "n/a"
        memory = f"{r['bytes_per_user'] / rb['bytes_per_user']:.2f}×" if rb else "n/a"
        print(
            f"| {names[method]} | {r['rate']:,.0f} | {speed} | {r['client_us']:,.0f} | {r['server_us']:,.0f} | "
            f"{r['bytes_per_user']:,.0f} | {r['bytes_after']:,.0f} | "
            f"{memory} | {r['fpr']:.3%} | {r['load_s']:.0f} |"
        )
    print()
    if protocol:
        print(
            "How the family reads a member (the decision in docs/decisions.md): one user's 50-candidate "
            "lookup (a member of 1,000 items), one connection, one round trip each, interleaved blocks of 100; "
            f"both answer identically: {protocol['agree']}."
        )
        print()
        print("| read protocol | median µs per lookup (wall, incl. client) | server CPU µs per lookup |")
        print("|---|---:|---:|")
        for name, value in protocol.items():
            if name != "agree":
                print(f"| {name} | {value[0]:.1f} | {value[1]:.1f} |")
        print()
