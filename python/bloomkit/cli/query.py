"""``bloomkit query``: which keys a saved filter (probably) holds.

Exit status like grep: 0 if a key was printed, 1 if none, 2 on error.
"""

from __future__ import annotations

import os
import sys
from itertools import compress

from . import _args, _filters, _input, _progress
from ._errors import EXIT_NOT_FOUND, EXIT_OK
from ._signals import SignalGuard


def register(commands) -> None:
    parser = commands.add_parser(
        "query",
        help="print the keys a filter probably holds",
        description=(
            "Print each key (line of KEYS, or --key) that FILE probably holds; with --invert, each key it "
            "definitely does not hold. Exit status 0 if a key was printed, 1 if none, 2 on error."
        ),
    )
    parser.add_argument("filter", metavar="FILE", help="a filter saved by bloomkit")
    parser.add_argument(
        "keys",
        nargs="*",
        metavar="KEYS",
        help="files of keys, one per line, or - for stdin (default unless --key is given)",
    )
    parser.add_argument(
        "-k", "--key", action="append", default=[], metavar="KEY", help="a key given on the command line (repeatable)"
    )
    parser.add_argument("-v", "--invert", action="store_true", help="print the keys that are absent instead")
    parser.add_argument(
        "-c",
        "--count",
        action="store_true",
        help="print only the number of keys found (absent with --invert), like grep -c",
    )
    parser.add_argument("--int", action="store_true", help="keys are base-10 integers (as in build --int)")
    _args.add_block_size(parser)
    _args.add_quiet(parser)
    parser.set_defaults(handler=run, late_positionals="keys")


def _select(filter_, lines, keys, invert) -> list:
    present = filter_.contains_many(keys)
    wanted = ~present if invert else present
    return list(compress(lines, wanted.tolist()))


def _batches(args, names, progress):
    """The --key arguments first, then the lines of each input."""
    if args.key:
        # The bytes the shell passed (os.fsencode undoes Python's decoding),
        # so --key and a file holding the same line query the same key.
        yield _input.Block("--key", 1, [os.fsencode(key) for key in args.key])
    yield from _input.line_blocks(names, args.block_size, progress)


def _keys_of(lines, block, as_int):
    if not as_int:
        return lines, lines
    # --int skips blank lines; keep the printed lines aligned with the keys.
    lines = [line for line in lines if line.strip()]
    return lines, _input.parse_integers(lines, block)


def run(args) -> int:
    names = args.keys or ([] if args.key else ["-"])
    _input.check_readable(names)
    filter_ = _filters.load(args.filter)
    out = sys.stdout.buffer
    printed = 0
    progress = _progress.Progress(_input.total_size(names), _progress.wanted(args.quiet, writes_stdout=True), "query")
    try:
        with SignalGuard():
            for block in _batches(args, names, progress):
                lines, keys = _keys_of(block.lines, block, args.int)
                selected = _select(filter_, lines, keys, args.invert)
                if args.count:
                    printed += len(selected)
                    continue
                if selected:
                    out.write(b"\n".join(selected))
                    out.write(b"\n")
                    out.flush()
                    printed += len(selected)
    finally:
        progress.close()
    if args.count:
        out.write(b"%d\n" % printed)
    return EXIT_OK if printed else EXIT_NOT_FOUND
