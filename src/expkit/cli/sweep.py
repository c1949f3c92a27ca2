"""``expkit sweep``: configs x seeds as recorded runs, on a local pool of processes, on Ray or on Slurm."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.flags import fields_as_flags
from expkit.cli.output import emit
from expkit.sweep.backends import backend_names

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
# the library names the fields of BackendSettings and SweepRequest; this command names the flags that set them
_FLAGS = {
    "address": "--address",
    "backend": "--backend",
    "max_parallel": "--max-parallel",
    "cpus_per_trial": "--cpus-per-trial",
    "gpus_per_trial": "--gpus-per-trial",
    "partition": "--partition",
    "time_limit": "--time",
    "max_retries": "--max-retries",
}


def sweep(
    command: list[str] = typer.Argument(None, help="The command to run per trial, after --."),
    grid: list[str] = typer.Option([], "--grid", "-g", help="KEY=V1,V2,... (repeat for more keys: the product)."),
    seeds: int = typer.Option(1, "--seeds", "-s", help="Seeds per config: 0..N-1, handed over as EXPKIT_SEED."),
    name: str = typer.Option(None, "--name", "-n", help="The sweep's group name (default sweep-<time>)."),
    backend: str = typer.Option(
        None,
        "--backend",
        help="Where trials run, a name in expkit.sweep.backends.BACKENDS: "
        + ", ".join(backend_names())
        + " (default local: processes here; with --resume, the backend and settings the sweep recorded).",
    ),
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
    gpus_per_trial: float = typer.Option(0.0, "--gpus-per-trial", help="GPUs per trial (Ray; Slurm: whole GPUs)."),
    partition: str = typer.Option(None, "--partition", help="Slurm partition (default: the cluster's default)."),
    time_limit: str = typer.Option(
        None,
        "--time",
        help="Slurm time limit per trial, as sbatch takes it (00:10:00; default 01:00:00). Near it the trial "
        "is stopped, requeued and started again with EXPKIT_RESUME_DIR = its previous run directory.",
    ),
    resume: str = typer.Option(None, "--resume", help="Continue the sweep of this group: run what did not finish."),
    no_config_args: bool = typer.Option(
        False,
        "--no-config-args",
        help="Pass the config only as EXPKIT_CONFIG_<KEY> environment variables, not as --config KEY=VALUE arguments.",
    ),
    store: Path = typer.Option(None, "--store", help="Run store directory (default $EXPKIT_STORE or ./runs)."),
    early_stop: str = typer.Option(
        None,
        "--early-stop",
        help="asha: stop a config at a rung when its seed-paired interval against the leader excludes it "
        "(its running trials cancelled, its other seeds not started; runs marked stopped with the decision).",
    ),
    rungs: str = typer.Option(
        None,
        "--rungs",
        help="Where --early-stop looks: logged steps 10,30,90 or seconds 5s,15s,45s (Ray Tune's "
        "grace_period x reduction_factor^k, written out).",
    ),
    stop_metric: str = typer.Option("loss", "--stop-metric", help="The logged metric --early-stop judges."),
    stop_mode: str = typer.Option("min", "--stop-mode", help="min or max: which way --stop-metric is better."),
    min_seeds: int = typer.Option(
        3, "--min-seeds", help="Seeds paired with the leader at a rung before the paired interval is used."
    ),
    stop_test: str = typer.Option(
        "paired-pooled-log",
        "--stop-test",
        help="How a config with fewer than --min-seeds pairs is judged. paired-pooled: by the interval of its "
        "seed-paired differences from the leader, their variance pooled over configs (>= 4 pooled df; else it "
        "waits); paired: not before it has --min-seeds pairs; pooled: its mean against the seed spread pooled "
        "over configs (not paired); paired-rcbd: every config by its paired differences, their variance from the "
        "config + seed fit over every config and seed at the rung (>= 4 df); -log: the same on log(metric), for a "
        "positive loss "
        "(benchmarks/bench_early_stop.py; docs/sweep.md has its figures on four recorded grids).",
    ),
    catch_up: bool = typer.Option(
        True,
        "--catch-up/--no-catch-up",
        help="Judge each seed's value at a rung projected to the end by how much the config's finished seeds "
        "still gained after that rung (a config with no finished seed is not stopped): curves that cross are "
        "not stopped on their early values. --no-catch-up judges the values at the rung as they are.",
    ),
    judge_finals: bool = typer.Option(
        True,
        "--finals/--no-finals",
        help="Also judge the finished seeds' final values, as one more rung after the last (the same test, no "
        "projection): a config whose finished seeds are already worse at the end than the leader's is stopped "
        "before its next seed starts.",
    ),
    start_order: str = typer.Option(
        "round-robin",
        "--start-order",
        help="round-robin: every config's first seed, then every config's second ..., the configs in a seeded "
        "shuffle recorded in the plan; grid: the grid's order, a config's seeds in a row.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the sweep result as JSON."),
) -> None:
    """Run COMMAND for every config of the grid and every seed, each trial a recorded run of one group.

    Each trial gets its config: placeholders {KEY} and {seed} in COMMAND are filled per trial (then nothing
    is appended); otherwise arguments `--config KEY=VALUE` are appended (as `expkit train charlm` takes them;
    --no-config-args drops them); always environment variables EXPKIT_CONFIG_<KEY> and EXPKIT_SEED.
    Locally each trial runs with OMP_NUM_THREADS = MKL_NUM_THREADS = --cpus-per-trial (1). A failed trial
    does not stop the others; a trial whose process is killed runs again (--max-retries); Ctrl-C stops the
    running trials (runs marked killed) and prints how to resume. With --early-stop asha --rungs, the
    sweep reads each trial's logged metrics and stops a config at a rung only when its interval against the
    leader, paired by seed, excludes it; `expkit compare` leaves stopped configs out and names them. Exit 0
    when every trial finished or was stopped early, 1 when some failed, 130 when interrupted.

    Examples:

      expkit sweep --grid lr_max=0.001,0.003 --seeds 4 --name lr -- expkit train charlm --minutes 0.1

      expkit sweep --grid lr=0.001,0.003 --seeds 4 --backend ray --address auto -- python train.py

      expkit sweep --grid lr=0.001,0.003 --seeds 4 -- python train.py --lr {lr} --seed {seed}

      expkit sweep -g lr=0.001,0.003 -s 4 --backend slurm --partition gpu --time 00:10:00 -- python train.py

      expkit sweep --grid lr=0.001,0.01,0.1 --seeds 4 --early-stop asha --rungs 10,30,90 -- python train.py

      expkit sweep --resume lr

    A resume runs on the backend and settings the sweep recorded (a conflicting --backend or setting is exit 2)
    and adopts the trials a killed driver left queued or running on Slurm instead of submitting them again.
    Trials start round-robin by seed, the configs in a seeded shuffle the plan file records.
    """
    from expkit.errors import UsageError
    from expkit.render.sweep import print_sweep_result, sweep_progress
    from expkit.sweep import plan_sweep, run_sweep
    from expkit.sweep.backends import BackendSettings
    from expkit.sweep.driver import SweepRequest
    from expkit.sweep.early_stop import STOP_TESTS, EarlyStopPolicy

    plan = None
    if resume is not None:
        if command or grid:
            raise UsageError("--resume takes the command and grid from the sweep's plan; give no command or --grid")
    elif not command:
        raise UsageError("no command given", hint="write it after --, e.g. expkit sweep --seeds 4 -- python train.py")
    else:
        _refuse_expkit_subcommand(list(command))
        plan = plan_sweep(
            list(command), group=name, grid=grid, seeds=seeds, config_args=not no_config_args, start=start_order
        )
    policy = None
    if early_stop is not None or rungs is not None:
        tests = tuple(STOP_TESTS)
        if early_stop != "asha" or rungs is None or stop_mode not in ("min", "max") or stop_test not in tests:
            raise UsageError(
                f"--early-stop {early_stop!r} --rungs {rungs!r} --stop-mode {stop_mode!r} --stop-test {stop_test!r}: "
                "give --early-stop asha with --rungs (steps 10,30,90 or seconds 5s,15s,45s), --stop-mode min or "
                "max, --stop-test " + " or ".join(tests)
            )
        policy = EarlyStopPolicy.from_text(
            rungs,
            metric=stop_metric,
            lower_is_better=stop_mode == "min",
            min_pairs=min_seeds,
            catch_up=catch_up,
            judge_finals=judge_finals,
            **STOP_TESTS[stop_test],
        )
    request = SweepRequest(
        plan=plan,
        resume=resume,
        store=store,
        backend=backend,
        settings=BackendSettings(
            max_parallel=max_parallel,
            address=address,
            cpus_per_trial=cpus_per_trial,
            gpus_per_trial=gpus_per_trial,
            partition=partition,
            time_limit=time_limit,
        ),
        max_retries=max_retries,
        early_stop=policy,
    )
    with (
        fields_as_flags(_FLAGS),
        sweep_progress(len(plan.trials) if plan is not None else 1, announce=not json_out) as update,
    ):
        res = run_sweep(request, on_progress=update)
    emit(res, json_out, human=print_sweep_result)
    res.raise_unless_complete()


def _refuse_expkit_subcommand(command: list[str]) -> None:
    """``expkit sweep compare kx`` runs ``compare`` as every trial's program: refuse a command whose program is
    one of expkit's own subcommand names and no program on PATH, and say what was probably meant."""
    import shutil

    from expkit.cli.app import app
    from expkit.errors import UsageError

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    program = command[0]
    if program in names and shutil.which(program) is None:
        raise UsageError(
            f"the trial command {' '.join(command)!r} starts with {program!r}, an expkit command, not a program",
            hint=f"to run it once: expkit {' '.join(command)}; to sweep it: expkit sweep ... -- expkit "
            + " ".join(command),
        )


def register(root: typer.Typer) -> None:
    root.command("sweep", context_settings=_PASS_THROUGH)(sweep)
