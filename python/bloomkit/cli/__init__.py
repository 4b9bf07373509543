"""The ``bloomkit`` command line (also ``python -m bloomkit``).

One module per subcommand, each with ``register(subparsers)`` and
``run(args)``; the shared pieces are ``_args`` (argument types),
``_errors`` (exit codes, one-line errors), ``_input`` (lines from files),
``_filters`` (types, load/save), ``_progress`` (tqdm bar, tables) and
``_signals`` (Ctrl-C between batches). See docs/cli.md.
"""

from __future__ import annotations

import sys

from .. import __version__
from . import _args, _errors, add, build, calc_table, completion, dedup, info, merge, query

_COMMANDS = (dedup, build, add, query, info, calc_table, merge, completion)


def build_parser() -> _args.Parser:
    parser = _args.Parser(
        prog="bloomkit",
        description="Approximate-membership filters from the shell: dedup streams of lines, build, query, "
        "inspect and merge filter files, size filters.",
    )
    parser.add_argument("--version", action="version", version=f"bloomkit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.register(commands)
    return parser


def _take_late_positionals(parser, args, extras) -> None:
    """Accept file names after options, as in ``dedup a.txt --stats b.txt``.

    argparse stops filling a ``nargs="*"`` positional at the first option,
    so such names come back unparsed. Subcommands that take a list of files
    name it in ``late_positionals``; anything else left over is an error.
    """
    if not extras:
        return
    destination = getattr(args, "late_positionals", None)
    if destination is None or any(item.startswith("-") and item != "-" for item in extras):
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    getattr(args, destination).extend(extras)


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if args.command is None:
        if extras:
            parser.error(f"a COMMAND is needed before {' '.join(extras)}")
        # Plain `bloomkit`: the help on stdout, and success.
        parser.print_help()
        return _errors.EXIT_OK
    _take_late_positionals(parser, args, extras)
    code = _errors.run(args.handler, args)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _errors.silence_stdout()
        return _errors.EXIT_BROKEN_PIPE
    return code
