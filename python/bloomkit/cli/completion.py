"""``bloomkit completion SHELL``: a shell completion script, generated from the parser by shtab.

shtab (a dependency, pure Python) turns the argparse parser into a bash,
zsh or tcsh script, so completions follow every subcommand and option
without a hand-kept copy. Install with, e.g.::

    eval "$(bloomkit completion bash)"              # in ~/.bashrc
    bloomkit completion zsh > ~/.zfunc/_bloomkit    # zsh, with ~/.zfunc on fpath
"""

from __future__ import annotations

import sys

from ._errors import CliError

SHELLS = ("bash", "zsh", "tcsh")


def register(commands) -> None:
    parser = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, tcsh)",
        description='Print a completion script for SHELL. bash: eval "$(bloomkit completion bash)" in ~/.bashrc.',
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    parser.set_defaults(handler=run)


def run(args) -> int:
    try:
        import shtab
    except ImportError:
        raise CliError("completion needs shtab: pip install shtab") from None
    from . import build_parser  # the whole parser, not just this subcommand

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return 0
