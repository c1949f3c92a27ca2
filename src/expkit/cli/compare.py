"""``expkit compare``: is B better than A, over seeds, against the seed-to-seed spread."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.flags import level_option
from expkit.cli.output import emit


def compare(
    a: str = typer.Argument(..., help="Group A (the baseline), or the group to split with --by."),
    b: str = typer.Argument(None, help="Group B (compared with A)."),
    by: str = typer.Option(
        None,
        "--by",
        help="Split group A by this config key, as lr or config.lr (two values: the smaller is A; three or more: "
        "every value against the best, Holm over the comparisons).",
    ),
    metric: list[str] = typer.Option(
        [],
        "--metric",
        "-m",
        help="Metric to judge (repeat). Default: the shared metrics that look like objectives (loss, accuracy, "
        "reward, perplexity ...); the others (lr, grad_norm ...) are listed without a verdict.",
    ),
    lower_is_better: bool = typer.Option(
        None,
        "--lower-is-better/--higher-is-better",
        help="Direction of every metric (default: lower for loss-like names: "
        "loss, error, ppl, nll, bpb, time, latency, *_s; higher otherwise).",
    ),
    level: float = level_option(help="Confidence level of the intervals, in (0, 1)."),
    curves: Path = typer.Option(
        None,
        "--curves",
        help="Also draw both groups' curves with t-bands and the "
        "difference panel B - A to this .png/.svg (first metric).",
    ),
    ema: float = typer.Option(0.0, "--ema", help="Debiased EMA per seed for --curves (0: none)."),
    store: Path = typer.Option(None, "--store", help="Run store directory (default $EXPKIT_STORE or ./runs)."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Per metric: B - A over the final values of the finished runs, with its interval (paired t by seed
    when both sides ran the same seeds, Welch otherwise: the output says which), the seed-to-seed spread,
    and a verdict of B against A: better, worse, or inconclusive (need ~N seeds, a power estimate at 80%).
    A metric whose final value is the same for every seed of a side gets no verdict: the seeds had no effect.

    Examples:

      expkit compare lr --by lr_max

      expkit compare grid3x3 --by lr --metric loss     (3 values: each against the best, with Holm)

      expkit compare baseline new --metric val_loss --curves cmp.png --json
    """
    from expkit.errors import UsageError
    from expkit.render.sweep import draw_comparison_curves, print_best_comparison, print_comparison
    from expkit.sweep.compare import BestComparison, compare_by, compare_groups

    if curves is not None and curves.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--curves {curves} must end in .png or .svg")
    if by is not None and b is not None:
        raise UsageError("compare two groups (a and b) or one group split by a config key (by)")
    ask = {"store": store, "metrics": tuple(metric), "lower_is_better": lower_is_better, "level": level}
    if by is not None:
        found = compare_by(a, by, **ask)
        if isinstance(found, BestComparison):
            if curves is not None:
                raise UsageError(f"--curves draws two sides; --by {by} has {len(found.sides)} values")
            emit(found, json_out, human=print_best_comparison)
            return
        cmp = found
    else:
        cmp = compare_groups(a, b, **ask)
    if curves is not None:
        cmp = draw_comparison_curves(cmp, curves, ema=ema, level=level)
    emit(cmp, json_out, human=print_comparison)


def register(root: typer.Typer) -> None:
    root.command("compare")(compare)
