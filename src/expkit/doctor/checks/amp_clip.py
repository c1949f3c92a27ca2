"""AMP gradient clipping before ``GradScaler.unscale_``: the gradients are still multiplied by the loss
scale (65536 at the start), so ``clip_grad_norm_`` compares a scaled norm with ``max_norm`` and clips every
step to a tiny fraction of the intended gradient."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, Probe, StepEvent


def _max_norm(ev: CallEvent) -> Any:
    return ev.args[1] if len(ev.args) > 1 else ev.kwargs.get("max_norm")


@register
class ClipBeforeUnscale(Check):
    """Between two optimizer steps: ``scaler.scale(loss)`` with an enabled scaler, then ``clip_grad_norm_``
    before any ``scaler.unscale_``. GradScaler's documented order is scale -> backward -> unscale_ -> clip ->
    step (https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)."""

    name = "clip_before_unscale"

    def __init__(self) -> None:
        self.scale: float | None = None  # the loss scale of the last scaler.scale() in this step window
        self.unscaled = False

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "scaler.scale" and ev.obj is not None and ev.obj.is_enabled():
            self.scale = float(ev.obj.get_scale())
        elif ev.name == "scaler.unscale_":
            self.unscaled = True
        elif ev.name == "clip_grad_value_" and self.scale is not None and not self.unscaled and self.scale != 1.0:
            clip = ev.args[1] if len(ev.args) > 1 else ev.kwargs.get("clip_value")
            probe.report(
                kind="bug",
                check=self.name,
                message=f"clip_grad_value_ ran on gradients still multiplied by GradScaler's loss scale "
                f"({self.scale:g}): after the unscale every gradient value is at most clip_value / scale "
                f"({float(clip) / self.scale:.3g}), a tiny fraction of the intended bound"
                if clip is not None
                else "clip_grad_value_ ran on gradients still multiplied by GradScaler's loss scale",
                evidence={"loss_scale": self.scale, "clip_value": float(clip) if clip is not None else None},
                fix="call scaler.unscale_(optimizer) after backward and before clip_grad_value_ "
                "(then scaler.step(optimizer); scaler.update())",
            )
        elif ev.name == "clip_grad_norm_" and self.scale is not None and not self.unscaled and self.scale != 1.0:
            norm = float(ev.result) if ev.result is not None else float("nan")
            max_norm = _max_norm(ev)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"clip_grad_norm_ ran on gradients still multiplied by GradScaler's loss scale "
                f"({self.scale:g}): the norm it measured ({norm:.4g}) is the scale times the real one "
                f"({norm / self.scale:.4g}), so it clips the update far below max_norm",
                evidence={
                    "loss_scale": self.scale,
                    "measured_grad_norm": norm,
                    "unscaled_grad_norm": norm / self.scale,
                    "max_norm": float(max_norm) if max_norm is not None else None,
                },
                fix="call scaler.unscale_(optimizer) after backward and before clip_grad_norm_ "
                "(then scaler.step(optimizer); scaler.update())",
            )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.scale, self.unscaled = None, False
