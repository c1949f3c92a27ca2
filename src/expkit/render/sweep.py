"""Presentation of sweeps and comparisons: the live counts of a sweep, its trials table, and the
per-metric verdict table of ``expkit compare``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from expkit.render.console import err_console, fitted_table, out_console

if TYPE_CHECKING:
    from expkit.sweep.compare import BestComparison, Comparison
    from expkit.sweep.driver import SweepProgress, SweepResult

__all__ = [
    "draw_comparison_curves",
    "print_best_comparison",
    "print_comparison",
    "print_sweep_result",
    "sweep_progress",
]


@contextmanager
def sweep_progress(total: int, *, announce: bool = True) -> Iterator[Callable[[SweepProgress], None]]:
    """Yield ``update(progress)`` for ``SweepProgress`` events. The first event (what runs where, how many
    at a time) is said on stderr when ``announce``. On a terminal: a rich bar with finished / running /
    failed counts on stderr. In a pipe: quiet (the summary follows at the end)."""
    said: list[bool] = []

    def say_first(p: SweepProgress) -> None:
        if announce and not said:
            print(f"sweep: {p.event}", file=sys.stderr, flush=True)
            said.append(True)

    if not sys.stderr.isatty():
        yield say_first
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
        console=err_console(),
        transient=False,
    ) as bar:
        task = bar.add_task("sweep", total=total, counts="")

        def update(p: SweepProgress) -> None:
            say_first(p)
            counts = f"finished {p.finished}  running {p.running}  failed {p.failed}"
            if p.retried:
                counts += f"  retried {p.retried}"
            bar.update(task, total=p.total, completed=p.finished + p.failed, counts=counts)

        yield update


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def print_sweep_result(res: SweepResult) -> None:
    """The trials table (status, attempts, run, final metrics) and one line of counts."""
    con = out_console()
    table = fitted_table(
        "#", "trial", "status", "tries", "run", "final metrics", title=f"sweep {res.group}", no_wrap=("run",)
    )
    for o in res.outcomes:
        metrics = ", ".join(f"{k} {_fmt(v)}" for k, v in o.final_metrics.items() if k not in ("step", "time"))
        status = o.status
        if o.error and o.status not in ("finished", "done before"):
            status += ": " + o.error.strip().splitlines()[-1][:80]
        table.add_row(str(o.index), o.label, status, str(o.attempts), o.run_id or "-", metrics)
    con.print(table)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(res.counts.items()))
    con.print(
        f"{res.n_trials} trials on {res.backend} ({res.max_parallel} at a time, "
        f"{res.threads_per_trial} thread(s) each) in {res.elapsed_s:.1f} s: {counts}"
    )
    con.print(f"runs in {res.store} (group {res.group}); config passed as {res.config_passing}")


def print_comparison(cmp: Comparison) -> None:
    """One row per metric: A, B, B - A with its interval, the seed spread and the verdict of B against A."""
    con = out_console()
    table = fitted_table(
        "metric",
        "A mean",
        "B mean",
        "B - A (interval)",
        "method",
        "seed sd",
        "noise floor",
        "verdict (B vs A)",
        title=f"B = {cmp.b.label} ({len(cmp.b.run_ids)} runs) vs A = {cmp.a.label} ({len(cmp.a.run_ids)} runs)",
    )
    for m in cmp.metrics:
        direction = "lower" if m.lower_is_better else "higher"
        table.add_row(
            f"{m.metric} ({direction} is better, {m.direction_source})",
            f"{m.mean_a:.4g}",
            f"{m.mean_b:.4g}",
            f"{m.delta:+.4g} \\[{m.low:+.4g}, {m.high:+.4g}]",
            f"{m.method} (n {m.n_a}/{m.n_b})",
            f"{m.seed_sd:.3g}",
            f"{m.noise_floor:.3g}" + (f" (stored {m.stored_floor:.3g})" if m.stored_floor is not None else ""),
            m.verdict,
        )
    con.print(table)
    con.print(f"{round(100 * cmp.metrics[0].level)}% intervals; {'; '.join(cmp.notes)}")
    con.print(
        "noise floor: half-width of the interval of B - A (the smallest difference these seeds resolve); "
        "seed sd: seed-to-seed standard deviation within a side"
    )
    if cmp.curves:
        con.print(f"curves: {cmp.curves}")


def print_best_comparison(cmp: BestComparison) -> None:
    """One row per (metric, value): the value against the best one, its interval, raw and Holm p, verdict."""
    con = out_console()
    sizes = ", ".join(f"{s.label} ({len(s.run_ids)} runs)" for s in cmp.sides)
    table = fitted_table(
        "metric", "best", "value", "mean", "minus best (interval)", "method", "p", "p Holm", "verdict",
        title=f"group {cmp.group} by {cmp.by}: every value against the best: {sizes}",
    )  # fmt: skip
    for r in cmp.rows:
        m = r.comparison
        table.add_row(
            r.metric, f"{r.best} ({m.mean_a:.4g})", r.other, f"{m.mean_b:.4g}",
            f"{m.delta:+.4g} \\[{m.low:+.4g}, {m.high:+.4g}]", f"{m.method} (n {m.n_a}/{m.n_b})",
            f"{m.p_value:.3g}", f"{r.p_holm:.3g}", r.verdict,
        )  # fmt: skip
    con.print(table)
    if cmp.rows:
        con.print(f"{round(100 * cmp.rows[0].comparison.level)}% intervals; {'; '.join(cmp.notes)}")


def draw_comparison_curves(cmp: Comparison, path: Path, *, ema: float = 0.0, level: float = 0.95) -> Comparison:
    """Draw both sides' curves of the first metric with t-bands and the difference panel B - A to ``path``
    (.png or .svg); returns ``cmp`` with ``curves`` set to the file written."""
    import dataclasses

    from expkit.render.curves import draw_curves
    from expkit.sweep.compare import curve_set_of

    m = cmp.metrics[0].metric
    curve_set = curve_set_of(cmp, metric=m, ema=ema or None, level=level)
    figure = draw_curves(curve_set, path, title=f"{m}: {cmp.b.label} vs {cmp.a.label}")
    return dataclasses.replace(cmp, curves=str(figure))
