"""``expkit doctor``: run a training command unchanged and report the silent bugs of its first steps."""

from __future__ import annotations

import typer

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def doctor(
    command: list[str] = typer.Argument(..., help="The training command, after --."),
    steps: int = typer.Option(
        None, "--steps", help="Watch this many optimizer steps, then stop the program (default: watch 2, run on)."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 when there is any finding or no optimizer step was watched (3: a check broke)."
    ),
    max_wait: float = typer.Option(
        600.0,
        "--max-wait",
        help="Stop the program when this many seconds pass with no optimizer step during the watch (0: no limit).",
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the findings as JSON (the program's own stdout goes to stderr)."
    ),
) -> None:
    """Run COMMAND with PyTorch hooked from outside (nothing to edit), watch its first optimizer steps and
    report each silent bug: what is wrong, your file and line, the measured evidence and the fix.

    Checks: zero_grad missing or between backward and step; parameters that get no gradient, sit in no
    optimizer or get NaN/inf; a step that changes no weight; softmax before cross_entropy (and sigmoid
    before BCE-with-logits, logits into nll_loss); the first loss far above ln(classes); evaluation that
    keeps its graph, evaluation in train mode, training in eval mode; the same batch every step; labels
    not shifted, or shifted twice; padding in the loss, the eos or the answer masked, nothing trained; a
    label column (or the one-hot label) in the features; gradient accumulation without dividing the loss; a
    per-step lr schedule not stepped per step; clip_grad_norm_ before GradScaler's unscale_; a
    DistributedSampler without set_epoch; .item() syncs on a GPU (a performance finding).

    Exit codes: the program's own code when it failed (a crash before its first step included), whatever
    the findings; 1 when no optimizer step came within --max-wait seconds (doctor stops the program), or
    with --strict on any finding or when no step was watched; 3 when doctor itself failed (with --strict,
    a check that broke); else 0. Under `expkit runs exec` the findings are also written to the run
    directory's doctor.json.

    Examples:

      expkit doctor -- python train.py --lr 3e-4

      expkit doctor --steps 2 --strict --json -- torchrun --nproc-per-node 2 train.py

      expkit doctor --max-wait 120 -- python slow_start.py
    """
    from expkit.cli.flags import fields_as_flags
    from expkit.cli.output import emit
    from expkit.doctor.runner import DEFAULT_WATCH_STEPS, DoctorRequest, doctor_exit_code, run_doctor
    from expkit.render.doctor import render_doctor

    request = DoctorRequest(
        command=tuple(command),
        watch_steps=DEFAULT_WATCH_STEPS if steps is None else steps,
        stop_after_watch=steps is not None,
        stdout_to_stderr=json_out,
        max_wait_s=max_wait,
    )
    with fields_as_flags({"watch_steps": "--steps", "max_wait_s": "--max-wait"}):
        result = run_doctor(request)
    emit(result, json_out, human=render_doctor)
    code = doctor_exit_code(result, strict=strict)
    if code:
        raise typer.Exit(code)


def register(root: typer.Typer) -> None:
    root.command("doctor", context_settings=_PASS_THROUGH)(doctor)
