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


def run(args) -> int:
    filter_ = _filters.load(args.filter)
    head = {"file": args.filter, "file_bytes": os.path.getsize(args.filter)}
    if args.json:
        sys.stdout.write(json.dumps({**head, **_filters.summary_json(filter_)}) + "\n")
        return 0
    rows = {**head, "type": type(filter_).__name__, **filter_._display_rows()}
    _progress.print_rows((label, _display.format_field(label, value)) for label, value in rows.items())
    return 0
