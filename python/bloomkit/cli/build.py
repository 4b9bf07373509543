"""``bloomkit build``: a filter file from files of keys, one key per line."""

from __future__ import annotations

import itertools

from . import _args, _filters, _input, _lock, _progress
from ._signals import SignalGuard


def register(commands) -> None:
    parser = commands.add_parser(
        "build",
        help="build a filter file from files of keys",
        description="Insert every line of KEYS into a new filter and save it atomically to -o FILE.",
    )
    parser.add_argument(
        "keys",
        nargs="*",
        metavar="KEYS",
        help="files of keys, one per line (.gz/.xz/.bz2 ok), or - for stdin (default)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to save the filter (- for stdout)")
    parser.add_argument(
        "--capacity",
        type=_args.count,
        metavar="N",
        required=True,
        help="number of distinct keys (the first stage's size for scalable)",
    )
    parser.add_argument(
        "--error-rate",
        type=_args.rate,
        metavar="P",
        default=_args.DEFAULT_ERROR_RATE,
        help=f"target false-positive rate (default {_args.DEFAULT_ERROR_RATE:g}, as for dedup)",
    )
    parser.add_argument(
        "--type", choices=_filters.TYPE_NAMES, help="filter type (default bloom; rotating with --window)"
    )
    _args.add_window(parser, "keys")
    parser.add_argument(
        "--int", action="store_true", help="keys are base-10 integers (hashed as 8-byte ints, like Python ints)"
    )
    _args.add_seed(parser)
    _args.add_block_size(parser)
    _args.add_quiet(parser)
    parser.set_defaults(handler=run, late_positionals="keys")


def insert_lines(filter_, names, args, label: str) -> None:
    """Every line of ``names`` into ``filter_`` (``--int``, ``--block-size``, ``--quiet`` from ``args``).

    Shared by ``build`` and ``add``. Ctrl-C just stops: the caller writes
    the output file only after the last key.
    """
    progress = _progress.Progress(_input.total_size(names), _progress.wanted(args.quiet, writes_stdout=False), label)
    try:
        with SignalGuard():
            for block in _input.line_blocks(names, args.block_size, progress):
                filter_.update(_input.parse_integers(block.lines, block) if args.int else block.lines)
    finally:
        progress.close()


def build_frozen(row, names, args, label: str):
    """A frozen type (a registry row that takes no inserts) built from every line of ``names``.

    The lines stream into the row's build block by block (a binary fuse
    filter keeps 8 bytes per key while it reads them), with the same
    progress and Ctrl-C handling as :func:`insert_lines`.
    """
    progress = _progress.Progress(_input.total_size(names), _progress.wanted(args.quiet, writes_stdout=False), label)
    blocks = (
        _input.parse_integers(block.lines, block) if args.int else block.lines
        for block in _input.line_blocks(names, args.block_size, progress)
    )
    try:
        with SignalGuard():
            return _filters.build(row.name, itertools.chain.from_iterable(blocks), args.error_rate, args.seed)
    finally:
        progress.close()


def run(args) -> int:
    names = args.keys or ["-"]
    _input.check_readable(names)
    _filters.check_writable(args.output)
    row = _filters.row_for_window(args.type, args.window, args.generations)
    with _lock.exclusive(args.output):  # cli/_lock.py
        if row.windowed:
            filter_ = _filters.create_windowed(args.window, args.generations, args.capacity, args.error_rate, args.seed)
            insert_lines(filter_, names, args, "build")
        elif row.mutable:
            filter_ = _filters.create(row.name, args.capacity, args.error_rate, args.seed)
            insert_lines(filter_, names, args, "build")
        else:
            filter_ = build_frozen(row, names, args, "build")
        _filters.save(filter_, args.output)
    return 0
