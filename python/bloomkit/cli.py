"""The ``bloomkit`` command line."""

from __future__ import annotations

import argparse
import sys

from . import calc


def _number(text: str) -> int:
    """Parse counts written as 1000000, 1e6 or 1_000_000."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_integer() or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return int(value)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text!r}")
    return value


def _cmd_calc(args) -> int:
    params = calc.bloom_params(args.capacity, args.error_rate)
    rows = [
        ("filter", "BloomFilter"),
        ("capacity", f"{args.capacity:,}"),
        ("requested error_rate", f"{args.error_rate:g}"),
        ("num_bits", f"{params.num_bits:,}"),
        ("num_hashes", f"{params.num_hashes}"),
        ("bits_per_key", f"{params.bits_per_key:.3f}"),
        ("nbytes", f"{params.nbytes:,} ({params.nbytes / 2**20:,.2f} MiB)"),
        ("predicted error_rate", f"{params.error_rate:.4g}"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bloomkit", description="Approximate-membership filters.")
    commands = parser.add_subparsers(dest="command", required=True)
    calc_parser = commands.add_parser("calc", help="size a filter for a capacity and error rate")
    calc_parser.add_argument("--capacity", type=_number, required=True, help="number of distinct keys, e.g. 1e9")
    calc_parser.add_argument("--error-rate", type=_rate, required=True, help="target false-positive rate, e.g. 1e-4")
    calc_parser.set_defaults(handler=_cmd_calc)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
