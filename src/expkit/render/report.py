"""The lab report: ``index.html`` (one self-contained page, inline CSS, images beside it) and
``results.json`` (the same data). Every string from a lab or the machine is HTML-escaped.

render/ takes data, never the lab runner: the report is typed against the protocols below (what a page
reads off a lab's result), which ``expkit.labs``' frozen dataclasses satisfy without this module importing
them, so mypy still sees a misspelled field and ``labs`` -> ``render`` stays one-way.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from expkit.render.jsonout import dumps

if TYPE_CHECKING:
    from expkit.runs.machine import CodeRecord, MachineInfo

__all__ = [
    "LabReportView",
    "LabResultView",
    "MeasurementView",
    "SeedFigureView",
    "VerdictView",
    "format_value",
    "render_html",
    "verdict_counts",
    "write_report",
]

VERDICT_ORDER = ("reproduced", "demonstrated", "differs", "not reproduced", "not measured here")


class VerdictView(Protocol):
    """A verdict as the page shows it (``expkit.labs.base.Verdict``)."""

    @property
    def kind(self) -> str: ...
    @property
    def reason(self) -> str | None: ...


class SeedFigureView(Protocol):
    """The seed's figure as it states it (``expkit.labs.base.SeedFigure``)."""

    @property
    def text(self) -> str: ...


class MeasurementView(Protocol):
    """One measured figure (``expkit.labs.base.Measurement``)."""

    @property
    def label(self) -> str: ...
    @property
    def value(self) -> float | int | str | bool | None: ...
    @property
    def unit(self) -> str: ...
    @property
    def verdict(self) -> VerdictView | None: ...
    @property
    def seed(self) -> SeedFigureView | None: ...
    @property
    def detail(self) -> str: ...
    @property
    def rule_text(self) -> str | None: ...
    @property
    def rule(self) -> object | None: ...
    @property
    def provenance(self) -> str: ...


class RuleChangeView(Protocol):
    """A change to a lab's rule (``expkit.labs.base.RuleChange``)."""

    @property
    def key(self) -> str: ...
    @property
    def date(self) -> str: ...
    @property
    def commit(self) -> str: ...
    @property
    def first(self) -> str: ...
    @property
    def changed(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def judged_by(self) -> str: ...


def rule_history_lines(r: LabResultView) -> list[str]:
    """One line per change to the lab's rules: when, the rule before and after, why, and which rule judges;
    a lab whose rules never changed after its first run says so."""
    if not r.rule_history:
        return ["rules as first stated (no change after the lab first ran)"]
    return [
        f"{c.key}, changed {c.date} ({c.commit}): first '{c.first}'; then '{c.changed}'. Why: {c.why}. "
        f"Judged by {c.judged_by}"
        for c in r.rule_history
    ]


class LabResultView(Protocol):
    """A lab as it ran (``expkit.labs.base.LabResult``)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def claims(self) -> Sequence[str]: ...
    @property
    def status(self) -> str: ...
    @property
    def budget(self) -> str: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def measurements(self) -> Sequence[MeasurementView]: ...
    @property
    def explanation(self) -> str: ...
    @property
    def figures(self) -> Sequence[str]: ...
    @property
    def error(self) -> str | None: ...
    @property
    def seed_figures(self) -> Sequence[SeedFigureView]: ...
    @property
    def rule_history(self) -> Sequence[RuleChangeView]: ...


class LabReportView(Protocol):
    """The whole run (``expkit.labs.runner.LabReport``): the labs' results and the machine they ran on."""

    @property
    def expkit_version(self) -> str: ...
    @property
    def code(self) -> CodeRecord: ...
    @property
    def machine(self) -> MachineInfo: ...
    @property
    def budget(self) -> str: ...
    @property
    def started_at(self) -> str: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def results(self) -> Sequence[LabResultView]: ...


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1b1f24;line-height:1.45;padding:0 1rem}
h1{margin-bottom:.2rem} h2{border-bottom:1px solid #d0d7de;padding-bottom:.3rem;margin-top:2.2rem}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1rem;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa} td{overflow-wrap:break-word} td.num{font-variant-numeric:tabular-nums}
table.summary{table-layout:fixed} details summary{cursor:pointer} details{font-size:.88rem}
.v-reproduced{color:#116329;font-weight:600} .v-differs{color:#9a6700;font-weight:600}
.v-not{color:#cf222e;font-weight:600}
.v-demonstrated{color:#0550ae;font-weight:600} .v-unmeasured{color:#57606a;font-weight:600}
.rule{color:#57606a;font-size:.82rem;margin-top:.15rem} .counts td{font-weight:600}
.failed{color:#cf222e;font-weight:700}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;font-size:.8rem}
img{max-width:100%;border:1px solid #d0d7de;margin:.4rem 0} .muted{color:#57606a;font-size:.9rem}
"""


def format_value(value: object, unit: str = "") -> str:
    """A measured value for people: 4 significant digits for floats, the unit after it."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif value is None:
        text = "n/a"
    else:
        text = str(value)
    return f"{text} {unit}".strip()


_VERDICT_CSS = {
    "reproduced": "v-reproduced",
    "differs": "v-differs",
    "demonstrated": "v-demonstrated",
    "not measured here": "v-unmeasured",
}


def verdict_counts(results: Sequence[LabResultView]) -> dict[str, int]:
    """How many judged figures got each verdict kind, in the order the report lists them."""
    counts = Counter(m.verdict.kind for r in results for m in r.measurements if m.verdict is not None)
    return {k: counts.get(k, 0) for k in VERDICT_ORDER}


PROVENANCE_ORDER = ("measured", "computed", "datasheet")


def verdict_counts_by_provenance(results: Sequence[LabResultView]) -> dict[str, dict[str, int]]:
    """The verdict counts apart for figures measured here, computed (formula, ledger) and read off a datasheet."""
    counts = Counter((m.provenance, m.verdict.kind) for r in results for m in r.measurements if m.verdict is not None)
    return {p: {k: counts.get((p, k), 0) for k in VERDICT_ORDER} for p in PROVENANCE_ORDER}


def _rule_html(m: MeasurementView) -> str:
    text = m.rule_text
    return f'<div class="rule">{escape(text)}</div>' if text else ""


def _verdict_html(m: MeasurementView) -> str:
    if m.verdict is None:
        return "-"
    css = _VERDICT_CSS.get(m.verdict.kind, "v-not")
    reason = f" {escape(m.verdict.reason)}" if m.verdict.reason else ""
    return f'<span class="{css}">{escape(m.verdict.kind)}</span>{":" if reason else ""}{reason}{_rule_html(m)}'


def _clip(text: str, limit: int = 80) -> str:
    """Long text values (a traced call chain) are cut in the summary; the lab section has them whole."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _provenance_html(m: MeasurementView) -> str:
    """A computed or datasheet figure says so beside its value; a measured one needs no mark."""
    return "" if m.provenance == "measured" else f' <span class="muted">({escape(m.provenance)})</span>'


def _short_verdict_html(m: MeasurementView) -> str:
    """The verdict for the summary table: the word, with a long reason folded into <details>."""
    if m.verdict is None or not m.verdict.reason or len(m.verdict.reason) <= 60:
        return _verdict_html(m)
    css = _VERDICT_CSS.get(m.verdict.kind, "v-not")
    return (
        f'<details><summary><span class="{css}">{escape(m.verdict.kind)}</span>: why</summary>'
        f"{escape(m.verdict.reason)}</details>{_rule_html(m)}"
    )


def _summary_rows(results: Sequence[LabResultView]) -> list[str]:
    rows = []
    for r in results:
        anchor = f'<a href="#lab-{escape(r.id)}">{escape(r.id)}</a>'
        claims = escape(", ".join(r.claims))
        if r.status == "failed":
            seeds = "; ".join(s.text for s in r.seed_figures) or "(behaviour)"
            rows.append(
                f"<tr><td>{claims}</td><td>{anchor}</td><td>{escape(seeds)}</td>"
                f'<td>-</td><td class="failed">lab failed</td></tr>'
            )
            continue
        judged = [m for m in r.measurements if m.seed is not None or m.verdict is not None]
        if not judged:
            rows.append(
                f"<tr><td>{claims}</td><td>{anchor}</td><td>-</td>"
                f"<td>{len(r.measurements)} supporting figures</td><td>-</td></tr>"
            )
        for m in judged:
            seed = escape(m.seed.text) if m.seed else "-"
            rows.append(
                f"<tr><td>{claims}</td><td>{anchor}: {escape(m.label)}</td><td>{seed}</td>"
                f'<td class="num">{escape(_clip(format_value(m.value, m.unit)))}{_provenance_html(m)}</td>'
                f"<td>{_short_verdict_html(m)}</td></tr>"
            )
    return rows


def _lab_section(r: LabResultView) -> str:
    parts = [
        f'<h2 id="lab-{escape(r.id)}">{escape(r.id)}: {escape(r.title)}</h2>',
        f'<p class="muted">claims {escape(", ".join(r.claims))} · budget {escape(r.budget)} · {r.elapsed_s:.1f} s</p>',
    ]
    if r.status == "failed":
        parts.append(
            f'<p class="failed">This lab failed; the other labs still ran.</p><pre>{escape(r.error or "")}</pre>'
        )
        return "\n".join(parts)
    parts.append("<table><tr><th>figure</th><th>measured here</th><th>seed</th><th>verdict</th><th>detail</th></tr>")
    for m in r.measurements:
        seed = escape(m.seed.text) if m.seed else "-"
        parts.append(
            f'<tr><td>{escape(m.label)}</td><td class="num">{escape(format_value(m.value, m.unit))}'
            f"{_provenance_html(m)}</td>"
            f"<td>{seed}</td><td>{_verdict_html(m)}</td><td>{escape(m.detail)}</td></tr>"
        )
    parts.append("</table>")
    history = "".join(f"<li>{escape(line)}</li>" for line in rule_history_lines(r))
    parts.append(f'<p class="muted">Rule history:</p><ul class="muted">{history}</ul>')
    for para in r.explanation.split("\n\n"):
        if para.strip():
            parts.append(f"<p>{escape(para.strip())}</p>")
    for fig in r.figures:
        parts.append(f'<img src="{escape(fig)}" alt="{escape(Path(fig).stem)}">')
    return "\n".join(parts)


def _machine_rows(report: LabReportView) -> list[str]:
    m = report.machine
    gib = 1024**3
    gpus = ", ".join(f"{n} ({b / gib:.0f} GiB)" for n, b in zip(m.gpu_names, m.gpu_memory_bytes, strict=True)) or "none"
    commit = report.code.commit or f"unknown ({report.code.reason})"
    if report.code.dirty:
        commit += " + uncommitted changes"
    items = [
        ("CPU", m.cpu_model or "unknown"),
        ("cores (logical / physical)", f"{m.cpu_cores_logical} / {m.cpu_cores_physical}"),
        ("RAM", f"{m.ram_bytes / gib:.1f} GiB" if m.ram_bytes else "unknown"),
        ("OS", m.os),
        ("Python", m.python),
        ("torch", m.torch or "not installed"),
        ("CUDA", m.cuda or "none"),
        ("GPU", gpus),
        ("expkit", f"{report.expkit_version}, commit {commit}"),
        ("started", report.started_at),
        ("budget", report.budget),
        ("total time", f"{report.elapsed_s:.1f} s"),
    ]
    return [f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in items]


def render_html(report: LabReportView) -> str:
    """The whole page as a string (no network: no CDN, no external font, no script)."""
    failed = sum(r.status == "failed" for r in report.results)
    n = len(report.results)
    labs = f"{n} lab{'s' if n != 1 else ''}"
    summary = f"{labs}, {failed} failed" if failed else f"{labs}, all ran"
    by_source = verdict_counts_by_provenance(report.results)
    count_rows = "".join(
        f"<tr><th>{escape(p)}</th>" + "".join(f"<td>{escape(k)}: {v}</td>" for k, v in counts.items()) + "</tr>"
        for p, counts in by_source.items()
        if any(counts.values()) or p != "datasheet"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            "<title>expkit lab report</title>",
            f"<style>{_CSS}</style></head><body>",
            "<h1>expkit lab report</h1>",
            f'<p class="muted">Each claim of the field guide, measured on this machine where it can be, computed '
            f"(a formula, the memory ledger, the roofline model or a simulation from assumed inputs: nothing of this "
            f"machine measured) where it cannot; each such figure is marked beside its value. {escape(summary)}.</p>",
            '<h2>Verdicts</h2><table class="counts">',
            count_rows,
            "</table>",
            '<p class="muted">Every verdict comes from the rule shown under it: reproduced (the rule holds), '
            "demonstrated (a behaviour with no figure was shown), differs (a cause measured in the same run "
            "explains it), not reproduced, not measured here (what it needs).</p>",
            "<h2>Claims: seed figure vs measured here</h2>",
            '<p class="muted">Figures with a seed counterpart or a verdict; each lab section below has all of '
            "them.</p>",
            '<table class="summary"><colgroup><col style="width:6%"><col style="width:30%"><col style="width:25%">'
            '<col style="width:15%"><col style="width:24%"></colgroup>',
            "<tr><th>claim</th><th>lab: figure</th><th>seed</th><th>measured here</th><th>verdict</th></tr>",
            *_summary_rows(report.results),
            "</table>",
            *(_lab_section(r) for r in report.results),
            "<h2>Machine</h2><table>",
            *_machine_rows(report),
            "</table>",
            "</body></html>",
        ]
    )


def write_report(report: LabReportView, out_dir: Path) -> Path:
    """Write ``results.json`` and ``index.html`` atomically into ``out_dir``; return the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("results.json", dumps(report)), ("index.html", render_html(report))):
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out_dir / name)
    return out_dir / "index.html"
