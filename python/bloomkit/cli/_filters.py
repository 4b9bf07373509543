"""The CLI's filter types, and creating, loading, saving and describing filters."""

from __future__ import annotations

import os
import sys

import bloomkit

from .. import _display, _types, _window
from ._errors import CliError, os_message

STDOUT = "-"

# The types `--type` offers: every type whose files bloomkit.load reads back
# (bloomkit/_types.py), by its row name.
TYPE_NAMES = [row.name for row in _types.FRAMED]


def create(type_name: str, capacity: int, error_rate: float, seed: int):
    """A new, empty filter; refuses sizes beyond the memory still available instead of swapping to death.

    The core compares every large allocation with the memory the system can
    still give this process (MemAvailable + free swap, or a container's
    cgroup limit; cpp/include/bloomkit/memory.hpp) before making it.
    """
    row = _types.BY_NAME[type_name]
    try:
        return row.make(capacity, error_rate, seed)
    except MemoryError as error:
        raise CliError(f"a {row.class_name} for {capacity:,} keys at error rate {error_rate:g}: {error}") from None


def build(type_name: str, keys, error_rate: float, seed: int):
    """A filter of a frozen type built from ``keys`` (an iterator, read batch by batch); memory is checked
    by the core, as for :func:`create`."""
    row = _types.BY_NAME[type_name]
    try:
        return row.build(keys, 0, error_rate, seed)
    except MemoryError as error:
        raise CliError(f"a {row.class_name} at error rate {error_rate:g}: {error}") from None
    except ValueError as error:
        raise CliError(f"--type {type_name}: {error}") from None


def _window_spec(window, generations):
    try:
        return bloomkit.WindowSpec(window, generations or _window.DEFAULT_GENERATIONS)
    except ValueError as error:
        raise CliError(f"--window: {error}") from None


def row_for_window(type_name: "str | None", window: "str | None", generations) -> _types.FilterRow:
    """The row ``--type`` names (default: bloom, or the windowed type with ``--window``), checked against ``--window``.

    A windowed type needs a window (without one it would never forget), and
    only a windowed type takes one.
    """
    windowed = [row for row in _types.ROWS if row.windowed]
    if type_name is None:
        type_name = windowed[0].name if window is not None else "bloom"
    row = _types.BY_NAME[type_name]
    if row.windowed and window is None:
        raise CliError(f"--type {row.name} needs --window W: a duration (7d, 12h) or a key count (1e6)")
    if not row.windowed and window is not None:
        raise CliError(f"--window makes a {windowed[0].class_name}; --type {row.name} has no window")
    if window is None and generations is not None:
        raise CliError("--generations needs --window")
    return row


def create_windowed(window: str, generations, capacity, error_rate: float, seed: int):
    """A new RotatingBloomFilter for ``--window``: ``capacity`` lines per window (a line window's own
    count by default); memory is checked by the core, as for :func:`create`."""
    spec = _window_spec(window, generations)
    if capacity is None:
        if spec.unit != "keys":
            raise CliError(f"--window {window} needs --capacity: the distinct lines expected per window")
        capacity = spec.length
    try:
        return bloomkit.RotatingBloomFilter(capacity, error_rate, window=spec, seed=seed)
    except MemoryError as error:
        raise CliError(
            f"a RotatingBloomFilter for {capacity:,} keys per window at error rate {error_rate:g}: {error}"
        ) from None


def check_window(filter_, path: str, window: str, generations) -> None:
    """A filter loaded for ``--window`` must be a window filter of that window."""
    if not _types.row_of(type(filter_)).windowed:
        raise CliError(f"{path}: a {type(filter_).__name__} has no window; --window needs a RotatingBloomFilter")
    spec = _window_spec(window, generations or filter_.generations)
    current = filter_.window
    if current != spec:
        raise CliError(
            f"{path}: the filter's window is {current} in {current.generations} generations, not {spec} in "
            f"{spec.generations}; drop --window or use another --filter"
        )


def load(path: str):
    """Any saved filter, or a ``CliError`` saying why the file is not one."""
    try:
        return bloomkit.load(path)
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, not a filter file") from None
    except OSError as error:
        raise CliError(os_message(error, "cannot read filter")) from None
    except ValueError as error:
        reason = str(error)
        # The core's own message may already say it ("not a bloomkit filter: ..."): say it once.
        if reason.startswith("not a bloomkit filter"):
            raise CliError(f"{path}: {reason}") from None
        raise CliError(f"{path}: not a valid bloomkit filter: {reason}") from None


def load_to_add_to(path: str, command: str):
    """A saved filter that takes keys; a frozen one (the registry's ``mutable=False``) is a ``CliError``."""
    filter_ = load(path)
    row = _types.row_of(type(filter_))
    if not row.mutable:
        raise CliError(
            f"{path}: a {row.class_name} is frozen and takes no keys, so `bloomkit {command}` cannot add to it; "
            f"build a new one from every key: bloomkit build --type {row.name} --capacity N KEYS -o FILE"
        )
    return filter_


def check_writable(path: str) -> None:
    """Fail before the work, not after it, when ``path``'s directory cannot take the file."""
    if path == STDOUT:
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CliError(f"cannot write filter {path}: No such file or directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CliError(f"cannot write filter {path}: Permission denied")
    if os.path.isdir(path):
        raise CliError(f"cannot write filter {path}: is a directory")


def save(filter_, path: str) -> None:
    """Atomic save (temporary file, fsync, rename): the old file survives any failure.

    ``-`` writes the filter's bytes to stdout instead (``build -o - | ...``).
    """
    if path == STDOUT:
        sys.stdout.flush()
        filter_._stream_to(sys.stdout.buffer)
        return
    try:
        filter_.save(path)
    except OSError as error:
        raise CliError(f"cannot write filter {path}: {error.strerror or error}") from None
    except ValueError as error:  # a device, FIFO or socket: save() will not replace it
        raise CliError(str(error)) from None


def fill(filter_) -> "float | None":
    """How full the filter is: the attribute its registry row names (a fill ratio, a load factor), if any."""
    attribute = _types.row_of(type(filter_)).fill
    return None if attribute is None else float(getattr(filter_, attribute))


def current_fpr(filter_) -> float:
    return float(filter_.estimated_fpr())


def health_rows(filter_) -> list:
    """(label, value) rows on the filter's state for ``--stats``."""
    rows = [("filter", f"{type(filter_).__name__}, {_display.human_size(filter_.nbytes)} ({filter_.nbytes:,} bytes)")]
    value = fill(filter_)
    if value is not None:
        rows.append(("filter fill", f"{value:.4f}"))
    row = _types.row_of(type(filter_))
    rows.append((row.count_label, f"{len(filter_):,}"))
    # The current rate next to the target: a scalable filter's compound
    # rate is far below its bound early on, and that is the point.
    kind = "compound " if row.compound_fpr else ""
    rows.append(
        ("estimated FPR", f"{_display.format_value(current_fpr(filter_))} ({kind}now; target {filter_.error_rate:g})")
    )
    rows.append(("state", filter_._display_rows()["state"]))
    return rows


def plain(value):
    """JSON-ready values: NumPy scalars and the like become int/float/str, lists stay lists."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    for convert in (int, float):
        try:
            converted = convert(value)
        except (TypeError, ValueError):
            continue
        if converted == value:
            return converted
    return str(value)


def summary_json(filter_) -> dict:
    """The filter's keys for ``info --json`` and ``dedup --stats-json``: type, ``_summary()``, state."""
    rows = {"type": type(filter_).__name__}
    rows.update(filter_._summary())
    rows["state"] = filter_._display_rows()["state"]
    rows["over_capacity"] = bool(filter_.over_capacity)
    return {label: plain(value) for label, value in rows.items()}


def overfull_warning(filter_) -> "str | None":
    """A warning when the filter's current false-positive rate is well above what it was sized for."""
    if not _types.row_of(type(filter_)).mutable:  # a frozen filter holds what it was built from, at its rate
        return None
    fpr, target, capacity = current_fpr(filter_), filter_.error_rate, filter_.capacity
    if target is None or capacity is None or fpr <= 2 * target:  # a Spark filter read from Spark's bytes
        return None
    return (
        f"the filter holds about {len(filter_):,} keys, more than its capacity of "
        f"{capacity:,}; its false-positive rate is now about {fpr:.3g} (sized for {target:g}). "
        "Use a larger --capacity for a new filter."
    )
