"""The labs on the console: the list of labs, and one line per judged figure after ``labs run``.

Typed against the protocols of :mod:`expkit.render.report` (render/ takes data, never the lab runner).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from expkit.render.console import fitted_table, out_console
from expkit.render.report import (
    LabReportView,
    SeedFigureView,
    format_value,
    rule_history_lines,
    verdict_counts_by_provenance,
)

__all__ = ["LabView", "render_lab_list", "render_lab_run"]


class LabView(Protocol):
    """A registered lab as the list shows it (``expkit.labs.base.Lab``)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def claims(self) -> Sequence[str]: ...
    @property
    def seed_figures(self) -> Sequence[SeedFigureView]: ...


def render_lab_list(labs: Sequence[LabView]) -> None:
    """One row per lab: id, claims, title and the seed's figures (``(behaviour)`` when it has none)."""
    table = fitted_table("lab", "claims", "title", "seed figures", no_wrap=("lab",))
    for lab in labs:
        seed_figures = "; ".join(s.text for s in lab.seed_figures) or "(behaviour)"
        table.add_row(lab.id, ", ".join(lab.claims), lab.title, seed_figures)
    out_console().print(table)


def render_lab_run(report: LabReportView, *, html_path: Path) -> None:
    """Each judged figure: ``C2.2     label: value (seed: ...) -> verdict [rule: ...]`` (a computed or datasheet
    value says so beside it), then the verdict counts apart for measured, computed and datasheet figures, as the
    report's top has them; the report's path goes to stderr so that stdout stays the figures."""
    for r in report.results:
        if r.status == "failed":
            print(f"{r.id:8s} FAILED ({r.elapsed_s:.1f} s)")
            continue
        if r.status == "needs":  # an extra not installed: no figure, no verdict
            print(f"{r.id:8s} {r.explanation}")
            continue
        for m in r.measurements:
            if m.seed is None and m.verdict is None:
                continue
            seed_text = f" (seed: {m.seed.text})" if m.seed is not None else ""
            verdict = ""
            if m.verdict is not None:
                verdict = f" -> {m.verdict.kind}: {m.verdict.reason}" if m.verdict.reason else f" -> {m.verdict.kind}"
            rule = f" [rule: {m.rule}]" if m.rule is not None else ""
            source = "" if m.provenance == "measured" else f" ({m.provenance})"
            print(f"{r.id:8s} {m.label}: {format_value(m.value, m.unit)}{source}{seed_text}{verdict}{rule}")
        if r.rule_history:  # a lab whose rules changed after its first run says when, why and which one judges
            for line in rule_history_lines(r):
                print(f"{r.id:8s} rule history: {line}")
    for provenance, counts in verdict_counts_by_provenance(report.results).items():
        if provenance == "measured" or any(counts.values()):
            print(f"verdicts on {provenance} figures: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    print(f"report: {html_path.resolve()}", file=sys.stderr)
