"""``expkit why``: read a traceback from a log, a paste or standard input and say where to look and why."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json


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
    import sys

    from expkit.diagnose import diagnose_text, format_report
    from expkit.errors import InputError

    if source == "-":
        buf = getattr(sys.stdin, "buffer", None)  # bytes, so a log that is not UTF-8 cannot stop the read
        text = buf.read().decode("utf-8", errors="replace") if buf is not None else sys.stdin.read()
        where = "standard input"
    else:
        path = Path(source)
        if path.is_dir():
            raise InputError("is a directory, not a log file", path=path, hint="give the log or paste file")
        if not path.exists():
            raise InputError("no such file", path=path, hint="give a log file, or '-' to read standard input")
        text = path.read_text(encoding="utf-8", errors="replace")
        where = str(path)
    result = diagnose_text(text)
    if not result.found:
        raise InputError(
            f"no Python traceback found in {where} (nor an NCCL watchdog timeout)",
            hint="paste from the 'Traceback (most recent call last):' line to the error line",
        )
    if json_out:
        emit_json(result)
        return
    print(format_report(result.traceback, result.explanation))
    if result.explanation.kind == "out_of_memory":
        # the ledger's options (method, precision, checkpointing, sharding) live on `expkit mem`
        log = "crash.log" if source == "-" else source
        print(
            f"\nTo see which block overflowed and the remedies ranked by savings, reconcile it with the "
            f"memory ledger:\n  expkit mem MODEL [--seq N --batch N --method ... --gpu NAME] --oom {log}"
        )


def register(root: typer.Typer) -> None:
    root.command("why")(why)
