"""``bloomkit calc``: the sizing calculator (``bloomkit.calc``) as a table, in every direction.

Give two of ``--capacity``, ``--error-rate`` and ``--memory``; the third is
solved for each filter type. Solving inverts bloomkit's real sizing
(``calc.bloom_params`` / ``calc.cuckoo_params``, whole bits, hash counts
and fingerprint widths) by bisection, so the answer is exactly what a
filter built with it gets, not a continuous approximation.
"""

from __future__ import annotations

import math

from .. import _display, calc
from . import _args
from ._errors import CliError

# Bisection range for --error-rate when solving for it: rates stricter than
# 1e-30 need more than 64 hash functions or 32-bit fingerprints anyway.
_RATE_FLOOR = 1e-30
_RATE_CEILING = 0.5


def register(commands) -> None:
    parser = commands.add_parser(
        "calc",
        help="size a filter: bytes from capacity+rate, capacity from bytes+rate, rate from bytes+capacity",
        description="Give two of --capacity, --error-rate and --memory; print the third and the parameters, "
        "for a Bloom and a cuckoo filter.",
    )
    parser.add_argument("--capacity", type=_args.count, metavar="N", help="number of distinct keys, e.g. 1e9")
    parser.add_argument("--error-rate", type=_args.rate, metavar="P", help="target false-positive rate, e.g. 1e-4")
    parser.add_argument(
        "--memory", type=_args.size, metavar="BYTES", help="memory for the filter, e.g. 1GiB, 512MB, 1e9"
    )
    parser.add_argument("--bucket-size", type=_args.count, default=4, help="cuckoo filter slots per bucket (default 4)")
    parser.set_defaults(handler=run)


def _size(nbytes: int) -> str:
    return f"{nbytes:,} ({_display.human_size(nbytes)})" if nbytes >= 1024 else f"{nbytes:,} B"


def _largest_capacity(nbytes_of, memory: int) -> "int | None":
    """Largest n >= 1 with nbytes_of(n) <= memory (nbytes_of is non-decreasing), or None."""

    def fits(n):
        try:
            return nbytes_of(n) <= memory
        except ValueError:
            return False

    if not fits(1):
        return None
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
        if high >= 2**62:
            return low
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _smallest_rate(nbytes_of, memory: int) -> "float | None":
    """Smallest rate p with nbytes_of(p) <= memory (nbytes_of is non-increasing in p), or None."""

    def fits(rate):
        try:
            return nbytes_of(rate) <= memory
        except ValueError:
            return False

    if not fits(_RATE_CEILING):
        return None
    if fits(_RATE_FLOOR):
        return _RATE_FLOOR
    low, high = math.log(_RATE_FLOOR), math.log(_RATE_CEILING)
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (low, middle) if fits(math.exp(middle)) else (middle, high)
    # Rounded *up* to the 4 significant digits printed: a filter built with
    # the printed rate then still fits (a looser rate never needs more bytes).
    rate = math.exp(high)
    scale = 10.0 ** (3 - math.floor(math.log10(rate)))
    return math.ceil(rate * scale) / scale


def _bloom_column(capacity, error_rate) -> dict:
    params = calc.bloom_params(capacity, error_rate)
    return {
        "filter": "BloomFilter",
        "layout": params.layout,
        "capacity": f"{capacity:,}",
        "error_rate": f"{error_rate:.4g}",
        "num_bits": f"{params.num_bits:,}",
        "num_hashes": f"{params.num_hashes}",
        "bits_per_key": f"{params.bits_per_key:.3f}",
        "nbytes": _size(params.nbytes),
        "predicted error_rate": f"{params.error_rate:.4g}",
    }


def _cuckoo_column(capacity, error_rate, bucket_size) -> dict:
    params = calc.cuckoo_params(capacity, error_rate, bucket_size=bucket_size)
    return {
        "filter": "CuckooFilter",
        "capacity": f"{capacity:,}",
        "error_rate": f"{error_rate:.4g}",
        "num_buckets": f"{params.num_buckets:,}",
        "bucket_size": f"{bucket_size}",
        "fingerprint_bits": f"{params.fingerprint_bits}",
        "bits_per_key": f"{8 * params.nbytes / capacity:.3f}",
        "nbytes": _size(params.nbytes),
        "predicted error_rate": f"{params.error_rate:.4g}",
    }


def _solve(args, nbytes_of) -> "tuple[int, float] | None":
    """(capacity, error_rate) for one filter type from the two values given."""
    if args.memory is None:
        return args.capacity, args.error_rate
    if args.capacity is None:
        capacity = _largest_capacity(lambda n: nbytes_of(n, args.error_rate), args.memory)
        return None if capacity is None else (capacity, args.error_rate)
    rate = _smallest_rate(lambda p: nbytes_of(args.capacity, p), args.memory)
    return None if rate is None else (args.capacity, rate)


def _cuckoo_unsupported(capacity, bucket_size) -> "dict | None":
    """The cuckoo column marked unsupported when ``capacity`` is past the cuckoo filter's most buckets."""
    limit = calc.cuckoo_max_capacity(bucket_size)
    if capacity is None or capacity <= limit:
        return None
    buckets = calc.power_of_two(calc.CUCKOO_MAX_BUCKETS)
    reason = f"capacity above the cuckoo filter's limit of {limit:,} keys ({buckets} buckets of {bucket_size})"
    return {"filter": "CuckooFilter", "unsupported": reason}


def _column_or_reason(name, build, *args) -> dict:
    """A filter's column, or one saying why these parameters are impossible for it."""
    try:
        return build(*args)
    except ValueError as error:
        return {"filter": name, "not possible": str(error)}


def run(args) -> int:
    given = [value is not None for value in (args.capacity, args.error_rate, args.memory)]
    if sum(given) != 2:
        raise CliError("calc needs exactly two of --capacity, --error-rate and --memory (it prints the third)")
    bucket_size = calc.check_bucket_size(args.bucket_size)
    columns = []
    bloom = _solve(args, lambda n, p: calc.bloom_params(n, p).nbytes)
    if bloom is not None:
        columns.append(_column_or_reason("BloomFilter", _bloom_column, *bloom))
    unsupported = _cuckoo_unsupported(args.capacity, bucket_size)
    if unsupported is not None:
        columns.append(unsupported)
    else:
        cuckoo = _solve(args, lambda n, p: calc.cuckoo_params(n, p, bucket_size=bucket_size).nbytes)
        if cuckoo is not None:
            columns.append(_column_or_reason("CuckooFilter", _cuckoo_column, *cuckoo, bucket_size))
    # Exit 0 when one filter type has figures; an unsupported column is shown beside them.
    failures = [column for column in columns if "not possible" in column or "unsupported" in column]
    if len(failures) == len(columns):
        reasons = [f"{c['filter']}: {c.get('not possible') or c['unsupported']}" for c in failures]
        if args.memory is not None and len(columns) < 2:  # a type that fits in no memory has no column
            reasons.insert(0, f"no filter fits in {args.memory:,} bytes with these settings")
        raise CliError("; ".join(reasons))
    labels = []
    for column in columns:
        labels += [label for label in column if label not in labels]
    table = [[label] + [column.get(label, "-") for column in columns] for label in labels]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0
