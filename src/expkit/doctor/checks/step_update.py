"""The optimizer step changes the weights: over the watched steps at least one parameter must move.
A step that moves nothing means lr 0, all-zero gradients or parameters that cannot change."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent


@register
class StepChangesWeights(Check):
    """Snapshot the parameters before ``step``, compare after; report at the end of the watch when no
    watched step of an optimizer changed any of its parameters (one step at lr 0 is a warm-up's start)."""

    name = "step_changes_nothing"
    reports: ClassVar[dict[str, str]] = {
        "step_made_weights_nonfinite": "optimizer.step() turned finite weights into inf/NaN from finite gradients.",
    }

    def __init__(self) -> None:
        self.before: dict[int, list[torch.Tensor]] = {}
        self.moved: dict[int, float] = {}
        self.where: dict[int, tuple[str | None, int | None]] = {}
        self.lrs: dict[int, list[float]] = {}
        self.names: dict[int, str] = {}
        self.graded: dict[int, bool] = {}  # id(optimizer) -> some parameter had a gradient after a watched step

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        from expkit.doctor.findings import user_frame

        key = id(ev.optimizer)
        self.before[key] = [p.detach().clone() for p in ev.params]
        self.where.setdefault(key, user_frame(3))
        self.lrs.setdefault(key, []).extend(float(g.get("lr", 0.0)) for g in ev.optimizer.param_groups)
        self.names[key] = type(ev.optimizer).__name__

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        key = id(ev.optimizer)
        before = self.before.pop(key, None)
        if before is None:
            return
        moved = max(
            (float((p.detach() - b).abs().max()) for p, b in zip(ev.params, before, strict=True) if p.numel()),
            default=0.0,
        )
        moved = moved if moved == moved else float("inf")  # NaN weights moved (another check names why)
        self.moved[key] = max(self.moved.get(key, 0.0), moved)
        self.graded[key] = self.graded.get(key, False) or any(p.grad is not None for p in ev.params)
        self._judge_finite(probe, ev, before)

    def _judge_finite(self, probe: Probe, ev: StepEvent, before: list[torch.Tensor]) -> None:
        """The step itself wrote inf/NaN: weights and gradients were finite before it, some weight is not after
        (Adam's default eps 1e-8 rounds to 0 on float16 weights). Names the optimizer's construction."""

        broke = [
            p
            for p, b in zip(ev.params, before, strict=True)
            if p.numel()
            and bool(torch.isfinite(b).all())
            and (p.grad is None or bool(torch.isfinite(p.grad).all()))
            and not bool(torch.isfinite(p.detach()).all())
        ]
        if not broke:
            return
        where = probe.built_at(ev.optimizer)
        dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in broke})
        probe.report(
            kind="bug",
            check="step_made_weights_nonfinite",
            message=f"{type(ev.optimizer).__name__}.step() turned finite weights into inf/NaN from finite gradients "
            f"({len(broke)} tensor(s), {', '.join(dtypes)}): the update itself overflowed or divided by zero",
            evidence={
                "tensors_made_nonfinite": len(broke),
                "dtypes": dtypes,
                "eps": ev.optimizer.param_groups[0].get("eps"),
                "lr": ev.optimizer.param_groups[0].get("lr"),
            },
            fix="keep float32 master weights (autocast + GradScaler) or raise eps for float16 weights (1e-8 is 0 in "
            "float16)",
            where=where if where[0] is not None else None,
        )

    def finish(self, probe: Probe) -> None:
        for key, moved in self.moved.items():
            if moved > 0:
                continue
            lrs = self.lrs.get(key, [])
            lr_zero = bool(lrs) and max(lrs) == 0.0
            cause = (
                "its learning rate was 0 at every watched step"
                if lr_zero
                else ("its gradients were zero/None or its parameters cannot change")
            )
            where = self.where.get(key)
            step_end = None if lr_zero or self.graded.get(key) else _training_step_end()
            if step_end is not None:  # Lightning skips backward when training_step returns no loss
                cause = "no gradient ever came in: Lightning's training_step returned no loss, so it ran no backward"
                where = step_end
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{self.names.get(key, 'the optimizer')}.step() changed no weight in the watched steps: "
                f"{cause}",
                evidence={"max_abs_weight_change": moved, "max_lr": max(lrs) if lrs else None},
                fix="check the lr schedule's first values (a warm-up that starts and stays at 0), that the loss "
                "depends on the parameters, and that the parameters handed to the optimizer are the model's",
                where=where,
            )


def _training_step_end() -> tuple[str, int] | None:
    """The last line of the running Lightning module's ``training_step`` (automatic optimization), where its
    ``return loss`` belongs; None without a fitting Trainer."""
    import inspect

    from expkit.doctor.checks.lr_schedule import lightning_module

    module = lightning_module()
    if module is None or not getattr(module, "automatic_optimization", False):
        return None
    try:
        fn = inspect.unwrap(type(module).training_step)
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn)
    except (OSError, TypeError):
        return None
    body = [i for i, text in enumerate(lines) if text.strip() and not text.strip().startswith("#")]
    return (file, first + body[-1]) if file and body else None
