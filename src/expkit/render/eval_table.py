"""An eval table (``expkit.stats.tables.EvalTable``) as a rich table, Markdown or HTML."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from expkit.render.numbers import format_p

if TYPE_CHECKING:
    from expkit.stats.tables import EvalTable, TaskTables

__all__ = [
    "eval_table_rows",
    "print_eval_table",
    "print_task_tables",
    "render_eval_table_html",
    "render_eval_table_markdown",
    "render_table",
    "render_task_tables_html",
    "render_task_tables_markdown",
]

HEADERS = ("model", "n", "score", "CI", "delta", "delta CI", "p", "p Holm", "verdict", "method")


def _score(x: float, proportion: bool) -> str:
    """A proportion as percentage points (0.731 -> 73.1); any other score in its own units, 4 digits."""
    return f"{100 * x:.1f}" if proportion else f"{x:.4g}"


def _delta(x: float, proportion: bool) -> str:
    return f"{100 * x:+.1f}" if proportion else f"{x:+.4g}"


def eval_table_rows(table: EvalTable) -> list[tuple[str, ...]]:
    """One tuple of display strings per model, the baseline first-class and marked."""
    comps = {c.model: c for c in table.comparisons}
    prop = table.proportion
    rows: list[tuple[str, ...]] = []
    for r in table.models:
        ci = f"[{_score(r.low, prop)}, {_score(r.high, prop)}]" if r.low == r.low else "n/a"
        if r.n_clusters is not None:
            ci += f" ({r.n_clusters} clusters)"
        c = comps.get(r.model)
        if c is None:
            rows.append(
                (f"{r.model} (baseline)", str(r.n), _score(r.score, prop), ci, "-", "-", "-", "-", "-", r.interval)
            )
            continue
        pc = c.comparison
        rows.append(
            (
                r.model,
                str(r.n),
                _score(r.score, prop),
                ci,
                _delta(pc.delta, prop),
                f"[{_delta(pc.low, prop)}, {_delta(pc.high, prop)}]",
                format_p(pc.p_value),
                format_p(c.p_holm),
                c.verdict,
                pc.method,
            )
        )
    return rows


def render_eval_table_markdown(table: EvalTable) -> str:
    """A GitHub Markdown table plus the notes as a list (scores and deltas in points, or the metric's units)."""
    lines = [
        f"Baseline: `{table.baseline}`; scores and deltas in {table.unit}, {table.level:.0%} intervals.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for row in eval_table_rows(table):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    if table.notes:
        lines.append("")
        lines.extend(f"- {n}" for n in table.notes)
    return "\n".join(lines)


def render_eval_table_html(table: EvalTable) -> str:
    """A standalone ``<table>`` (every cell escaped) followed by the notes."""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in eval_table_rows(table))
    notes = "".join(f"<li>{escape(n)}</li>" for n in table.notes)
    return (
        f"<p>Baseline: <code>{escape(table.baseline)}</code>; scores and deltas in {table.unit}, "
        f"{table.level:.0%} intervals.</p>\n<table><tr>{head}</tr>{body}</table>"
        + (f"\n<ul>{notes}</ul>" if notes else "")
    )


def print_eval_table(table: EvalTable) -> None:
    """The table on the terminal with rich (plain text when piped)."""
    from expkit.render.console import fitted_table, out_console

    t = fitted_table(
        *HEADERS,
        no_wrap=("n", "score", "delta", "p", "p Holm"),
        title=f"{table.path}: baseline {table.baseline} ({table.level:.0%} intervals, {table.unit})",
    )
    for row in eval_table_rows(table):
        t.add_row(*row)
    con = out_console()  # fits COLUMNS / the terminal; wide in a pipe (render/console.py)
    con.print(t)
    for n in table.notes:
        con.print(f"note: {n}")


def _task_heading(table: EvalTable) -> str:
    return f"{table.task}" if table.task else table.path


def _units(tt: TaskTables) -> str:
    units = {tb.unit for tb in tt.tables}
    return units.pop() if len(units) == 1 else "points (proportions) or each metric's own units, per task"


def render_task_tables_markdown(tt: TaskTables) -> str:
    """One Markdown table per task under a ``###`` heading, then the notes."""
    parts = [
        f"Baseline: `{tt.baseline}`; scores and deltas in {_units(tt)}, {tt.level:.0%} intervals; "
        f"p Holm over {tt.n_comparisons} comparisons across {len(tt.tables)} tasks ({tt.source})."
    ]
    for tb in tt.tables:
        parts.append(f"\n### {_task_heading(tb)}\n")
        parts.append("| " + " | ".join(HEADERS) + " |\n|" + "---|" * len(HEADERS))
        parts.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in eval_table_rows(tb))
        parts.extend(f"- {n}" for n in tb.notes)
    if tt.notes:
        parts.append("")
        parts.extend(f"- {n}" for n in tt.notes)
    return "\n".join(parts)


def render_task_tables_html(tt: TaskTables) -> str:
    """One ``<table>`` per task under an ``<h3>`` (every cell escaped), then the notes."""
    out = [
        f"<p>Baseline: <code>{escape(tt.baseline)}</code>; scores and deltas in {_units(tt)}, {tt.level:.0%} "
        f"intervals; p Holm over {tt.n_comparisons} comparisons across {len(tt.tables)} tasks.</p>"
    ]
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    for tb in tt.tables:
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in eval_table_rows(tb))
        out.append(f"<h3>{escape(_task_heading(tb))}</h3>\n<table><tr>{head}</tr>{body}</table>")
    notes = [n for tb in tt.tables for n in tb.notes] + list(tt.notes)
    if notes:
        out.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return "\n".join(out)


def print_task_tables(tt: TaskTables) -> None:
    """Each task's table on the terminal, then the notes (Holm across all of them)."""
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    if not con.is_terminal:
        con.width = 200
    for tb in tt.tables:
        t = Table(*HEADERS, title=f"{_task_heading(tb)}: baseline {tt.baseline} ({tt.level:.0%} intervals, {tb.unit})")
        for row in eval_table_rows(tb):
            t.add_row(*row)
        con.print(t)
        for n in tb.notes:
            con.print(f"note: {n}")
    for n in tt.notes:
        con.print(f"note: {n}")


def render_table(table: EvalTable | TaskTables, fmt: str) -> None:
    """``expkit stats table`` without --json: the table(s) as ``terminal`` (rich), ``markdown`` or ``html`` (a
    standalone styled page)."""
    from expkit.render.htmlpage import standalone_page
    from expkit.stats.tables import EvalTable

    if isinstance(table, EvalTable):
        single = {"markdown": render_eval_table_markdown, "html": render_eval_table_html}.get(fmt)
        if single is None:
            print_eval_table(table)
        else:
            text = single(table)
            print(standalone_page(f"Eval table: {table.path}", text) if fmt == "html" else text)
        return
    multi = {"markdown": render_task_tables_markdown, "html": render_task_tables_html}.get(fmt)
    if multi is None:
        print_task_tables(table)
    else:
        text = multi(table)
        print(standalone_page(f"Eval tables: {table.source}", text) if fmt == "html" else text)
