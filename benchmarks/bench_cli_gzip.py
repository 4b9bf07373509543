"""``bloomkit dedup FILE.gz`` against ``zcat FILE.gz | bloomkit dedup`` (and ``zcat`` alone).

bloomkit decompresses on a helper thread (``cli/_readahead.py``); ``zcat |``
decompresses in a second process. Both use two cores; this measures whether
the in-process reader keeps up. Rounds are interleaved and the best wall time
of each command is reported (the machine is shared).

    python benchmarks/bench_cli_gzip.py [--lines 5000000] [--rounds 3] [--out FILE]

Data: URL-like lines ``https://example.com/<a>/page?id=<b>`` with ``a`` from
1e6 and ``b`` from 1e9 values (nearly all distinct), gzip level 6.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time


def _make_input(path: str, lines: int) -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    with gzip.open(path, "wb", compresslevel=6) as out:
        for start in range(0, lines, 500_000):
            count = min(500_000, lines - start)
            a = rng.integers(0, 10**6, size=count)
            b = rng.integers(0, 10**9, size=count)
            out.write("".join(f"https://example.com/{x}/page?id={y}\n" for x, y in zip(a, b)).encode())


def _time(command: str) -> float:
    start = time.perf_counter()
    subprocess.run(["sh", "-c", command], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the Markdown report here too")
    args = parser.parse_args()
    bloomkit_cmd = f"{shutil.which('bloomkit') or sys.executable + ' -m bloomkit'}"
    with tempfile.TemporaryDirectory() as directory:
        data = os.path.join(directory, "urls.gz")
        _make_input(data, args.lines)
        commands = {
            "bloomkit dedup FILE.gz": f"{bloomkit_cmd} dedup {data}",
            "zcat FILE.gz | bloomkit dedup": f"zcat {data} | {bloomkit_cmd} dedup",
            "zcat FILE.gz > /dev/null": f"zcat {data}",
        }
        best = {name: float("inf") for name in commands}
        for round_number in range(args.rounds):
            for name, command in commands.items():
                seconds = _time(command)
                best[name] = min(best[name], seconds)
                print(f"round {round_number + 1}: {name}: {seconds:.2f} s", file=sys.stderr)
        size = os.path.getsize(data)
    lines = [
        f"# bloomkit dedup of a gzip file, {args.lines:,} lines ({size / 2**20:.0f} MiB compressed)",
        "",
        f"`python benchmarks/bench_cli_gzip.py --lines {args.lines} --rounds {args.rounds}` on "
        f"{platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}. "
        f"Best wall time of {args.rounds} interleaved rounds.",
        "",
        "| command | seconds |",
        "|---|---:|",
    ]
    lines += [f"| `{name}` | {seconds:.2f} |".replace(" | bloomkit", " \\| bloomkit") for name, seconds in best.items()]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
