"""Text and HTML summaries shared by every filter type (repr and Jupyter)."""

from __future__ import annotations

import html

# Rows whose value is a byte count: shown as a human size (1.03 MiB).
_BYTE_FIELDS = frozenset({"nbytes", "file_bytes"})


def human_size(nbytes: int) -> str:
    """``1.03 MiB``: binary units (KiB = 1024 B), three significant digits, plain bytes below 1 KiB."""
    nbytes = int(nbytes)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        # 0.9995: what would print as "1e+03 KiB" reads better as "1 MiB".
        if nbytes >= 0.9995 * scale:
            value = nbytes / scale
            return f"{value:.3g} {unit}" if value < 999.5 else f"{value:,.0f} {unit}"
    return f"{nbytes} B"


def format_value(value) -> str:
    """Human formatting: thousands separators for ints, 4 significant digits for floats, lists in brackets."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        # Lists are per-slice fractions (a scalable filter's slice_fill): two decimals each.
        return "[" + ", ".join(f"{v:.2f}" if isinstance(v, float) else format_value(v) for v in value) + "]"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0.0:
            return "0"
        return f"{value:.4g}"
    return str(value)


def format_field(label: str, value) -> str:
    """``format_value``, except that byte counts read as human sizes."""
    if label in _BYTE_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return human_size(value)
    return format_value(value)


def one_line(type_name: str, fields: dict) -> str:
    inner = " ".join(f"{name}={format_field(name, value)}" for name, value in fields.items())
    return f"<{type_name} {inner}>"


def html_table(type_name: str, rows: dict) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(label))}</th>"
        f"<td style='text-align:right'>{html.escape(_html_value(label, value))}</td></tr>"
        for label, value in rows.items()
    )
    return (
        f"<table class='bloomkit'><caption style='text-align:left'><b>{html.escape(type_name)}</b></caption>"
        f"<tbody>{body}</tbody></table>"
    )


def _html_value(label: str, value) -> str:
    text = format_field(label, value)
    if label in _BYTE_FIELDS and isinstance(value, int) and value >= 1024:
        text += f" ({value:,} B)"
    return text
