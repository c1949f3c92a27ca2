"""``expkit sweep``: configs x seeds as recorded runs, on a local pool of processes or on Ray."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def sweep(
    command: list[str] = typer.Argument(None, help="The command to run per trial, after --."),
    grid: list[str] = typer.Option([], "--grid", "-g", help="KEY=V1,V2,... (repeat for more keys: the product)."),
    seeds: int = typer.Option(1, "--seeds", "-s", help="Seeds per config: 0..N-1, handed over as EXPKIT_SEED."),
    name: str = typer.Option(None, "--name", "-n", help="The sweep's group name (default sweep-<time>)."),
    backend: str = typer.Option("local", "--backend", help="local (processes here) or ray."),
    address: str = typer.Option(
        None,
        "--address",
        help="Ray cluster: auto or ray://head:10001 (default: a local "
        "Ray instance). The store must be on a filesystem every node mounts.",
    ),
    max_parallel: int = typer.Option(
        None, "--max-parallel", "-j", help="Trials at once (default CPUs // --cpus-per-trial)."
    ),
    max_retries: int = typer.Option(1, "--max-retries", help="Extra attempts for a trial whose process was killed."),
    cpus_per_trial: float = typer.Option(
        1.0,
        "--cpus-per-trial",
        help="CPUs per trial (Ray num_cpus; locally the trial's OMP_NUM_THREADS/MKL_NUM_THREADS).",
    ),
    gpus_per_trial: float = typer.Option(0.0, "--gpus-per-trial", help="GPUs per trial (Ray backend)."),
    resume: str = typer.Option(None, "--resume", help="Continue the sweep of this group: run what did not finish."),
    no_config_args: bool = typer.Option(
        False,
        "--no-config-args",
        help="Pass the config only as EXPKIT_CONFIG_<KEY> environment variables, not as --config KEY=VALUE arguments.",
    ),
    store: Path = typer.Option(None, "--store", help="Run store directory (default $EXPKIT_STORE or ./runs)."),
    json_out: bool = typer.Option(False, "--json", help="Print the sweep result as JSON."),
) -> None:
    """Run COMMAND for every config of the grid and every seed, each trial a recorded run of one group.

    Each trial gets its config twice: as arguments `--config KEY=VALUE` appended to COMMAND (as
    `expkit train charlm` takes them; --no-config-args drops them) and as environment variables
    EXPKIT_CONFIG_<KEY>; its seed as EXPKIT_SEED. Locally each trial runs with OMP_NUM_THREADS =
    MKL_NUM_THREADS = --cpus-per-trial (1). A failed trial does not stop the others; a trial whose process is
    killed runs again (--max-retries); Ctrl-C stops the running trials (runs marked killed) and prints how to
    resume. Exit 0 when every trial finished, 1 when some failed, 130 when interrupted.

    Examples:

      expkit sweep --grid lr_max=0.001,0.003 --seeds 4 --name lr -- expkit train charlm --minutes 0.1

      expkit sweep --grid lr=0.001,0.003 --seeds 4 --backend ray --address auto -- python train.py

      expkit sweep --resume lr
    """
    from datetime import datetime, timezone

    from expkit.errors import CheckFailed, UsageError
    from expkit.render.sweep import print_sweep_result, sweep_progress
    from expkit.sweep import plan_sweep, run_sweep

    plan = None
    if resume is not None:
        if command or grid:
            raise UsageError("--resume takes the command and grid from the sweep's plan; give no command or --grid")
    else:
        if not command:
            raise UsageError(
                "no command given", hint="write it after --, e.g. expkit sweep --seeds 4 -- python train.py"
            )
        group = name or "sweep-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        plan = plan_sweep(list(command), group=group, grid=grid, seeds=seeds, config_args=not no_config_args)
    n_total = len(plan.trials) if plan is not None else 0
    header_said: list[bool] = []

    def say_header(event: str) -> None:
        if not header_said and not json_out:
            typer.echo(f"sweep: {event}", err=True)
            header_said.append(True)

    with sweep_progress(n_total or 1) as update:

        def on_progress(p: object) -> None:
            say_header(p.event)  # type: ignore[attr-defined]
            update(p)

        res = run_sweep(
            plan,
            resume=resume,
            store=store,
            backend=backend,
            address=address,
            max_parallel=max_parallel,
            max_retries=max_retries,
            cpus_per_trial=cpus_per_trial,
            gpus_per_trial=gpus_per_trial,
            on_progress=on_progress,
        )
    if json_out:
        emit_json(res)
    else:
        print_sweep_result(res)
    if res.cancelled:
        typer.echo(
            f"interrupted: running trials were stopped and marked killed; resume with: {res.resume_command}", err=True
        )
        raise typer.Exit(130)
    bad = [o for o in res.outcomes if o.status not in ("finished", "done before")]
    if bad:
        kinds = ", ".join(sorted({o.status for o in bad}))
        raise CheckFailed(
            f"{len(bad)} of {res.n_trials} trials did not finish ({kinds})",
            hint=f"see each run's output.log; rerun the unfinished ones with: {res.resume_command}",
        )


def register(root: typer.Typer) -> None:
    root.command("sweep", context_settings=_PASS_THROUGH)(sweep)
