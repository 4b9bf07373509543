"""``bloomkit merge``: the union of saved filters, written atomically."""

from __future__ import annotations

from .. import _types
from . import _filters, _lock
from ._errors import CliError


def register(commands) -> None:
    parser = commands.add_parser(
        "merge",
        help="union of filters of the same type and parameters",
        description=(
            "Write the union of the input filters to -o OUT. They must be of one type with the same "
            "size, hash count and seed (e.g. built with the same --capacity, --error-rate and --seed)."
        ),
    )
    parser.add_argument("inputs", nargs="+", metavar="FILTER", help="two or more filter files")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="where to save the union (- for stdout)")
    parser.set_defaults(handler=run, late_positionals="inputs")


def run(args) -> int:
    if len(args.inputs) < 2:
        raise CliError("merge needs at least two filter files")
    _filters.check_writable(args.output)
    # The one-writer lock of `add`/`build -o`/`dedup --filter` on OUT, taken
    # before any input is read: OUT may be one of the inputs (merge A B -o A),
    # and a run writing OUT meanwhile would otherwise lose its keys or ours.
    with _lock.exclusive(args.output):  # cli/_lock.py
        return _merge(args)


def _merge(args) -> int:
    filters = [_filters.load(path) for path in args.inputs]
    first = filters[0]
    for path, other in zip(args.inputs[1:], filters[1:]):
        if type(other) is not type(first):
            raise CliError(
                f"cannot merge {path} ({type(other).__name__}) into {args.inputs[0]} "
                f"({type(first).__name__}): all inputs must be of one filter type"
            )
    if not _types.row_of(type(first)).mergeable:
        raise CliError(f"{type(first).__name__} filters cannot be merged (the type has no union)")
    merged = first
    for path, other in zip(args.inputs[1:], filters[1:]):
        try:
            merged = merged.union(other)
        except ValueError as error:
            raise CliError(f"cannot merge {path} into {args.inputs[0]}: {error}") from None
    _filters.save(merged, args.output)
    return 0
