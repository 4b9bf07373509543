"""``bloomkit info``: what a saved filter is and how full it is (from its ``_summary()``)."""

from __future__ import annotations

import json
import os
import sys

from .. import _display
from . import _filters, _progress


def register(commands) -> None:
    parser = commands.add_parser(
        "info",
        help="show a filter's type, parameters, fill, estimated count and current FPR",
        description="Show a saved filter's type, parameters, fill, estimated count, current FPR and size.",
    )
    parser.add_argument("filter", metavar="FILE", help="a filter saved by bloomkit")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    parser.set_defaults(handler=run)


def _plain(value):
    """JSON-ready values: NumPy scalars and the like become int/float/str."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    for convert in (int, float):
        try:
            converted = convert(value)
        except (TypeError, ValueError):
            continue
        if converted == value:
            return converted
    return str(value)


def run(args) -> int:
    filter_ = _filters.load(args.filter)
    rows = {"file": args.filter, "file_bytes": os.path.getsize(args.filter), "type": type(filter_).__name__}
    rows.update(filter_._summary())
    if args.json:
        sys.stdout.write(json.dumps({label: _plain(value) for label, value in rows.items()}) + "\n")
        return 0
    _progress.print_rows((label, _display.format_value(value)) for label, value in rows.items())
    return 0
