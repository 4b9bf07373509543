"""``bloomkit calc``: the sizing calculator (``bloomkit.calc``) as a table."""

from __future__ import annotations

from .. import calc
from . import _args
from ._errors import CliError


def register(commands) -> None:
    parser = commands.add_parser(
        "calc",
        help="size a filter for a capacity and error rate",
        description="Print the size and parameters of filters for CAPACITY keys at ERROR_RATE.",
    )
    parser.add_argument(
        "--capacity", type=_args.count, metavar="N", required=True, help="number of distinct keys, e.g. 1e9"
    )
    parser.add_argument(
        "--error-rate", type=_args.rate, metavar="P", required=True, help="target false-positive rate, e.g. 1e-4"
    )
    parser.add_argument("--bucket-size", type=_args.count, default=4, help="cuckoo filter slots per bucket (default 4)")
    parser.set_defaults(handler=run)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes:,} ({nbytes / scale:,.2f} {unit})"
    return f"{nbytes:,} B"


def _bloom_column(capacity, error_rate) -> dict:
    params = calc.bloom_params(capacity, error_rate)
    return {
        "filter": "BloomFilter",
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
        "num_buckets": f"{params.num_buckets:,}",
        "bucket_size": f"{bucket_size}",
        "fingerprint_bits": f"{params.fingerprint_bits}",
        "bits_per_key": f"{8 * params.nbytes / capacity:.3f}",
        "nbytes": _size(params.nbytes),
        "predicted error_rate": f"{params.error_rate:.4g}",
    }


def _column_or_reason(name, build, *args) -> dict:
    """A filter's column, or one saying why these parameters are impossible for it."""
    try:
        return build(*args)
    except ValueError as error:
        return {"filter": name, "not possible": str(error)}


def run(args) -> int:
    common = {"capacity": f"{args.capacity:,}", "requested error_rate": f"{args.error_rate:g}"}
    columns = [
        _column_or_reason("BloomFilter", _bloom_column, args.capacity, args.error_rate),
        _column_or_reason("CuckooFilter", _cuckoo_column, args.capacity, args.error_rate, args.bucket_size),
    ]
    if all("not possible" in column for column in columns):
        raise CliError("; ".join(f"{c['filter']}: {c['not possible']}" for c in columns))
    labels = ["filter", *common]
    for column in columns:
        labels += [label for label in column if label not in labels]
    table = [[label] + [{**common, **column}.get(label, "-") for column in columns] for label in labels]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0
