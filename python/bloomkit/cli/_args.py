"""Argument parsing pieces shared by the subcommands: number types, common options."""

from __future__ import annotations

import argparse
import math
import sys

from .. import calc
from . import _errors

DEFAULT_BLOCK_SIZE = 4 * 2**20
# Default --error-rate of every subcommand that creates a filter (dedup,
# build): one line of 1,000 new lines may be taken for a repeat.
DEFAULT_ERROR_RATE = 0.001


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one ``bloomkit: error: …`` line.

    argparse's default prints the whole usage block before the message;
    scripts and people both read a single line better, and ``--help`` is
    one flag away. Exit code 2, like argparse (and grep) for usage errors.
    """

    def error(self, message):
        hint = f" (see '{self.prog} --help')"
        sys.stderr.write(f"bloomkit: error: {message}{hint}\n")
        sys.exit(_errors.EXIT_ERROR)


def count(text: str) -> int:
    """A positive whole number written as 1000000, 1e6 or 1_000_000."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not value.is_integer() or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    if value >= calc.MAX_CAPACITY:
        raise argparse.ArgumentTypeError(f"must be below {calc.power_of_two(calc.MAX_CAPACITY)}, got {text!r}")
    return int(value)


def rate(text: str) -> float:
    """A probability strictly between 0 and 1, e.g. 0.001 or 1e-3."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text!r}")
    return value


def seed(text: str) -> int:
    """A MurmurHash3 seed in [0, 2**32)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32), got {text!r}")
    return value


def add_quiet(parser) -> None:
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar (it is only shown when stderr is a terminal)"
    )


MAX_BLOCK_SIZE = 2**30


def block_size(text: str) -> int:
    """A read-block size in bytes, at most 1 GiB (each block is held a few times over in memory)."""
    value = count(text)
    if value > MAX_BLOCK_SIZE:
        raise argparse.ArgumentTypeError(f"must be at most 1 GiB ({MAX_BLOCK_SIZE:,} bytes), got {text!r}")
    return value


def add_block_size(parser) -> None:
    parser.add_argument(
        "--block-size",
        type=block_size,
        default=DEFAULT_BLOCK_SIZE,
        metavar="BYTES",
        help="bytes of input hashed per batch (default 4 MiB); memory use is a few times this",
    )


def size(text: str) -> int:
    """A byte count: 1000000, 1e9, 512KiB, 64MiB, 1GiB, 1.5GB (KB/MB/GB are powers of 1000)."""
    units = {
        "": 1,
        "b": 1,
        "kb": 10**3,
        "mb": 10**6,
        "gb": 10**9,
        "tb": 10**12,
        "kib": 2**10,
        "mib": 2**20,
        "gib": 2**30,
        "tib": 2**40,
        "k": 2**10,
        "m": 2**20,
        "g": 2**30,
    }
    cleaned = text.strip().replace("_", "").lower()
    number = cleaned.rstrip("kmgtib")
    unit = cleaned[len(number) :]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1e9, 512MiB, 1GiB, 2GB)") from None
    if not math.isfinite(value) or value < 8:
        raise argparse.ArgumentTypeError(f"must be at least 8 bytes, got {text!r}")
    return int(value)


def add_window(parser, forgets: str) -> None:
    """``--window W`` and ``--generations G``: a RotatingBloomFilter (``forgets``: what it forgets, for the help)."""
    parser.add_argument(
        "--window",
        metavar="W",
        help=f"forget {forgets} after a window: a duration (7d, 12h, 90m, 30s) or a line count (1e6)",
    )
    parser.add_argument(
        "--generations",
        type=count,
        metavar="G",
        help=f"generations of a --window (2 to 64, default 5): {forgets} are forgotten by W + W/(G-1)",
    )


def add_seed(parser) -> None:
    parser.add_argument("--seed", type=seed, default=0, help="hash seed of a new filter (default 0)")
