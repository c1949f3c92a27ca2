"""``expkit stats``: intervals, power and sample size, eval tables with paired comparisons."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json

from expkit.stats.intervals import METHODS

app = typer.Typer(help="Judge results honestly: intervals, power, eval tables with paired comparisons.", no_args_is_help=True)


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
    paired_corr: float = typer.Option(None, "--paired-corr",
                                      help="Per-item correlation of the two models' 0/1 scores (paired eval)."),
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
    print(f"  minimum detectable effect at n = {a.n:,} ({a.target_power:.0%} power): {100 * a.mde:.2f} points")


@app.command("table")
def table(
    results: Path = typer.Argument(..., help="Per-item results: JSONL or CSV with model, item, score[, cluster]."),
    baseline: str = typer.Option(None, "--baseline", "-b", help="Model to compare against (default: the first)."),
    fmt: str = typer.Option("terminal", "--format", "-f", help="terminal, markdown, html or json."),
    level: float = typer.Option(0.95, "--level", help="Confidence level in (0, 1)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the paired bootstrap (graded scores)."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Eval table: accuracy with its interval per model, and each model vs the baseline (paired delta,
    CI, p, Holm-adjusted p, verdict).

    Examples:

      expkit stats table results.jsonl --baseline gpt-small

      expkit stats table results.csv --format markdown > table.md
    """
    formats = ("terminal", "markdown", "html", "json")
    if json_out:
        fmt = "json"
    if fmt not in formats:
        from expkit.errors import UsageError

        raise UsageError(f"--format {fmt!r} is not known", hint=f"use one of {', '.join(formats)}")
    from expkit.stats.tables import build_eval_table, read_item_results

    t = build_eval_table(read_item_results(results), baseline=baseline, level=level, seed=seed)
    if fmt == "json":
        emit_json(t)
    elif fmt == "markdown":
        from expkit.render.eval_table import render_eval_table_markdown

        print(render_eval_table_markdown(t))
    elif fmt == "html":
        from expkit.render.eval_table import render_eval_table_html

        print(render_eval_table_html(t))
    else:
        from expkit.render.eval_table import print_eval_table

        print_eval_table(t)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="stats")
