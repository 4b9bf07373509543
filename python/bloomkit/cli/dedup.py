"""``bloomkit dedup``: print each line the first time it is (probably) seen.

The crawler's URL-seen job. Per block of input, the lines go to the filter
in one ``add_many`` call (one call into C++, GIL released), whose
test-and-set result says which lines were seen before; the others are
written out in one ``write``. Memory is the filter plus a few blocks.

A false positive drops a line that was new; a line is never printed twice
(Bloom and cuckoo filters have no false negatives).
"""

from __future__ import annotations

import json
import os
import sys
from itertools import compress

from .. import _batch
from . import _args, _filters, _input, _lock, _progress
from ._errors import CliError, Interrupted
from ._signals import SignalGuard

DEFAULT_ERROR_RATE = _args.DEFAULT_ERROR_RATE
# First stage of a ScalableBloomFilter when no --capacity is given: about
# 1.8 MB at the default error rate, so typical jobs never grow, and a
# stream of billions needs only ~10 doublings (each stage adds lookups).
SCALABLE_INITIAL_CAPACITY = 1_000_000


def register(commands) -> None:
    parser = commands.add_parser(
        "dedup",
        help="print each line the first time it is seen",
        description=(
            "Print each input line the first time it is (probably) seen. Lines are compared as bytes "
            "without their trailing newline; output lines are byte-exact copies, each ending in a newline."
        ),
    )
    parser.add_argument(
        "inputs", nargs="*", metavar="FILE", help="files of lines (.gz/.xz/.bz2 ok), or - for stdin (default)"
    )
    parser.add_argument(
        "--capacity", type=_args.count, metavar="N", help="expected number of distinct lines (e.g. 1e8)"
    )
    parser.add_argument(
        "--error-rate",
        type=_args.rate,
        metavar="P",
        default=DEFAULT_ERROR_RATE,
        help=f"chance that a new line is wrongly dropped (default {DEFAULT_ERROR_RATE:g})",
    )
    _args.add_window(parser, "lines (one seen again after it is printed again)")
    parser.add_argument("--filter", metavar="PATH", help="load this filter if it exists, and save it back at the end")
    parser.add_argument("--save", metavar="PATH", help="save the filter here at the end (default: the --filter path)")
    parser.add_argument(
        "--stats", action="store_true", help="print counts, fill and estimated FPR to stderr at the end"
    )
    parser.add_argument(
        "--stats-json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the counts and the filter's state as one JSON object to FILE (default: stderr); "
        "the filter keys are those of 'info --json'",
    )
    _args.add_seed(parser)
    _args.add_block_size(parser)
    _args.add_quiet(parser)
    parser.set_defaults(handler=run, late_positionals="inputs")


def _starting_filter(args):
    if args.filter and os.path.exists(args.filter):
        filter_ = _filters.load_to_add_to(args.filter, "dedup")
        if args.window is not None:
            _filters.check_window(filter_, args.filter, args.window, args.generations)
        return filter_
    if args.window is not None:
        return _filters.create_windowed(args.window, args.generations, args.capacity, args.error_rate, args.seed)
    if args.generations is not None:
        raise CliError("--generations needs --window")
    if args.capacity is not None:
        return _filters.create("bloom", args.capacity, args.error_rate, args.seed)
    # Almeida et al.'s scalable filter: the compound false-positive rate
    # stays under error_rate however many lines arrive.
    return _filters.create("scalable", SCALABLE_INITIAL_CAPACITY, args.error_rate, args.seed)


class _Counts:
    def __init__(self):
        self.lines_in = 0
        self.lines_out = 0


def _stats_rows(counts, filter_, elapsed):
    rate = counts.lines_in / elapsed if elapsed > 0 else 0.0
    rows = [
        ("lines in", f"{counts.lines_in:,}"),
        ("lines out", f"{counts.lines_out:,}"),
        ("duplicates dropped", f"{counts.lines_in - counts.lines_out:,}"),
    ]
    rows += _filters.health_rows(filter_)
    rows.append(("elapsed", f"{elapsed:.2f} s ({rate:,.0f} lines/s)"))
    return rows


def _stats_json(counts, filter_, elapsed) -> dict:
    return {
        "lines_in": counts.lines_in,
        "lines_out": counts.lines_out,
        "duplicates_dropped": counts.lines_in - counts.lines_out,
        "elapsed_s": round(elapsed, 6),
        **_filters.summary_json(filter_),
    }


def _write_stats_json(destination, stats) -> None:
    text = json.dumps(stats) + "\n"
    if destination == "-":
        sys.stderr.write(text)
        return
    try:
        with open(destination, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise CliError(f"cannot write --stats-json {destination}: {error.strerror or error}") from None


def _finish(args, filter_, counts, progress, save_path) -> None:
    progress.close()
    if save_path:
        _filters.save(filter_, save_path)
    if args.stats:
        _progress.print_rows(_stats_rows(counts, filter_, progress.elapsed), sys.stderr)
    if args.stats_json:
        _write_stats_json(args.stats_json, _stats_json(counts, filter_, progress.elapsed))
    warning = _filters.overfull_warning(filter_)
    if warning:
        sys.stderr.write(f"bloomkit: warning: {warning}\n")


def run(args) -> int:
    names = args.inputs or ["-"]
    _input.check_readable(names)
    save_path = args.save or args.filter
    if save_path:
        _filters.check_writable(save_path)
    # Loading, adding and saving are one step for other runs (cli/_lock.py).
    with _lock.exclusive(save_path):
        return _dedup(args, names, save_path)


def _dedup(args, names, save_path) -> int:
    filter_ = _starting_filter(args)
    out = sys.stdout.buffer
    counts = _Counts()
    progress = _progress.Progress(_input.total_size(names), _progress.wanted(args.quiet, writes_stdout=True), "dedup")
    try:
        with SignalGuard() as guard:
            for block in _input.line_blocks(names, args.block_size, progress):
                lines = block.lines
                # Adding a batch and writing its survivors is one step for
                # Ctrl-C, so a saved filter never marks unprinted lines seen.
                with guard.critical():
                    # A cuckoo filter (--filter) stores a repeated line once.
                    seen = filter_._first_seen_many(_batch.single_batch(lines))
                    kept = list(compress(lines, (~seen).tolist()))
                    if kept:
                        out.write(b"\n".join(kept))
                        out.write(b"\n")
                        out.flush()
                    counts.lines_in += len(lines)
                    counts.lines_out += len(kept)
    except Interrupted as interrupt:
        _finish(args, filter_, counts, progress, save_path)
        where = f"; filter saved to {save_path}" if save_path else ""
        sys.stderr.write(f"bloomkit: interrupted after {counts.lines_in:,} lines{where}\n")
        return interrupt.exit_code
    except BaseException:
        progress.close()
        raise
    _finish(args, filter_, counts, progress, save_path)
    return 0
