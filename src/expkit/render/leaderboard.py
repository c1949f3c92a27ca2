"""A leaderboard (``expkit.stats.leaderboard.Leaderboard``) on the terminal, as Markdown, as HTML, and as a
forest plot of the scores with their intervals coloured by tier."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from expkit.render.numbers import format_p

if TYPE_CHECKING:
    from expkit.stats.leaderboard import Leaderboard

__all__ = [
    "leaderboard_rows",
    "pair_rows",
    "print_leaderboard",
    "render_leaderboard",
    "render_leaderboard_html",
    "render_leaderboard_markdown",
    "save_forest_plot",
]

HEADERS = ("rank", "model", "score", "CI", "n", "unparsed", "skipped", "rank CI", "rank <=", "tier")
PAIR_HEADERS = ("a", "b", "n common", "delta", "p", "p adjusted", "distinguishable", "items for 80% power")


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def leaderboard_rows(lb: Leaderboard) -> list[tuple[str, ...]]:
    """One tuple of display strings per model, best first (scores in percent)."""
    return [
        (
            str(m.rank),
            m.name,
            _pct(m.score),
            f"[{_pct(m.ci_low)}, {_pct(m.ci_high)}]",
            f"{m.n:,}",
            f"{m.unparsed:,}",
            str(m.skipped),
            f"{m.rank_best}-{m.rank_worst}",
            str(m.rank_upper_bound),
            m.tier,
        )
        for m in lb.models
    ]


def pair_rows(lb: Leaderboard) -> list[tuple[str, ...]]:
    """One tuple of display strings per pair (delta in points)."""
    return [
        (
            p.a,
            p.b,
            f"{p.n_common:,}",
            f"{100 * p.delta:+.2f}",
            format_p(p.p),
            format_p(p.p_adjusted),
            "yes" if p.distinguishable else "no",
            "-" if p.items_for_power is None else f"{p.items_for_power:,}",
        )
        for p in lb.pairs
    ]


def _summary(lb: Leaderboard) -> list[str]:
    """The lines under the table: settings, pairs separated, stability, policy changes, published checks."""
    sep = sum(p.distinguishable for p in lb.pairs)
    test = "exact McNemar" if lb.binary else "paired t"
    lines = [
        f"unparsed answers: {lb.policy}; {lb.level:.0%} intervals"
        + (" (clustered)" if lb.clustered else "")
        + f"; rank CI from {lb.n_boot:,} paired bootstrap resamples (seed {lb.seed})",
        f"pairs distinguishable: {sep} of {len(lb.pairs)} ({test}, {lb.adjust} adjustment, alpha {1 - lb.level:.2g})",
        f"split-half rank agreement: Kendall tau median {lb.split_half_tau:.3f} "
        f"[{lb.split_half_low:.3f}, {lb.split_half_high:.3f}] over {lb.n_splits} random halves",
    ]
    if lb.order_changes:
        lines.append(f"order changes under another unparsed policy ({len(lb.order_changes)}):")
        lines.extend(
            f"  {c.policy}: {c.b} ({_pct(c.score_b_other)}) passes {c.a} ({_pct(c.score_a_other)}); "
            f"{lb.policy}: {_pct(c.score_a)} vs {_pct(c.score_b)}"
            for c in lb.order_changes
        )
    for c in lb.published:
        verdict = "within" if c.within_ci else "OUTSIDE"
        lines.append(
            f"published {c.model}: {_pct(c.published)} vs computed {_pct(c.computed)} "
            f"[{_pct(c.ci_low)}, {_pct(c.ci_high)}]: {verdict} the interval"
        )
    lines.extend(f"note: {n}" for n in lb.notes)
    return lines


def _md_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)
    return out


def render_leaderboard_markdown(lb: Leaderboard) -> str:
    """The models table, the summary as a list, and every pair in a second table."""
    parts = _md_table(HEADERS, leaderboard_rows(lb))
    parts.append("")
    parts.extend(f"- {line.strip()}" for line in _summary(lb))
    parts.extend(["", "Pairs (delta in points):", ""])
    parts.extend(_md_table(PAIR_HEADERS, pair_rows(lb)))
    return "\n".join(parts)


def _html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_leaderboard_html(lb: Leaderboard) -> str:
    """Standalone ``<table>`` elements (every cell escaped) with the summary as a list between them."""
    summary = "".join(f"<li>{escape(line.strip())}</li>" for line in _summary(lb))
    return "\n".join(
        [_html_table(HEADERS, leaderboard_rows(lb)), f"<ul>{summary}</ul>", _html_table(PAIR_HEADERS, pair_rows(lb))]
    )


def print_leaderboard(lb: Leaderboard) -> None:
    """The models table on the terminal (rich; plain text when piped), then the summary lines."""
    from expkit.render.console import fitted_table, out_console

    t = fitted_table(*HEADERS, no_wrap=("rank", "score", "n", "rank CI", "tier"), title=f"{len(lb.models)} models")
    for row in leaderboard_rows(lb):
        t.add_row(*row)
    con = out_console()
    con.print(t)
    for line in _summary(lb):
        con.print(line, highlight=False, markup=False)


def render_leaderboard(lb: Leaderboard, fmt: str) -> None:
    """``expkit stats leaderboard`` without --json: ``terminal`` (rich), ``markdown`` or ``html``."""
    text = {"markdown": render_leaderboard_markdown, "html": render_leaderboard_html}.get(fmt)
    if text is None:
        print_leaderboard(lb)
    else:
        print(text(lb))


def save_forest_plot(lb: Leaderboard, path: Path) -> Path:
    """Each model's score with its interval, best on top, coloured by its first tier letter (PNG or SVG)."""
    from expkit.render.figures import new_figure, save_figure

    fig, (ax,) = new_figure(width_in=7.0, height_in=max(2.5, 0.3 * len(lb.models) + 1.0))
    colours: dict[str, str] = {}
    palette = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
    for k, m in enumerate(lb.models):
        tier = m.tier[:1]
        colour = colours.setdefault(tier, palette[len(colours) % len(palette)])
        y = len(lb.models) - 1 - k
        ax.errorbar(
            100 * m.score,
            y,
            xerr=[[100 * (m.score - m.ci_low)], [100 * (m.ci_high - m.score)]],
            fmt="o",
            color=colour,
            capsize=3,
        )
        ax.annotate(m.tier, (100 * m.ci_high, y), xytext=(4, -3), textcoords="offset points", fontsize=8)
    ax.set_yticks(range(len(lb.models)), [m.name for m in reversed(lb.models)], fontsize=8)
    ax.set_xlabel(f"score (%), {lb.level:.0%} interval; unparsed: {lb.policy}")
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, path)
