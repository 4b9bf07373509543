"""The 7-day-window crawler of bench_redis.py: "seen in the last 7 days", shared by P processes.

Simulated days (a fake clock, one day per step): each day's frontier holds
``--new-per-day`` URLs never seen before and as many links back to URLs of the
last ten days. P processes check-and-add the day's links in pages of L, then
meet at a barrier before the next day. Compared, against one redis-server:

* ``bloomkit.redis_window.RedisWindowFilter`` (window "7d", 8 generations of
  one day: a URL is kept at least 7 days, forgotten by 8) — ``add_many(page)``,
  one round trip, test-and-set exact across days;
* RedisBloom, one key per day: per page ``BF.MEXISTS`` on the 7 previous days
  and ``BF.MADD`` on today's key, pipelined in one round trip (the usual
  RedisBloom recipe; it adds every link to today's key, re-sightings included).

Reported: URLs/s (all processes, wall clock), memory of the live keys at the
end, URLs reported new, and the FPR measured on absent URLs over the window.
"""

from __future__ import annotations

import multiprocessing
import time

import numpy as np

DAY = 86400.0
WINDOW_DAYS = 7
FRONTIER: list = []  # per day: the day's links (built in the parent before forking)
BUSIEST: list = [0]  # the most keys first seen (within the window) on one day: a generation's load


def build_frontier(args) -> None:
    rng = np.random.default_rng(5)
    FRONTIER.clear()
    for day in range(args.days):
        new = np.arange(day * args.new_per_day, (day + 1) * args.new_per_day)
        back = rng.integers(max(0, day - 10) * args.new_per_day, max(1, day * args.new_per_day), size=args.new_per_day)
        links = np.concatenate([new, back if day else new])
        rng.shuffle(links)
        FRONTIER.append([f"https://site{i % 5000}.example.org/page/{i}" for i in links])
    # Keys a day adds to the window: links whose URL was not first seen in the 7 days before (nor earlier today).
    first_seen: dict = {}
    for day in range(args.days):
        added = 0
        for url in FRONTIER[day]:
            if url not in first_seen or first_seen[url] < day - WINDOW_DAYS:
                first_seen[url] = day
                added += 1
        BUSIEST[0] = max(BUSIEST[0], added)


def _window(client, args, clock, num_hashes=None):
    from bloomkit.redis_window import RedisWindowFilter

    # Sized for the busiest day in every generation (one day each, 7 per window).
    return RedisWindowFilter(
        client,
        "win",
        WINDOW_DAYS * BUSIEST[0],
        args.error_rate,
        window="7d",
        generations=8,
        clock=clock,
        num_hashes=num_hashes,
    )


NUM_HASHES = {"bloomkit": None, "bloomkit, num_hashes=2": 2}


def _day_key(day: int) -> str:
    return f"rb:day:{day}"


def worker(url, method, args, part, barriers, results):
    import redis

    client = redis.Redis.from_url(url)
    clock = _Clock()
    seen = _window(client, args, clock, NUM_HASHES[method]) if method in NUM_HASHES else None
    elapsed, new, cpu = 0.0, 0, 0.0
    for day in range(args.days):
        mine = FRONTIER[day][part :: args.processes]
        pages = [mine[i : i + args.page] for i in range(0, len(mine), args.page)]
        clock.now = day * DAY + 3600.0
        barriers.wait()
        start, started_cpu = time.perf_counter(), time.process_time()
        for page in pages:
            if seen is not None:
                new += int((~seen.add_many(page)).sum())
            else:
                pipe = client.pipeline(transaction=False)
                for back in range(1, WINDOW_DAYS + 1):
                    if day - back >= 0:
                        pipe.execute_command("BF.MEXISTS", _day_key(day - back), *page)
                pipe.execute_command("BF.MADD", _day_key(day), *page)
                replies = pipe.execute()
                older = np.any(np.asarray(replies[:-1], dtype=bool), axis=0) if len(replies) > 1 else False
                new += int((~np.asarray(older, dtype=bool) & np.asarray(replies[-1], dtype=bool)).sum())
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - started_cpu
        barriers.wait()
    results.put((elapsed, new, cpu))
    client.close()


class _Clock:
    now = 0.0

    def __call__(self):
        return self.now


def run_window(url, method, args) -> dict:
    import redis

    if not FRONTIER:
        build_frontier(args)
    client = redis.Redis.from_url(url)
    client.flushall()
    if method in NUM_HASHES:
        _window(client, args, _Clock(), NUM_HASHES[method])
    else:
        # Each day's key holds every URL linked that day (new and re-sighted), at the rate of one of 8 generations.
        per_day = 1 - (1 - args.error_rate) ** (1 / (WINDOW_DAYS + 1))
        for day in range(args.days):
            client.execute_command("BF.RESERVE", _day_key(day), per_day, 2 * args.new_per_day, "NONSCALING")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(args.processes)
    results = context.Queue()
    workers = [
        context.Process(target=worker, args=(url, method, args, p, barrier, results)) for p in range(args.processes)
    ]
    server = _server_cpu(client)
    for process in workers:
        process.start()
    outcome = [results.get() for _ in workers]
    server = _server_cpu(client) - server
    for process in workers:
        process.join()
    links = sum(len(day) for day in FRONTIER)
    wall = max(item[0] for item in outcome)
    last = args.days - 1
    probes = [f"https://absent.example.net/{i}" for i in range(args.probes)]
    if method in NUM_HASHES:
        clock = _Clock()
        clock.now = last * DAY + 3600.0
        seen = _window(client, args, clock, NUM_HASHES[method])
        fpr = float(seen.contains_many(probes).mean())
        live = [seen.generation_key(g) for g in seen.spec.live(seen.spec.generation_at(clock.now))]
    else:
        live = [_day_key(day) for day in range(max(0, last - WINDOW_DAYS), last + 1)]
        pipe = client.pipeline(transaction=False)
        for key in live:
            pipe.execute_command("BF.MEXISTS", key, *probes)
        fpr = float(np.any(np.asarray(pipe.execute(), dtype=bool), axis=0).mean())
    memory = sum(client.memory_usage(key, samples=0) or 0 for key in live)
    client.close()
    return {
        "rate": links / wall,
        "new": sum(item[1] for item in outcome),
        "fpr": fpr,
        "memory": memory,
        "links": links,
        "client_us": 1e6 * sum(item[2] for item in outcome) / (links / args.page),
        "server_us": 1e6 * server / (links / args.page),
    }


def _server_cpu(client) -> float:
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


METHODS = ("bloomkit", "bloomkit, num_hashes=2", "redisbloom")


def print_window(results: dict, args) -> None:
    print(
        f"## 7-day window crawler: {args.days} simulated days, {args.new_per_day:,} new URLs and as many links "
        f"back per day, {args.processes} processes, pages of {args.page}, error_rate {args.error_rate}"
    )
    print()
    print(
        f"bloomkit's window is sized for the busiest day in every generation ({BUSIEST[0]:,} keys first seen "
        "within the window on one day); RedisBloom's day keys for every link of a day (it adds re-sightings too)."
    )
    print()
    print(
        "URLs/s = links checked-and-added per second by all processes (wall clock of the slowest, days summed). "
        "Memory = `MEMORY USAGE` of the live keys at the end (bloomkit: 8 generations of one day; RedisBloom: "
        f"today and 7 days back). FPR on {args.probes:,} absent URLs over the whole window."
    )
    print()
    print(
        "CPU µs/page: the processes' own CPU time while checking-and-adding (`time.process_time`) and "
        "redis-server's over the whole run (`INFO cpu`, the fleet's barriers included), per page of links."
    )
    print()
    print(
        "| method | URLs/s | vs RedisBloom | client CPU µs/page | server CPU µs/page | memory of the window "
        "| vs RedisBloom | reported new | measured FPR |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rb = results.get("redisbloom")
    names = {
        "bloomkit": "bloomkit `RedisWindowFilter.add_many` (7d, 8 generations)",
        "bloomkit, num_hashes=2": "… `num_hashes=2`",
        "redisbloom": "RedisBloom per-day keys (`BF.MEXISTS` × 7 + `BF.MADD`)",
    }
    for method, r in results.items():
        print(
            f"| {names[method]} | {r['rate']:,.0f} | {r['rate'] / rb['rate']:.2f}× | {r['client_us']:,.0f} | "
            f"{r['server_us']:,.0f} | {r['memory'] / 2**20:.1f} MiB | "
            f"{r['memory'] / rb['memory']:.2f}× | {r['new']:,} | {r['fpr']:.3%} |"
        )
    print()
