"""``expkit plot``: figures of runs (loss curves over seeds with bands and a difference panel)."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit

app = typer.Typer(help="Figures of your runs: curves over seeds with bands, log x by default.", no_args_is_help=True)


def _resolve_sources(sources: list[str], store: str | None) -> list[Path]:
    """A source is a file, a run directory, a run ID/name in the run store, or a group of it (all its finished
    runs)."""
    from expkit.errors import UsageError

    out = []
    for s in sources:
        p = Path(s)
        if p.exists():
            out.append(p)
            continue
        if "/" in s or p.suffix.lower() in (".csv", ".jsonl", ".json", ".tsv"):
            from expkit.errors import InputError

            raise InputError("no such file or run directory", path=p, hint="check the path")
        try:
            from expkit.runs.store import resolve_store
        except ImportError:  # the run store is not installed in this build: plain <store>/<id>
            import os

            root = Path(store or os.environ.get("EXPKIT_STORE") or "runs")
            if not (root / s).is_dir():
                raise UsageError(f"{s!r} is neither a file nor a run in {root}") from None
            out.append(root / s)
            continue
        out += _runs_of(resolve_store(store), s)
    return out


def _runs_of(root: Path, ref: str) -> list[Path]:
    """The run ``ref`` names, or else the finished runs of the group ``ref`` names."""
    from expkit.errors import UsageError
    from expkit.runs.store import find_run_dir, list_runs

    try:
        return [find_run_dir(root, ref)]
    except UsageError as exc:
        group = list_runs(root, where=[f"group={ref}", "status=finished"]).runs
        if not group:
            raise exc from None
        return [root / r.id for r in sorted(group, key=lambda r: r.created_at or "")]


def _config_groups(paths: list[Path]) -> dict[str, str]:
    """Run directory name -> the label of its config by the keys that differ among the runs given."""
    from expkit.errors import InputError
    from expkit.runs.columns import config_labels
    from expkit.runs.store import read_record

    configs = {}
    for p in paths:
        if p.is_dir() and (p / "run.json").is_file():
            try:
                configs[p.name] = read_record(p).config
            except InputError:
                continue  # load_curves reads the run's metrics anyway; its config is then not known
    return config_labels(configs)


@app.command("curves")
def curves(
    sources: list[str] = typer.Argument(
        ..., help="Run IDs/names, groups (their finished runs), run directories, or CSV/JSONL files."
    ),
    metric: str = typer.Option("loss", "--metric", "-m", help="The metric to draw."),
    x: str = typer.Option("step", "--x", help="step, tokens or time (seconds since the first record)."),
    group_by: str = typer.Option(
        None,
        "--group-by",
        "-g",
        help="Group runs by a config key (config.lr) or column. Default: runs are grouped by their config "
        "(the keys that differ between them), so only seeds of one config share a band.",
    ),
    ema: float = typer.Option(0.0, "--ema", help="Debiased EMA per seed before aggregating, e.g. 0.9 (0: none)."),
    diff: str = typer.Option(None, "--diff", help="Two groups A,B for the difference panel (default: first two)."),
    linear_x: bool = typer.Option(False, "--linear-x", help="Linear x axis (log is the default)."),
    log_y: bool = typer.Option(False, "--log-y", help="Log y axis."),
    out: Path = typer.Option(Path("curves.png"), "--out", "-o", help="Figure file, .png or .svg."),
    store: str = typer.Option(None, "--store", help="Run store directory (default ./runs or $EXPKIT_STORE)."),
    json_out: bool = typer.Option(False, "--json", help="Print the per-group summary as JSON."),
) -> None:
    """Curves of METRIC over seeds: thin per-seed lines, the mean with a 95% t-band labelled with the
    number of seeds, and a panel of group A - group B with its interval, shaded where it excludes 0.

    Examples:

      expkit plot curves runs/lr3e-3_s* runs/lr1e-3_s* --group-by config.lr --ema 0.9

      expkit plot curves seeds.csv --metric val_loss --x tokens --out fig.svg

      expkit plot curves my-sweep --metric eval_loss     # a group: its finished runs, one band per config
    """
    from expkit.errors import UsageError
    from expkit.render.curves import draw_curves, render_curve_summary
    from expkit.stats.curves import load_curves, summarize_curve_set, summarize_curves

    if out.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--out {out} must end in .png or .svg")
    pair = None
    if diff:
        parts = [p.strip() for p in diff.split(",")]
        if len(parts) != 2:
            raise UsageError(f"--diff {diff!r} must name two groups, A,B")
        pair = (parts[0], parts[1])
    paths = _resolve_sources(sources, store)
    groups = None if group_by else _config_groups(paths)
    cs = summarize_curves(
        load_curves(paths, metric=metric, x=x, group_by=group_by, group_of=groups),
        metric=metric,
        x_key=x,
        ema=ema or None,
        compare=pair,
    )
    figure = draw_curves(cs, out, log_x=not linear_x, log_y=log_y)
    emit(summarize_curve_set(cs, figure), json_out, human=render_curve_summary)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="plot")
