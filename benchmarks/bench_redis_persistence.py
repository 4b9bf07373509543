"""What a redis-server crash (SIGKILL) costs a RedisBloomFilter, per persistence setting.

For each setting one client adds pages of 50 URLs to a filter for ``--seconds``
(counting the pages Redis acknowledged), the server is killed with SIGKILL
mid-stream, restarted on the same port and data directory, and the filter is
asked for every acknowledged URL. Reported: acknowledged pages/s (the cost
of fsync), what the next operation did (FilterLostError, or answered), and how
many acknowledged URLs were then absent (false negatives nothing reports).

    python benchmarks/bench_redis_persistence.py --seconds 3

Needs redis-server (Debian package) and redis-py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from _common import header, print_machine  # noqa: E402
from redis_server import RestartableRedis  # noqa: E402

SETTINGS = {
    "no persistence": (),
    "RDB `save 1 1`": ("--save", "1 1"),
    "AOF `appendfsync everysec`": ("--appendonly", "yes", "--appendfsync", "everysec"),
    "AOF `appendfsync always`": ("--appendonly", "yes", "--appendfsync", "always"),
}


def crash_once(extra_args, seconds: float) -> dict:
    import redis

    from bloomkit.redis import FilterLostError, RedisBloomFilter

    with tempfile.TemporaryDirectory() as workdir, RestartableRedis(workdir, extra_args) as server:
        client = redis.Redis.from_url(server.url)
        seen = RedisBloomFilter(client, "seen", 1_000_000, 0.01, layout="classic")
        acknowledged: list = []
        stop = threading.Event()

        def add_pages():
            page = 0
            while not stop.is_set():
                urls = [f"https://site{page % 997}.example/{page}/{i}" for i in range(50)]
                try:
                    seen.update(urls)
                except redis.ConnectionError:
                    return  # the crash: this page was not acknowledged
                acknowledged.extend(urls)
                page += 1

        writer = threading.Thread(target=add_pages)
        start = time.perf_counter()
        writer.start()
        time.sleep(seconds)
        server.kill()  # mid-stream, the writer still sending
        elapsed = time.perf_counter() - start
        stop.set()
        writer.join()
        server.start()
        try:
            try:
                present = seen.contains_many(acknowledged)
            except redis.ConnectionError:
                present = seen.contains_many(acknowledged)  # the old socket, reported once
            outcome, missing = "answered", int((~present).sum())
        except FilterLostError:
            outcome, missing = "FilterLostError", None
        client.close()
    return {"pages_per_s": len(acknowledged) / 50 / elapsed, "acknowledged": len(acknowledged),
            "outcome": outcome, "missing": missing}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="adding time before the SIGKILL")
    args = parser.parse_args()
    import redis

    info = header("bloomkit benchmark: RedisBloomFilter through a redis-server crash", args)
    print_machine(info, {"redis-py": redis.__version__})
    rows = {}
    for name, extra in SETTINGS.items():
        print(f"{time.strftime('%H:%M:%S')} {name}", file=sys.stderr)
        rows[name] = crash_once(extra, args.seconds)
    print(f"## SIGKILL after {args.seconds:g} s of adding pages of 50 URLs (one client), then restart")
    print()
    print("| persistence | acknowledged pages/s | acknowledged URLs | next operation | acknowledged URLs absent |")
    print("|---|---:|---:|---|---:|")
    for name, r in rows.items():
        missing = "—" if r["missing"] is None else f"{r['missing']:,}"
        print(f"| {name} | {r['pages_per_s']:,.0f} | {r['acknowledged']:,} | {r['outcome']} | {missing} |")
    print()


if __name__ == "__main__":
    main()
