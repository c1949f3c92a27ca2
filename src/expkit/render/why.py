"""``expkit why`` on the console: the traceback report and, for an out-of-memory error, where to go next."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.diagnose.diagnosis import Diagnosis

__all__ = ["render_diagnosis"]


def render_diagnosis(d: Diagnosis, *, log_name: str) -> None:
    """The frames bottom-up, the place to look and the explanation; after an OOM, the `expkit mem --oom`
    command that reconciles it with the memory ledger (reading ``log_name``)."""
    from expkit.diagnose.report import format_report

    print(format_report(d.traceback, d.explanation))
    if d.explanation.kind == "out_of_memory":
        # the ledger's options (method, precision, checkpointing, sharding) live on `expkit mem`
        print(
            f"\nTo see which block overflowed and the remedies ranked by savings, reconcile it with the "
            f"memory ledger:\n  expkit mem MODEL [--seq N --batch N --method ... --gpu NAME] --oom {log_name}"
        )
