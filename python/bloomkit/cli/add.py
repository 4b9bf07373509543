"""``bloomkit add``: insert keys into an existing filter file, saving it atomically.

Like ``build`` for a filter that already exists: the filter keeps its type
and parameters, nothing is printed (``dedup --filter`` is the command that
prints new lines), and the file is replaced only after the last key, by an
atomic rename, so an interrupted or failed run leaves the old file intact.
"""

from __future__ import annotations

import sys

from . import _args, _filters, _input, _lock, build
from ._errors import CliError


def register(commands) -> None:
    parser = commands.add_parser(
        "add",
        help="insert keys into an existing filter file",
        description="Insert every line of KEYS into the filter in FILE and save it back atomically. Prints nothing.",
    )
    parser.add_argument("filter", metavar="FILE", help="a filter saved by bloomkit (made with build or dedup --save)")
    parser.add_argument(
        "keys", nargs="*", metavar="KEYS", help="files of keys, one per line (compressed ok), or - for stdin (default)"
    )
    parser.add_argument("-o", "--output", metavar="OUT", help="save to OUT instead of replacing FILE")
    parser.add_argument("--int", action="store_true", help="keys are base-10 integers (as in build --int)")
    _args.add_block_size(parser)
    _args.add_quiet(parser)
    parser.set_defaults(handler=run, late_positionals="keys")


def run(args) -> int:
    names = args.keys or ["-"]
    _input.check_readable(names)
    output = args.output or args.filter
    _filters.check_writable(output)
    with _lock.exclusive(output):  # cli/_lock.py
        return _add(args, names, output)


def _add(args, names, output) -> int:
    filter_ = _filters.load_to_add_to(args.filter, "add")
    try:
        build.insert_lines(filter_, names, args, "add")
    except RuntimeError as error:  # a full cuckoo filter: the file stays as it was
        raise CliError(f"{args.filter}: {error}; the file was not changed") from None
    _filters.save(filter_, output)
    warning = _filters.overfull_warning(filter_)
    if warning:
        sys.stderr.write(f"bloomkit: warning: {warning}\n")
    return 0
