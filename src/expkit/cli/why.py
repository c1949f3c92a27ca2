"""``expkit why``: read a traceback from a log, a paste or standard input and say where to look and why."""

from __future__ import annotations

import typer

from expkit.cli.output import emit


def why(
    source: str = typer.Argument("-", metavar="FILE|-", help="A log or pasted traceback; '-' (default) reads stdin."),
    json_out: bool = typer.Option(
        False, "--json", help="Print the parsed frames, chosen frame and explanation as JSON."
    ),
) -> None:
    """Read a Python traceback bottom-up: mark the last frame in your own files, collapse framework
    frames, and explain the PyTorch errors people hit most (shapes, devices, dtypes, CUDA OOM with
    requested/free/reserved and the phase, autograd, DataLoader pickling, batches of unequal length
    from a collator, Hugging Face Trainer errors) and NCCL watchdog timeouts (no traceback needed).

    Real logs work as they are: per-line timestamps, logger prefixes (INFO:root:, [INFO|trainer.py:..],
    glog headers), [rankN]: prefixes and ANSI colours are stripped before parsing, and nothing from the
    log is echoed to the terminal as a control sequence. Handles chained exceptions, DataLoader worker
    tracebacks and torchrun output (the first failing rank is shown, identical ranks are listed once).
    Exit 2 when the text holds neither a traceback nor an NCCL timeout.

    Examples:

      python train.py 2>&1 | tail -50 | expkit why

      expkit why crash.log --json

      torchrun --nproc-per-node 2 train.py 2> ranks.log; expkit why ranks.log

      kubectl logs trainer-0 --timestamps | expkit why     # NCCL watchdog timeouts too
    """
    from expkit.diagnose import diagnose_source
    from expkit.render.why import render_diagnosis

    log = "crash.log" if source == "-" else source  # what the OOM hint's `expkit mem --oom` should read
    emit(diagnose_source(source), json_out, human=lambda d: render_diagnosis(d, log_name=log))


def register(root: typer.Typer) -> None:
    root.command("why")(why)
