"""``expkit train``: train the tiny char LM with the visible loop, sanity checks on, the run recorded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from expkit.cli.output import emit

if TYPE_CHECKING:
    from expkit.train import CharLMConfig, TrainConfig

app = typer.Typer(
    help="Train something small: the char LM, the visible loop, sanity checks, DDP via torchrun.", no_args_is_help=True
)


# the library names its config keys ("config key lr_max=abc: ..."); the user typed --config
_CONFIG_PREFIXES = ("config key ", "config overrides ", "config override ")


def _apply_config_flags(config: list[str]) -> tuple[CharLMConfig, TrainConfig]:
    """``--config KEY=VALUE`` onto the default model and training configs; errors name the flag."""
    from expkit.errors import UsageError
    from expkit.train import CharLMConfig, TrainConfig, apply_overrides

    try:
        mcfg, tcfg = apply_overrides(config, CharLMConfig(), TrainConfig())
    except UsageError as exc:
        rest = next((exc.message.removeprefix(p) for p in _CONFIG_PREFIXES if exc.message.startswith(p)), exc.message)
        hint = exc.hint
        if hint and hint.startswith("e.g. "):
            hint = "e.g. --config " + hint.removeprefix("e.g. ")
        raise UsageError(f"--config {rest}", hint=hint) from None
    return mcfg, tcfg


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
    import os

    from expkit.errors import CheckFailed, UsageError, require

    require("torch")  # the light install: one line naming the extra, before expkit.train imports torch
    from expkit.render.schedule import draw_lr_schedule
    from expkit.render.training import TrainProgress, describe_check, render_train_result
    from expkit.train import TrainRequest, train_charlm

    if device not in ("cpu", "cuda"):
        raise UsageError(f"--device {device!r} is not cpu or cuda")
    mcfg, tcfg = _apply_config_flags(config or [])
    request = TrainRequest(
        model_config=mcfg,
        train_config=tcfg,
        corpus=corpus,
        seed=seed,
        device=device,
        minutes=minutes,
        resume=resume,
        store=store,
        name=name,
    )
    with TrainProgress(quiet=json_out) as progress:
        result = train_charlm(request, draw_schedule=draw_lr_schedule, on_event=progress)
    if os.environ.get("RANK", "0") != "0":  # under torchrun, rank 0 reports
        return
    emit(result, json_out, human=render_train_result)
    if result.failed_checks:
        raise CheckFailed(
            f"{len(result.failed_checks)} sanity check(s) failed: "
            + "; ".join(describe_check(c) for c in result.failed_checks)
        )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")
