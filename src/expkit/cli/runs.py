"""``expkit runs``: record any command as a run, list, show and diff runs, probe determinism,
reproduce a run, export to MLflow / TensorBoard. The store is ``--store``, ``$EXPKIT_STORE`` or ./runs.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import typer

from expkit.cli.output import emit

app = typer.Typer(
    help="Make it reproducible: the seven records of every run, diff, determinism, repro, export.", no_args_is_help=True
)

_STORE_HELP = "Run store directory (default $EXPKIT_STORE or ./runs)."
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


@app.command("exec", context_settings=_PASS_THROUGH)
def exec_(
    command: list[str] = typer.Argument(..., help="The command, after --."),
    name: str = typer.Option(None, "--name", "-n", help="Run name."),
    data: list[str] = typer.Option([], "--data", "-d", help="An input to fingerprint (path or hf://NAME@REV); repeat."),
    seed: int = typer.Option(
        None, "--seed", help="Root seed in [0, 2**32) handed to the command as EXPKIT_SEED (drawn if absent)."
    ),
    group: str = typer.Option(None, "--group", help="Run group (shares a noise floor)."),
    deterministic: bool = typer.Option(
        False, "--deterministic", help="Set EXPKIT_DETERMINISTIC=1 and CUBLAS_WORKSPACE_CONFIG."
    ),
    full_hash: bool = typer.Option(
        False,
        "--full-hash",
        help="Hash every byte of --data (default: every byte up to 1 GiB, sampled blocks + size + mtime above).",
    ),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    json_out: bool = typer.Option(
        False, "--json", help="Print the result as JSON (the command's output goes to stderr)."
    ),
) -> None:
    """Run COMMAND as a recorded run: the seven records, output.log, exit code as status.

    Metrics: every stdout line that is a JSON object with an integer "step" is a metrics line, e.g.
    print(json.dumps({"step": 10, "loss": 2.31})); so is a Hugging Face Trainer log line
    ({'loss': '2.31', 'epoch': 0.5}; steps counted, and the record says so). NaN/Infinity are kept and
    a NaN loss marks the run DIVERGED. "[defaultN]:"/"[rankN]:" prefixes (torchrun --tee 3) tag lines
    with their rank; rank 0 owns the final metrics. A script that calls expkit.runs.start() (or uses the Trainer
    callback / Lightning logger) attaches to this run. Exits with the command's code.

    Examples:

      expkit runs exec --name baseline --data data/train.jsonl -- python train.py --lr 3e-4

      expkit runs exec --seed 1 --json -- python -c "print('{\\"step\\": 1, \\"loss\\": 0.5}')"
    """
    from expkit.render.runs import render_exec_result, tee_output
    from expkit.runs.execute import ExecRequest, execute, validate_seed

    if seed is not None:
        validate_seed(seed)  # before anything is recorded
    request = ExecRequest(
        tuple(command),
        store=store,
        name=name,
        data=tuple(data),
        seed=seed,
        group=group,
        deterministic=deterministic,
        full_hash=full_hash,
    )
    res = execute(request, on_output=tee_output(json_out))
    emit(res, json_out, human=render_exec_result)
    if res.exit_code:
        raise typer.Exit(res.shell_exit_code)


@app.command("ls")
def ls(
    where: list[str] = typer.Option([], "--where", "-w", help="Filter KEY=VALUE (also != > < >= <=); repeat."),
    limit: int = typer.Option(50, "--limit", help="At most this many runs, newest first (0: all)."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the listing as JSON."),
) -> None:
    """List runs, newest first; a running run whose process died shows as lost (final metrics from what
    reached disk), a diverged one as "finished DIVERGED", a broken run.json is named and the rest listed.

    KEY is status, name, seed, commit, dirty, group, kind, hostname, config.KEY or metric.KEY.

    Examples:

      expkit runs ls --where status=finished --where config.lr=0.001

      expkit runs ls --where "metric.loss<1.5" --json
    """
    from expkit.render.runs import render_listing
    from expkit.runs.store import list_runs

    listing = list_runs(store, where=where, limit=limit or None)
    emit(listing, json_out, human=render_listing)


@app.command("show")
def show(
    ref: str = typer.Argument(..., help="Run ID, unique ID prefix, or name."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print run.json."),
) -> None:
    """Show one run: status, the seven records, the final metrics.

    Examples:

      expkit runs show baseline

      expkit runs show 20260101-120000-ab12cd --json
    """
    from expkit.render.runs import render_run
    from expkit.runs.records import describe_run

    emit(describe_run(ref, store=store), json_out, human=render_run)


@app.command("diff")
def diff(
    a: str = typer.Argument(..., help="First run."),
    b: str = typer.Argument(..., help="Second run."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    top: int = typer.Option(20, "--top", help="Show at most this many differences."),
    json_out: bool = typer.Option(False, "--json", help="Print the diff as JSON."),
) -> None:
    """Compare two runs: the seven records side by side, metric changes, differences ranked by how
    likely they explain the change (config, packages, code, data, seed, hardware).

    Examples:

      expkit runs diff baseline new-lr

      expkit runs diff 20260101-120000-ab12cd 20260102-090000-cd34ef --json
    """
    from expkit.render.runs import render_diff
    from expkit.runs.diff import diff_runs

    emit(diff_runs(a, b, store=store), json_out, human=partial(render_diff, top=top))


@app.command("determinism", context_settings=_PASS_THROUGH)
def determinism(
    command: list[str] = typer.Argument(..., help="The command, after --; it must read EXPKIT_SEED."),
    seeds: int = typer.Option(5, "--seeds", help="Distinct seeds (the base seed also runs twice)."),
    base_seed: int = typer.Option(0, "--base-seed", help="First seed; the others follow it."),
    group: str = typer.Option(None, "--group", help="Group whose noise floor is stored (default determinism-<time>)."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Run COMMAND with the same seed twice and with other seeds under deterministic algorithms:
    bitwise identical or the max difference, the seed-to-seed std (stored as the group's noise floor),
    and the ops that have no deterministic implementation. Exit 1 when the same seed differs.

    Examples:

      expkit runs determinism --seeds 5 -- python train.py --steps 20

      expkit runs determinism --seeds 3 --group lr-sweep --json -- python train.py
    """
    from expkit.errors import CheckFailed
    from expkit.render.console import progress_steps
    from expkit.render.runs import render_determinism
    from expkit.runs.determinism import probe_command

    with progress_steps(seeds + 1, "determinism") as advance:
        rep = probe_command(
            list(command),
            seeds=seeds,
            base_seed=base_seed,
            store=store,
            group=group,
            on_run=lambda i, n: advance(f"run {i + 1}/{n}"),
        )
    emit(rep, json_out, human=render_determinism)
    if not rep.repeat_identical:
        raise CheckFailed("the same seed gave different results", hint="see the ops listed and the runs' output.log")


@app.command("repro")
def repro(
    ref: str = typer.Argument(..., help="Run to reproduce."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    keep: bool = typer.Option(False, "--keep-worktree", help="Keep the temporary git worktree."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check out the recorded commit in a temporary worktree, apply the patch, verify the data, re-run
    the command with the recorded seed: exact, within noise floor, or different (exit 1).

    Examples:

      expkit runs repro baseline

      expkit runs repro 20260101-120000-ab12cd --json
    """
    from expkit.errors import CheckFailed
    from expkit.render.runs import render_repro, tee_output
    from expkit.runs.repro import reproduce

    rep = reproduce(ref, store=store, keep_worktree=keep, on_output=tee_output(True))
    emit(rep, json_out, human=render_repro)
    if rep.verdict == "different":
        raise CheckFailed(f"the reproduction of {rep.original} is different", hint=rep.note)


@app.command("export")
def export(
    ids: list[str] = typer.Argument(None, help="Runs to export (default: all)."),
    mlflow: str = typer.Option(
        None,
        "--mlflow",
        help="MLflow tracking URI (http://host:5000, sqlite:///mlflow.db); "
        "checked first: an unreachable server is exit 2 within seconds.",
    ),
    tensorboard: Path = typer.Option(None, "--tensorboard", help="Directory for TensorBoard event files."),
    experiment: str = typer.Option("expkit", "--experiment", help="MLflow experiment name."),
    store: Path = typer.Option(None, "--store", help=_STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print what was exported as JSON."),
) -> None:
    """Export runs to an MLflow tracking server (params, metrics with steps, tags, artifacts) and/or
    TensorBoard event files.

    Examples:

      expkit runs export --mlflow http://127.0.0.1:5000

      expkit runs export baseline --tensorboard tb/ --json
    """
    from expkit.render.runs import render_exported
    from expkit.runs.export import export_runs

    batch = export_runs(ids or (), store=store, mlflow_uri=mlflow, tensorboard_dir=tensorboard, experiment=experiment)
    emit(batch, json_out, human=render_exported)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="runs")
