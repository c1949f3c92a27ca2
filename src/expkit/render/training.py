"""``expkit train charlm`` for a person: progress events as lines and a bar while it trains, then the result.

Typed against ``expkit.train``'s events and ``TrainResult`` (imported for the type checker only: importing
``expkit.train`` imports torch).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from expkit.render.console import progress_steps

if TYPE_CHECKING:
    from collections.abc import Callable

    from expkit.train.events import TrainEvent
    from expkit.train.sanity import FirstLossCheck, GradCheck, NonFiniteCheck
    from expkit.train.training import TrainResult

__all__ = ["TrainProgress", "describe_check", "render_train_result"]


def describe_check(check: FirstLossCheck | GradCheck | NonFiniteCheck) -> str:
    """One line per sanity check: what was measured against what, and the verdict."""
    from expkit.train.sanity import FirstLossCheck, GradCheck

    if isinstance(check, FirstLossCheck):
        line = (
            f"first loss {check.first_loss:.3f} vs ln {check.vocab_size} = {check.ln_vocab:.3f} "
            f"({check.delta:+.3f}): {check.verdict}"
        )
        return line + (f" - {check.likely_cause}" if check.likely_cause else "")
    if isinstance(check, GradCheck):
        shown = ", ".join(check.parameters[:5]) + (" ..." if len(check.parameters) > 5 else "")
        return f"{check.name}: {check.verdict} - {check.detail}" + (f" ({shown})" if shown else "")
    return f"non-finite guard: {check.detail}"


class TrainProgress:
    """The ``on_event`` of a person watching: the plan, each check and eval as a line, and a progress bar
    over the log steps (on stderr; plain lines in a pipe). ``quiet`` shows nothing (``--json``).

    Use as a context manager around the training call: the bar is closed on the way out.
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet
        self._stack = ExitStack()
        self._advance: Callable[[str], None] | None = None

    def __enter__(self) -> TrainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def __call__(self, event: TrainEvent) -> None:
        from expkit.train.events import CheckReported, Evaluated, RunPlanned, StepLogged

        if self.quiet:
            return
        if isinstance(event, RunPlanned):
            cal = event.calibration
            how = f"calibrated {cal.step_s * 1e3:.0f} ms/step for {cal.budget_s:.0f} s" if cal else "fixed"
            print(
                f"model: {event.params:,} parameters; {event.max_steps - event.start_step} steps ({how}); "
                f"run {event.run_id or '(not recorded)'}"
            )
            if event.schedule_figure:
                print(f"lr schedule (drawn before step 1): {event.schedule_figure}")
            self._advance = self._stack.enter_context(progress_steps(event.log_steps, "train"))
        elif isinstance(event, CheckReported):
            print("check  " + describe_check(event.check))
        elif isinstance(event, Evaluated):
            print(f"step {event.step:>5}  val loss {event.val_loss:.4f}  val PPL {event.val_ppl:.2f}")
        elif isinstance(event, StepLogged) and self._advance is not None:
            self._advance(
                f"step {event.step + 1}/{event.max_steps} loss {event.loss:.3f} "
                f"lr {event.lr:.2e} {event.tokens_per_s:,.0f} tok/s"
            )


def render_train_result(result: TrainResult) -> None:
    """The closing lines: val PPL before and after, throughput, MFU (or why not), the run and checkpoint."""
    mfu = f"{100 * result.mfu:.1f}%" if result.mfu is not None else f"n/a ({result.mfu_reason})"
    print(
        f"val PPL {result.initial_val_ppl:.2f} -> {result.final_val_ppl:.2f} in {result.steps} steps, "
        f"{result.train_s:.1f} s of training ({result.tokens:,} tokens, {result.tokens_per_s:,.0f} tokens/s, "
        f"{result.world_size} process(es)); stopped by {result.stopped_by}"
    )
    print(f"MFU: {mfu}")
    if result.run_id:
        print(f"run {result.run_id}: {result.run_dir}")
    if result.checkpoint:
        print(f"checkpoint: {result.checkpoint}")
