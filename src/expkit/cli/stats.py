"""``expkit stats``: intervals, power and sample size, eval tables with paired comparisons."""

from __future__ import annotations

import typer

from expkit.cli.flags import level_option
from expkit.cli.output import emit
from expkit.integrations.readers import eval_readers
from expkit.stats.intervals import METHODS

app = typer.Typer(
    help="Judge results honestly: intervals, power, eval tables with paired comparisons.", no_args_is_help=True
)


@app.command("ci")
def ci(
    correct: int = typer.Option(..., "--correct", "-k", help="Number of correct items."),
    n: int = typer.Option(..., "--n", "-n", help="Number of items."),
    method: str = typer.Option("wilson", "--method", "-m", help=f"One of: {', '.join(METHODS)}."),
    level: float = level_option(),
    json_out: bool = typer.Option(False, "--json", help="Print the interval as JSON."),
) -> None:
    """Confidence interval for an accuracy of CORRECT out of N.

    Examples:

      expkit stats ci --correct 40 --n 80 --method wald       # the seed's +-10.96 points

      expkit stats ci -k 73 -n 100 --json
    """
    from expkit.render.stats import render_interval
    from expkit.stats.intervals import proportion_interval

    emit(proportion_interval(correct, n, method=method, level=level), json_out, human=render_interval)


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
    from expkit.render.stats import render_power
    from expkit.stats.power import analyze_power

    a = analyze_power(baseline=baseline, delta=delta, paired_corr=paired_corr, n=n, alpha=alpha, power=target)
    emit(a, json_out, human=render_power)


_FORMATS = ("terminal", "markdown", "html", "json")
# what --task, --metric and --filter set in the reader's query, for "applies to" messages in option words
_QUERY_OPTIONS = {"tasks": "--task", "metric": "--metric", "filter_name": "--filter"}


@app.command("table")
def table(
    sources: list[str] = typer.Argument(
        None,
        metavar="[RESULTS]...",
        help=(
            "Per-item results (JSONL or CSV with model, item, score[, cluster]), or the logs the --from reader reads."
        ),
    ),
    source_format: str = typer.Option(
        "items",
        "--from",
        help="What RESULTS are, one of the eval readers: "
        + "; ".join(r.description for r in eval_readers().values())
        + ".",
    ),
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
    label: list[str] = typer.Option(
        None,
        "--label",
        "-l",
        help="NAME=PATH[:SELECTOR]: one run under a name, so two runs of one model compare like two models "
        "(repeat; instead of RESULTS). SELECTOR: lm-eval's filter, Inspect's scorer, or the model of a rows file.",
    ),
    unpaired: bool = typer.Option(
        False,
        "--unpaired",
        help="Compare all items unpaired (default: pair on the items both models scored, the rest counted).",
    ),
    baseline: str = typer.Option(None, "--baseline", "-b", help="Model to compare against (default: the first)."),
    fmt: str = typer.Option("terminal", "--format", "-f", help="terminal, markdown, html or json."),
    level: float = level_option(),
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

      expkit stats table --from lm-eval -l 0-shot=out/0shot -l 2-shot=out/2shot:strict-match
    """
    from expkit.errors import UsageError
    from expkit.integrations.readers import EvalQuery, TableRequest, build_table_from, eval_reader, parse_label
    from expkit.render.eval_table import render_table

    as_json = json_out or fmt == "json"  # --json is --format json
    if fmt not in _FORMATS:
        raise UsageError(f"--format {fmt!r} is not known", hint=f"use one of {', '.join(_FORMATS)}")
    query = EvalQuery(tasks=tuple(task) if task else None, metric=metric, filter_name=filter_name)
    reader = eval_reader(source_format)
    for field in query.given():  # name the option the user typed, and the readers that take it
        if field not in reader.accepts:
            takers = [f"--from {r.name}" for r in eval_readers().values() if field in r.accepts]
            raise UsageError(f"{_QUERY_OPTIONS[field]} applies to {' or '.join(takers)}", hint=reader.description)
    request = TableRequest(
        source_format,
        tuple(sources or ()),
        query,
        baseline=baseline,
        level=level,
        seed=seed,
        labels=tuple(parse_label(x) for x in label or ()),
        pairing="unpaired" if unpaired else "shared",
    )
    emit(build_table_from(request), as_json, human=lambda t: render_table(t, fmt))


@app.command("leaderboard")
def leaderboard(
    sources: list[str] = typer.Argument(
        None, metavar="[PATH]...", help="One per-item output file per model (JSON list or JSONL, .gz/.zip), or logs."
    ),
    label: list[str] = typer.Option(
        None, "--label", "-l", help="NAME=PATH[:MODEL]: a model under a name (repeat; instead of PATH)."
    ),
    source_format: str = typer.Option(
        None, "--from", help="Reader: mmlu-pro, fields, items, lm-eval or inspect (default: by the files)."
    ),
    item: str = typer.Option(None, "--item", help="Field mapping: the item id field (dotted for nesting)."),
    score: str = typer.Option(None, "--score", help="Field mapping: the item's score (null: unparsed)."),
    pred: str = typer.Option(None, "--pred", help="Field mapping: the prediction (null: unparsed), with --answer."),
    answer: str = typer.Option(None, "--answer", help="Field mapping: the correct answer, with --pred."),
    cluster: str = typer.Option(None, "--cluster", help="Field holding the item's cluster (e.g. category)."),
    task: list[str] = typer.Option(None, "--task", "-t", help="lm-eval/inspect: the one task to rank."),
    metric: str = typer.Option(None, "--metric", "-m", help="lm-eval: the metric; inspect: the scorer."),
    unparsed: str = typer.Option("wrong", "--unparsed", help="Unparsed answers: wrong, drop or chance:K."),
    adjust: str = typer.Option("holm", "--adjust", help="Over all pairs: holm, bh or none."),
    published: str = typer.Option(None, "--published", help="CSV model,score (percent or fraction) to check."),
    level: float = level_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the rank bootstrap and the split halves."),
    n_boot: int = typer.Option(1000, "--boot", help="Bootstrap resamples for the rank intervals."),
    plot: str = typer.Option(None, "--plot", help="Write a forest plot of the scores (PNG or SVG) here."),
    fmt: str = typer.Option("terminal", "--format", "-f", help="terminal, markdown, html or json."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Leaderboard of N models from their per-item outputs: scores with intervals, rank intervals, rank
    upper bounds, tiers, every pair tested (Holm), the unparsed-answer policy, published figures checked.

    Examples:

      expkit stats leaderboard data/mmlu-pro/model_outputs_*.json.gz

      expkit stats leaderboard out/*.json.gz --unparsed chance:10 --published published.csv --json

      expkit stats leaderboard a.jsonl b.jsonl --item id --pred prediction --answer target --cluster passage

      expkit stats leaderboard -l base=runs/base.jsonl -l tuned=runs/tuned.jsonl --item id --score correct
    """
    from pathlib import Path

    from expkit.errors import UsageError
    from expkit.integrations.item_files import field_map
    from expkit.integrations.leaderboard_sources import LeaderboardRequest, build_leaderboard_from
    from expkit.integrations.readers import EvalQuery, parse_label
    from expkit.render.leaderboard import render_leaderboard, save_forest_plot

    if fmt not in _FORMATS:
        raise UsageError(f"--format {fmt!r} is not known", hint=f"use one of {', '.join(_FORMATS)}")
    request = LeaderboardRequest(
        paths=tuple(sources or ()),
        labels=tuple(parse_label(x) for x in label or ()),
        reader=source_format,
        fields=field_map(item=item, score=score, pred=pred, answer=answer, cluster=cluster),
        cluster=cluster,
        query=EvalQuery(tasks=tuple(task) if task else None, metric=metric),
        unparsed=unparsed,
        adjust=adjust,
        level=level,
        seed=seed,
        n_boot=n_boot,
        published=published,
    )
    board = build_leaderboard_from(request)
    if plot:
        save_forest_plot(board, Path(plot))
    emit(board, json_out or fmt == "json", human=lambda b: render_leaderboard(b, fmt))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="stats")
