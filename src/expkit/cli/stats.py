"""``expkit stats``: intervals, power and sample size, eval tables with paired comparisons."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json
from expkit.stats.intervals import METHODS

app = typer.Typer(
    help="Judge results honestly: intervals, power, eval tables with paired comparisons.", no_args_is_help=True
)


@app.command("ci")
def ci(
    correct: int = typer.Option(..., "--correct", "-k", help="Number of correct items."),
    n: int = typer.Option(..., "--n", "-n", help="Number of items."),
    method: str = typer.Option("wilson", "--method", "-m", help=f"One of: {', '.join(METHODS)}."),
    level: float = typer.Option(0.95, "--level", help="Confidence level in (0, 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print the interval as JSON."),
) -> None:
    """Confidence interval for an accuracy of CORRECT out of N.

    Examples:

      expkit stats ci --correct 40 --n 80 --method wald       # the seed's +-10.96 points

      expkit stats ci -k 73 -n 100 --json
    """
    from expkit.stats.intervals import proportion_interval

    iv = proportion_interval(correct, n, method=method, level=level)
    if json_out:
        emit_json(iv)
        return
    print(
        f"{iv.k}/{iv.n} = {iv.estimate:.4f}   {iv.level:.0%} {iv.method} interval "
        f"[{iv.low:.4f}, {iv.high:.4f}]   half-width {iv.half_width:.4f} (+-{100 * iv.half_width:.2f} points)"
    )


@app.command("power")
def power(
    baseline: float = typer.Option(..., "--baseline", help="Accuracy of the reference model, e.g. 0.7."),
    delta: float = typer.Option(..., "--delta", help="Gap to detect (new - baseline), e.g. 0.05."),
    paired_corr: float = typer.Option(
        None, "--paired-corr", help="Per-item correlation of the two models' 0/1 scores (paired eval)."
    ),
    n: int = typer.Option(None, "--n", "-n", help="Items per model to report power and mde at (default: n_required)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Two-sided significance level."),
    target: float = typer.Option(0.8, "--power", help="Target power for n_required and mde."),
    json_out: bool = typer.Option(False, "--json", help="Print the analysis as JSON."),
) -> None:
    """Items needed to tell BASELINE from BASELINE + DELTA, power at n and the minimum detectable effect.

    Examples:

      expkit stats power --baseline 0.7 --delta 0.05              # unpaired: ~1248 items per model

      expkit stats power --baseline 0.7 --delta 0.05 --paired-corr 0.5 --json

      expkit stats power --baseline 0.7 --delta 0.05 --n 80       # the seed's 80 questions
    """
    from expkit.stats.power import analyze_power

    a = analyze_power(baseline=baseline, delta=delta, paired_corr=paired_corr, n=n, alpha=alpha, power=target)
    if json_out:
        emit_json(a)
        return
    design = "unpaired" if a.paired_corr is None else f"paired, per-item correlation {a.paired_corr:g}"
    print(f"{a.baseline:g} vs {a.baseline + a.delta:g} ({design}), alpha {a.alpha:g}, two-sided")
    print(f"  items per model for {a.target_power:.0%} power: {a.n_required:,}")
    print(f"  power at n = {a.n:,}: {a.power:.1%}")
    mde = f"{100 * a.mde:.2f}" if 100 * a.mde >= 0.01 else f"{100 * a.mde:.3g}"
    print(f"  minimum detectable effect at n = {a.n:,} ({a.target_power:.0%} power): {mde} points")


_FROM = ("items", "lm-eval", "inspect")


@app.command("table")
def table(
    sources: list[str] = typer.Argument(
        ...,
        metavar="RESULTS...",
        help=(
            "Per-item results (JSONL or CSV with model, item, score[, cluster]); with --from lm-eval the lm_eval "
            "--output_path directories, with --from inspect the .eval/.json logs."
        ),
    ),
    source_format: str = typer.Option("items", "--from", help=f"What RESULTS are: {', '.join(_FROM)}."),
    task: list[str] = typer.Option(
        None, "--task", "-t", help="lm-eval/inspect: a task to compare (repeat; default: every task all models have)."
    ),
    metric: str = typer.Option(
        None,
        "--metric",
        "-m",
        help="lm-eval: the per-item metric (acc, exact_match; default: "
        "the first logged); inspect: the scorer, or SCORER.KEY for a dict score.",
    ),
    filter_name: str = typer.Option(
        None, "--filter", help="lm-eval: the filter (strict-match, flexible-extract; default: the first logged)."
    ),
    baseline: str = typer.Option(None, "--baseline", "-b", help="Model to compare against (default: the first)."),
    fmt: str = typer.Option("terminal", "--format", "-f", help="terminal, markdown, html or json."),
    level: float = typer.Option(0.95, "--level", help="Confidence level in (0, 1)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the paired bootstrap (graded scores)."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Eval table: accuracy with its interval per model, and each model vs the baseline (paired delta,
    CI, p, Holm-adjusted p, verdict). From lm-evaluation-harness or Inspect logs: one table per task,
    Holm across every task and model.

    Examples:

      expkit stats table results.jsonl --baseline gpt-small

      expkit stats table results.csv --format markdown > table.md

      expkit stats table --from lm-eval out/base out/tuned --task gsm8k --filter strict-match

      expkit stats table --from inspect logs/*.eval --metric match --json
    """
    from expkit.errors import UsageError

    formats = ("terminal", "markdown", "html", "json")
    if json_out:
        fmt = "json"
    if fmt not in formats:
        raise UsageError(f"--format {fmt!r} is not known", hint=f"use one of {', '.join(formats)}")
    if source_format not in _FROM:
        raise UsageError(f"--from {source_format!r} is not known", hint=f"use one of {', '.join(_FROM)}")
    if source_format == "items":
        for opt, value in (("--task", task), ("--metric", metric), ("--filter", filter_name)):
            if value:
                raise UsageError(
                    f"{opt} applies to --from lm-eval or --from inspect",
                    hint="a file of per-item rows already names its models and scores",
                )
        if len(sources) != 1:
            raise UsageError(
                f"one results file expected, got {len(sources)}",
                hint="put every model's rows in one file, or use --from lm-eval / --from inspect",
            )
        from expkit.stats.tables import build_eval_table, read_item_results

        t = build_eval_table(read_item_results(Path(sources[0])), baseline=baseline, level=level, seed=seed)
        _emit_table(t, fmt, multi=False)
        return
    from expkit.stats.tables import build_task_tables

    if source_format == "lm-eval":
        from expkit.integrations.lmeval import read_lmeval_tasks

        tasks, notes = read_lmeval_tasks(sources, tasks=task or None, metric=metric, filter_name=filter_name)
    else:
        if filter_name:
            raise UsageError("--filter applies to --from lm-eval", hint="Inspect scorers are chosen with --metric")
        from expkit.integrations.inspect_logs import read_inspect_tasks

        tasks, notes = read_inspect_tasks(sources, tasks=task or None, metric=metric)
    tt = build_task_tables(tasks, source=source_format, baseline=baseline, level=level, seed=seed, notes=tuple(notes))
    _emit_table(tt, fmt, multi=True)


def _emit_table(t, fmt: str, *, multi: bool) -> None:  # noqa: ANN001 - EvalTable or TaskTables, imported lazily
    if fmt == "json":
        emit_json(t)
        return
    from expkit.render import eval_table as r

    if fmt == "markdown":
        print(r.render_task_tables_markdown(t) if multi else r.render_eval_table_markdown(t))
    elif fmt == "html":
        print(r.render_task_tables_html(t) if multi else r.render_eval_table_html(t))
    elif multi:
        r.print_task_tables(t)
    else:
        r.print_eval_table(t)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="stats")
