"""Text and HTML summaries shared by every filter type (repr and Jupyter)."""

from __future__ import annotations

import html


def format_value(value) -> str:
    """Human formatting: thousands separators for ints, 4 significant digits for floats."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0.0:
            return "0"
        return f"{value:.4g}"
    return str(value)


def one_line(type_name: str, fields: dict) -> str:
    inner = " ".join(f"{name}={format_value(value)}" for name, value in fields.items())
    return f"<{type_name} {inner}>"


def html_table(type_name: str, rows: dict) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(label))}</th>"
        f"<td style='text-align:right'>{html.escape(format_value(value))}</td></tr>"
        for label, value in rows.items()
    )
    return (
        f"<table class='bloomkit'><caption style='text-align:left'><b>{html.escape(type_name)}</b></caption>"
        f"<tbody>{body}</tbody></table>"
    )
