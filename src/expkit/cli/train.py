"""``expkit train``: train the tiny char LM with the visible loop, sanity checks on, the run recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from expkit.cli.output import emit_json

app = typer.Typer(
    help="Train something small: the char LM, the visible loop, sanity checks, DDP via torchrun.", no_args_is_help=True
)


def _describe_check(check: Any) -> str:
    name = type(check).__name__
    if name == "FirstLossCheck":
        line = (
            f"first loss {check.first_loss:.3f} vs ln {check.vocab_size} = {check.ln_vocab:.3f} "
            f"({check.delta:+.3f}): {check.verdict}"
        )
        return line + (f" - {check.likely_cause}" if check.likely_cause else "")
    if name == "GradCheck":
        shown = ", ".join(check.parameters[:5]) + (" ..." if len(check.parameters) > 5 else "")
        return f"{check.name}: {check.verdict} - {check.detail}" + (f" ({shown})" if shown else "")
    return f"non-finite guard: {check.detail}"


@app.command("charlm")
def charlm(
    minutes: float = typer.Option(
        1.0,
        "--minutes",
        help="Time budget; the step count is fixed from a measured "
        "step time before step 1 (ignored when --config max_steps=N is given).",
    ),
    corpus: Path = typer.Option(
        None, "--corpus", help="A UTF-8 text file or directory (default: the Python standard library's own sources)."
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        envvar="EXPKIT_SEED",
        help="Seeds the init and the batch order (default $EXPKIT_SEED, as under a sweep, else 0).",
    ),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    config: list[str] = typer.Option(
        None,
        "--config",
        "-c",
        help="KEY=VALUE for any CharLMConfig or "
        "TrainConfig field (repeatable), e.g. lr_max=2e-3, check_first_loss=false.",
    ),
    resume: Path = typer.Option(None, "--resume", help="A checkpoint directory (or a run's checkpoints/) to continue."),
    store: Path = typer.Option(None, "--store", help="Run store directory (default $EXPKIT_STORE or ./runs)."),
    name: str = typer.Option(None, "--name", help="A name for the run record."),
    json_out: bool = typer.Option(False, "--json", help="Print the TrainResult as JSON."),
) -> None:
    """Train the ~840K-parameter char LM: sanity report, progress, validation PPL at start and end.

    The run is recorded in the run store (config, data fingerprint, metrics, schedule figure, checkpoint).
    Under `torchrun --nproc-per-node N` the same command runs DDP (gloo on CPU, NCCL on CUDA).
    Exit 1 when a sanity check failed (reported) or the NaN guard stopped training.

    Examples:

      expkit train charlm --minutes 1

      expkit train charlm --corpus notes.txt --config n_layer=2 --config max_steps=200 --json

      torchrun --nproc-per-node 2 -m expkit train charlm --config max_steps=50
    """
    from contextlib import ExitStack

    from expkit.errors import CheckFailed, require

    require("torch")  # the light install: one line naming the extra, before expkit.train imports torch
    from expkit.render.console import progress_steps
    from expkit.train import CharLMConfig, TrainConfig, apply_overrides, train_charlm

    if device not in ("cpu", "cuda"):
        from expkit.errors import UsageError

        raise UsageError(f"--device {device!r} is not cpu or cuda")
    mcfg, tcfg = apply_overrides(config or [], CharLMConfig(), TrainConfig())
    stack = ExitStack()
    advance: list[Any] = []

    def on_event(event: Any) -> None:
        if json_out:
            return
        v = event.values
        if event.kind == "planned":
            cal = v["calibration"]
            how = f"calibrated {cal.step_s * 1e3:.0f} ms/step for {cal.budget_s:.0f} s" if cal else "fixed"
            typer.echo(
                f"model: {v['params']:,} parameters; {event.max_steps - event.step} steps ({how}); "
                f"run {v['run_id'] or '(not recorded)'}"
            )
            if v["schedule_figure"]:
                typer.echo(f"lr schedule (drawn before step 1): {v['schedule_figure']}")
            li = tcfg.log_interval
            n_logs = len(
                {event.step, event.max_steps - 1} | {s for s in range(event.step, event.max_steps) if (s + 1) % li == 0}
            )
            advance.append(stack.enter_context(progress_steps(n_logs, "train")))
        elif event.kind == "check":
            typer.echo("check  " + _describe_check(v["check"]))
        elif event.kind == "eval":
            typer.echo(f"step {event.step:>5}  val loss {v['val_loss']:.4f}  val PPL {v['val_ppl']:.2f}")
        elif event.kind == "log" and advance:
            advance[0](
                f"step {event.step + 1}/{event.max_steps} loss {v['loss']:.3f} "
                f"lr {v['lr']:.2e} {v['tokens_per_s']:,.0f} tok/s"
            )

    from expkit.render.schedule import draw_lr_schedule

    with stack:
        result = train_charlm(
            model_config=mcfg,
            train_config=tcfg,
            corpus=corpus,
            seed=seed,
            device=device,
            minutes=minutes,
            resume=resume,
            store=store,
            name=name,
            draw_schedule=draw_lr_schedule,
            on_event=on_event,
        )
    failed = [c for c in result.checks if getattr(c, "verdict", None) == "fail"]
    import os

    if os.environ.get("RANK", "0") != "0":  # under torchrun, rank 0 reports
        return
    if json_out:
        emit_json(result)
    else:
        mfu = f"{100 * result.mfu:.1f}%" if result.mfu is not None else f"n/a ({result.mfu_reason})"
        typer.echo(
            f"val PPL {result.initial_val_ppl:.2f} -> {result.final_val_ppl:.2f} in {result.steps} steps, "
            f"{result.train_s:.1f} s of training ({result.tokens:,} tokens, {result.tokens_per_s:,.0f} tokens/s, "
            f"{result.world_size} process(es)); stopped by {result.stopped_by}"
        )
        typer.echo(f"MFU: {mfu}")
        if result.run_id:
            typer.echo(f"run {result.run_id}: {result.run_dir}")
        if result.checkpoint:
            typer.echo(f"checkpoint: {result.checkpoint}")
    if failed:
        raise CheckFailed(f"{len(failed)} sanity check(s) failed: " + "; ".join(_describe_check(c) for c in failed))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")
