"""Human rendering of the run store: ``runs ls`` (a table on a terminal, tab-separated in a pipe),
``runs show``, ``runs diff``, ``runs repro`` and ``runs export``. NaN and inf stay visible everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.runs.determinism import DeterminismReport
    from expkit.runs.diff import RunDiff
    from expkit.runs.execute import ExecResult
    from expkit.runs.export import ExportBatch
    from expkit.runs.findings import RecordedFindings
    from expkit.runs.records import RunView
    from expkit.runs.repro import ReproReport
    from expkit.runs.store import RunListing

__all__ = [
    "format_metric",
    "render_determinism",
    "render_diff",
    "render_exec_result",
    "render_exported",
    "render_listing",
    "render_repro",
    "render_run",
    "tee_output",
]


def tee_output(to_stderr: bool) -> Callable[[str, bytes], None]:
    """The sink ``runs exec``/``runs repro`` hand to ``execute``: each line of the command goes to our
    stdout or stderr as it came (everything to stderr when ``to_stderr``: stdout then carries JSON)."""

    def sink(stream: str, line: bytes) -> None:
        out = sys.stderr if (to_stderr or stream == "stderr") else sys.stdout
        if hasattr(out, "buffer"):
            out.buffer.write(line)
        else:
            out.write(line.decode(errors="replace"))
        out.flush()

    return sink


def render_exec_result(res: ExecResult) -> None:
    """``runs exec``: one line on stderr (stdout is the command's): status, exit code, time, where."""
    diverged = f", DIVERGED at {res.diverged_at}" if res.diverged else ""
    print(
        f"run {res.run_id}: {res.status}{diverged} (exit code {res.exit_code}, {res.elapsed_s:.1f} s) in {res.run_dir}",
        file=sys.stderr,
    )


def render_determinism(rep: DeterminismReport) -> None:
    """``runs determinism``: the same seed twice, the seed-to-seed spread, the refusing ops, the runs."""
    same = (
        "bitwise identical"
        if rep.repeat_identical
        else "DIFFERENT: max |diff| " + ", ".join(f"{k}={v:.3g}" for k, v in rep.repeat_max_abs_diff.items())
    )
    print(f"same seed ({rep.base_seed}) twice: {same}")
    for k, v in rep.seed_std.items():
        print(f"seed-to-seed std of {k} over {len(rep.seeds) - 1} seeds: {v:.4g} (range {rep.seed_range[k]:.4g})")
    print(f"ops without a deterministic implementation: {', '.join(rep.refusing_ops) or 'none seen'}")
    print(f"noise floor stored for group {rep.group}; runs: {' '.join(rep.run_ids)}")


def format_metric(v: object) -> str:
    """A metric or value for a table: floats to 6 significant digits, NaN/inf as ``nan``/``inf``."""
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def _status(status: str, reason: str | None, diverged: bool) -> str:
    text = status + (" DIVERGED" if diverged else "")
    if status in ("lost", "failed") and reason:
        text += f" ({reason})"
    return text


MAX_CONFIG_COLUMNS = 6  # config columns in ``runs ls`` at most (the rest stay in --json)
MAX_CELL_CHARS = 24  # a config cell longer than this is cut at a whole character with an ellipsis
MAX_METRICS_CHARS = 80  # the final-metrics cell keeps whole ``name=value`` items up to this width


def _clip_cell(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis; a number is never cut (it is formatted short)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metrics_cell(final_metrics: dict[str, object], limit: int = MAX_METRICS_CHARS) -> str:
    """``loss=0.0649783, acc=0.5`` with whole items only; what does not fit is counted (``… +3 more``)."""
    items = [f"{k}={format_metric(v)}" for k, v in final_metrics.items() if k != "step"]
    shown: list[str] = []
    for item in items:
        if shown and len(", ".join([*shown, item])) > limit:
            break
        shown.append(item)
    rest = len(items) - len(shown)
    return ", ".join(shown) + (f", … +{rest} more" if rest else "")


def render_listing(listing: RunListing) -> None:
    """``runs ls``: the runs, then the broken run directories and index notes on stderr. Config columns are
    the flattened keys (``training_args.learning_rate``) whose values differ between the runs listed."""
    from rich.table import Column

    from expkit.render.console import err_console, fitted_table, out_console
    from expkit.runs.columns import differing_keys, flatten_config

    flat = [flatten_config(r.config) for r in listing.runs]
    varying = list(differing_keys(flat))[:MAX_CONFIG_COLUMNS]
    headers = ("id", "name", "status", "created", "commit", "seed", *varying, "final metrics")
    rows = []
    for r, config in zip(listing.runs, flat, strict=True):
        commit = (r.commit or "-")[:8] + ("+" if r.dirty else "")
        rows.append(
            (
                r.id,
                r.name or "-",
                _status(r.status, r.status_reason, r.diverged),
                (r.created_at or "")[:19],
                commit,
                format_metric(r.seed),
                *(_clip_cell(format_metric(config[k])) if k in config else "-" for k in varying),
                _metrics_cell(r.final_metrics),
            )
        )
    if sys.stdout.isatty():
        table = fitted_table(
            Column("id", no_wrap=True, min_width=22), *headers[1:], no_wrap=("status", "commit", "seed", *varying)
        )
        for row in rows:
            table.add_row(*row)
        out_console().print(table)
    else:  # a pipe: one tab-separated line per run, nothing cut (grep / cut / awk)
        print("\t".join(headers))
        for row in rows:
            print("\t".join(row))
    err = err_console()
    for note in listing.notes:
        err.print(f"note: {note}", markup=False, highlight=False)
    for b in listing.broken:
        err.print(f"broken run {b.id}: {b.error}", markup=False, highlight=False)


def render_run(view: RunView) -> None:
    """``runs show``: identity, status (with ``DIVERGED``), the seven records, final metrics per rank."""
    rec, presences = view.record, view.records
    print(
        f"run {rec.id}  name {rec.name or '-'}  status {_status(rec.status, None, rec.diverged)}  "
        f"({rec.created_at} -> {rec.ended_at or 'now'})"
    )
    print(f"command: {' '.join(rec.command)}")
    if rec.integration:
        print(f"recorded by: {rec.integration}")
    for p in presences:
        print(f"  [{'x' if p.present else ' '}] {p.record:<12} {p.summary}")
    if rec.final_metrics:
        print("final metrics: " + ", ".join(f"{k}={format_metric(v)}" for k, v in rec.final_metrics.items()))
    for rank, fm in rec.final_metrics_by_rank.items():
        print(f"final metrics of rank {rank}: " + ", ".join(f"{k}={format_metric(v)}" for k, v in fm.items()))
    if rec.diverged:
        print(f"diverged: {rec.diverged_at}")
    for note in (*rec.config_notes, *rec.metric_notes):
        print(f"note: {note}")
    if rec.checkpoints:
        print("checkpoints: " + ", ".join(f"{c.name} (step {c.step})" for c in rec.checkpoints))
    if view.doctor is not None:
        _render_doctor(view.doctor)
    if rec.status_reason:
        print(f"status reason: {rec.status_reason}")
    if rec.error:
        print("error:\n" + rec.error.rstrip())


def _render_doctor(doc: RecordedFindings) -> None:
    """The findings of ``expkit doctor`` recorded in the run (doctor.json): a count, then one line each."""
    if doc.problem:
        print(f"doctor: {doc.problem}")
        return
    print(f"doctor ({doc.source}, {doc.steps_watched} optimizer step(s) watched): {len(doc.findings)} finding(s)")
    for f in doc.findings:
        where = f" at {f.file}:{f.line}" if f.file and f.line is not None else (f" at {f.file}" if f.file else "")
        if f.seen_file and f.seen_line is not None:
            where += f" (seen at {f.seen_file}:{f.seen_line})"
        step = f" (step {f.step})" if f.step else ""
        print(f"  {'PERF' if f.kind == 'performance' else 'BUG'} [{f.check}]{where}{step}: {f.message}")


def render_diff(d: RunDiff, *, top: int = 20) -> None:
    """``runs diff``: the seven records side by side, metric deltas, ranked differences."""
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    rec_table = Table("record", d.a, d.b, title="the seven records")
    for pa, pb in zip(d.records_a, d.records_b, strict=True):
        rec_table.add_row(
            pa.record, ("" if pa.present else "MISSING ") + pa.summary, ("" if pb.present else "MISSING ") + pb.summary
        )
    con.print(rec_table)
    if d.metrics:
        mt = Table("metric", "A", "B", "B - A", "noise floor", title="final metrics")
        for m in d.metrics:
            mt.add_row(
                m.name, format_metric(m.a), format_metric(m.b), format_metric(m.delta), format_metric(m.noise_floor)
            )
        con.print(mt)
    dt = Table(
        "#", "category", "key", "A", "B", "why", title=f"{len(d.differences)} differences, most likely cause first"
    )
    for i, x in enumerate(d.differences[:top], 1):
        dt.add_row(str(i), x.category, x.key, format_metric(x.a)[:40], format_metric(x.b)[:40], x.why)
    con.print(dt)
    con.print(d.note, markup=False)


def render_repro(rep: ReproReport) -> None:
    """``runs repro``: the verdict, each metric then and now, what data was compared and how."""
    print(f"{rep.original} -> {rep.reproduction}: {rep.verdict} ({rep.note})")
    for k, (a, b) in rep.metrics.items():
        print(f"  {k:<20} {format_metric(a):>14} {format_metric(b):>14}")
    for c in rep.data_compared:
        print(f"  data compared: {c}")
    for m in rep.data_mismatches:
        print(f"  data changed: {m}")


def render_exported(batch: ExportBatch) -> None:
    """``runs export``: one line per run and target."""
    for e in batch.exported:
        what = e.skipped or f"{e.metric_points} metric points, {e.params} params, {len(e.artifacts)} artifacts"
        print(f"{e.run_id} -> {e.target} {e.target_run_id or ''}: {what}")
