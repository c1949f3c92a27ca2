"""``expkit doctor``: run a training command unchanged and report the silent bugs of its first steps."""

from __future__ import annotations

import typer

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def doctor(
    command: list[str] = typer.Argument(None, help="The training command, after --."),
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
    list_checks: bool = typer.Option(
        False, "--list-checks", help="List every check (name and what it finds) and exit; with --json as JSON."
    ),
) -> None:
    """Run COMMAND with PyTorch hooked from outside (nothing to edit), watch its first optimizer steps and
    report each silent bug: what is wrong, your file and line, the measured evidence and the fix.

    Checks (`expkit doctor --list-checks` lists all of them): the gradient path (parameters or tensors that get no
    gradient, a no_grad or detach between them and the loss, gradients that never reach an optimizer or are NaN/inf,
    fp16 gradients that underflow, a module that never runs); the optimizers (zero_grad missing or misplaced or
    clearing an accumulation window, a step that changes nothing or is rounded away in bf16, parameters listed twice
    or in no optimizer, an optimizer that never steps, weights changed outside a step, clipping before unscale_ or
    after step); the losses (probabilities into a logit loss, shapes that broadcast, softmax over the batch axis, a
    bounded output against targets it cannot reach, the first loss far above ln(classes), a real class as
    ignore_index, a DDP loss divided by the world size, a target that carries gradient into a jointly trained
    teacher, a policy gradient whose advantage trains the critic, a term that adds to the loss but carries no
    gradient or trains nothing that steps, a batch's total spread back onto each sample, a loss with no minimum in
    learned weights); the model (a checkpoint loaded with strict=False that filled nothing, one block repeated in a
    ModuleList, a view that reorders axes, no position information, a float attention mask of ones, frozen BatchNorm
    statistics that still move); the data (the same batch every step, one class per batch, a batch of repeated
    samples, samples mixed within a batch, a label column in the features, padding that changes the output, labels
    not shifted, a model that sees future tokens, the loss mask, per-pixel targets of one class, a label map resized
    bilinear); the schedule (not stepped, stepped before the optimizer, zero from some step on, a cosine period in
    epochs stepped per batch, never reaching its set value, left on a rebuilt optimizer, param groups' rates
    collapsed to one, a rate written after the first update, a plateau mode against its metric, norms decayed
    unevenly); modes (evaluation keeping its graph or in train mode, training in eval mode, a peft adapter in
    inference mode); graphs kept across steps; DDP ranks out of sync (weights, gradients, learning rates), fed the
    same batch or overlapping shards, or gradients all-reduced again; a DistributedSampler without set_epoch; a LoRA
    target that names no module; a column the HF Trainer dropped that compute_loss asks for; CTC targets that hold
    the blank; .item() syncs. Run on past the watch (no --steps), doctor still finds a model left in eval() by a
    later validation and an optimizer rebuilt every epoch, and watches an optimizer built later (a fine-tuning
    phase) from its first steps.

    Exit codes: the program's own code when it failed (a crash before its first step included), whatever
    the findings; 1 when no optimizer step came within --max-wait seconds (doctor stops the program), or
    with --strict on any finding or when no step was watched; 3 when doctor itself failed (with --strict,
    a check that broke); else 0. Under `expkit runs exec` the findings are also written to the run
    directory's doctor.json.

    Examples:

      expkit doctor -- python train.py --lr 3e-4

      expkit doctor --steps 2 --strict --json -- torchrun --nproc-per-node 2 train.py

      expkit doctor --max-wait 120 -- python slow_start.py

      expkit doctor --list-checks
    """
    from expkit.cli.flags import fields_as_flags
    from expkit.cli.output import emit
    from expkit.doctor.runner import DEFAULT_WATCH_STEPS, DoctorRequest, doctor_exit_code, run_doctor
    from expkit.render.doctor import render_checks, render_doctor

    if list_checks:
        from expkit.doctor.checks import describe_checks

        emit(describe_checks(), json_out, human=render_checks)
        return
    if not command:
        from expkit.errors import UsageError

        raise UsageError(
            "no command given", hint="write the training command after --: expkit doctor -- python train.py"
        )
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
