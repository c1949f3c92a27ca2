"""Help that wraps at the terminal width without breaking sentences.

typer's rich help keeps the hand line breaks of a docstring inside a paragraph (all but a command's first),
and in a group's command list it keeps those of the first paragraph too. A docstring wrapped at 110 columns
then broke mid-sentence at 80 columns and again at the terminal's edge. ``rewrap_help`` joins the lines of
each prose paragraph once, at registration, so rich wraps every paragraph at the terminal width (``COLUMNS``
when set); example paragraphs (indented lines, or a paragraph starting with click's ``\\b``) keep their lines.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer

__all__ = ["first_paragraph", "rewrap_help", "rewrap_paragraphs"]


def rewrap_paragraphs(text: str) -> str:
    """``text`` with the single line breaks inside each prose paragraph replaced by spaces.

    A paragraph is kept as written when a line of it is indented (an example, a table) or it starts with
    ``\\b`` (click's "do not rewrap" marker).
    """
    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.split("\n")
        if para.startswith("\b") or any(line[:1].isspace() for line in lines):
            out.append(para)
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def first_paragraph(text: str | None) -> str:
    """The first paragraph of a help text on one line (whitespace runs collapsed)."""
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None  # typer's DefaultPlaceholder: not set


def rewrap_help(app: typer.Typer) -> None:
    """Rewrap the help of ``app`` (from its callback), of every command and group under it, and give each a
    one-line ``short_help`` for the command lists, unless one was set by hand."""
    callback = app.registered_callback.callback if app.registered_callback else None
    root = _text(app.info.help) or (inspect.getdoc(callback) if callback is not None else None)
    if root:
        app.info.help = rewrap_paragraphs(root)
    for cmd in app.registered_commands:
        text = _text(cmd.help) or (inspect.getdoc(cmd.callback) if cmd.callback is not None else None)
        if text:
            cmd.help = rewrap_paragraphs(text)
            if _text(cmd.short_help) is None:
                cmd.short_help = first_paragraph(text)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        rewrap_help(sub)
        text = _text(group.help) or _text(sub.info.help)
        if text:
            if _text(group.help):
                group.help = rewrap_paragraphs(text)
            if _text(group.short_help) is None:
                group.short_help = first_paragraph(text)
