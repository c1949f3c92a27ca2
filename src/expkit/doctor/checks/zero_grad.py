"""``zero_grad`` placement: gradients carried into the next step (missing ``zero_grad``: they grow step
over step, C3.2) and gradients cleared between ``backward`` and ``step`` (the step sees zeros)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, Probe, StepEvent


def _grad_norm(params: list[torch.Tensor]) -> float:
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0


# relative residual of the step's gradient after removing what this window's backwards brought in:
# ~1e-7 (float32 summation order) when the gradient was cleared, the old gradient's share when it was not
STALE_RESIDUAL = 1e-3


def _flat(tensors: list[torch.Tensor | None], like: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat(
        [
            (t if t is not None else torch.zeros_like(p)).detach().reshape(-1).double()
            for t, p in zip(tensors, like, strict=True)
        ]
    )


@register
class MissingZeroGrad(Check):
    """Gradients the optimizer steps on must come only from the backwards since its last step.

    From an optimizer's first step on, a tensor hook on each of its parameters sums the gradient every
    backward brings in since the later of the last step and the last time the gradient was cleared
    (``g_in``). At the next step the gradient ``g`` is compared with ``g_in``: after a
    ``zero_grad`` it is ``c * g_in`` (c = 1, or GradScaler's unscale, or clipping's factor); without one it
    also holds the previous step's gradient, and the residual ``|g - c g_in| / |g|`` is large. Works with
    several optimizers (a GAN), gradient accumulation and clipping; gradients ``torch.autograd.grad`` takes of the
    parameters (MAML's inner loop) are not counted, as they never reach ``.grad``; skipped under DDP (the all-reduce
    changes ``g`` after the hooks), for closure optimizers (their backward runs inside ``step``) and after a
    ``clip_grad_value_`` (element-wise clipping: ``g`` is not a multiple of ``g_in``).
    """

    name = "missing_zero_grad"

    def __init__(self) -> None:
        self.incoming: dict[int, list[torch.Tensor | None]] = {}
        self.handles: list[Any] = []
        self.where: tuple[str | None, int | None] | None = None
        self.clock = 0
        self.clears: list[tuple[int, int, tuple[str | None, int | None]]] = []  # (clock, id(optimizer), site)
        self.fed_at: dict[int, tuple[int, tuple[str | None, int | None]]] = {}  # id(opt) -> last backward into it
        self.backward: tuple[int, tuple[str | None, int | None]] | None = None  # the running backward
        self.value_clipped = False  # clip_grad_value_ ran in this window
        self.probe: Probe | None = None

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "clip_grad_value_":
            self.value_clipped = True  # element-wise clipping: the step's gradient is not a multiple of g_in
        if ev.name == "optimizer.zero_grad" and ev.obj is not None:
            from expkit.doctor.findings import user_frame

            self.clock += 1
            self.clears.append((self.clock, id(ev.obj), user_frame(3)))

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        key = id(ev.optimizer)
        self.fed_at.pop(key, None)
        self.value_clipped = False
        if key in self.incoming:
            self.incoming[key][:] = [None] * len(ev.params)  # a new window starts at each step
            return
        if _distributed():
            return
        self.probe = probe
        self.incoming[key] = [None] * len(ev.params)
        for i, p in enumerate(ev.params):
            if p.requires_grad:
                self.handles.append(p.register_hook(self._make_hook(key, i, p)))

    def _make_hook(self, key: int, i: int, param: torch.Tensor) -> Any:
        def hook(grad: torch.Tensor) -> None:
            # called before autograd adds ``grad`` into param.grad: a None/zero param.grad means it was cleared;
            # under torch.autograd.grad (MAML's inner loop, a gradient penalty) nothing is added to .grad
            if self.probe is not None and self.probe.call_running("autograd_grad"):
                return
            sums = self.incoming[key]
            if self.backward is not None:  # the latest backward that brought gradient to this optimizer
                self.fed_at[key] = self.backward
            prev, acc = param.grad, sums[i]
            cleared = prev is None or not bool(torch.any(prev != 0))
            sums[i] = grad.detach().clone() if cleared or acc is None else acc + grad.detach()

        return hook

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        from expkit.doctor.findings import user_frame

        self.clock += 1
        self.backward = (self.clock, user_frame(3))
        if ev.first_after_step and self.where is None:
            self.where = self.backward[1]

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        sums = self.incoming.get(id(ev.optimizer))
        if not sums or all(s is None for s in sums) or self.value_clipped:
            return
        live = [p for p, s in zip(ev.params, sums, strict=True) if s is not None and p.grad is not None]
        if not live:
            return  # every gradient was cleared before the step: zero_grad_before_step names that
        g = _flat([p.grad for p in live], live)
        g_in = _flat([s for p, s in zip(ev.params, sums, strict=True) if s is not None and p.grad is not None], live)
        denom = float(g_in @ g_in)
        if denom == 0 or float(g.norm()) == 0:
            return
        c = float(g @ g_in) / denom
        residual = float((g - c * g_in).norm() / g.norm())
        if residual > STALE_RESIDUAL:
            probe.report(
                kind="bug",
                check=self.name,
                message=(
                    f"the gradient this step used is not the one its backward computed: {residual:.0%} of its norm "
                    "is left over from the previous step. zero_grad is missing, so gradients add up step over step"
                ),
                evidence={
                    "stale_fraction_of_grad_norm": residual,
                    "grad_norm": float(g.norm()),
                    "grad_norm_from_this_window": float(g_in.norm()),
                    "params": len(live),
                },
                fix="call optimizer.zero_grad(set_to_none=True) once per step, after optimizer.step() "
                "(or before loss.backward()); with gradient accumulation, after the step that ends the window",
                where=self._where(ev.optimizer),
            )

    def _where(self, optimizer: Any) -> tuple[str | None, int | None] | None:
        """The optimizer's zero_grad() call when it has one (it ran, but not between these steps: outside the
        step loop). With none: another optimizer's zero_grad() called from two lines, the one last called before
        the last backward that brought this optimizer's gradients in (the call meant for this one, made on the
        wrong optimizer); else that backward; else the first backward after a step."""
        cleared = next((site for _, opt, site in reversed(self.clears) if opt == id(optimizer)), None)
        if cleared is not None and cleared[0] is not None:
            return cleared
        fed = self.fed_at.get(id(optimizer))
        if fed is None:
            return self.where
        lines: dict[int, set[Any]] = {}
        for _, opt, site in self.clears:
            lines.setdefault(opt, set()).add(site)
        before = [(c, site) for c, opt, site in self.clears if c < fed[0] and len(lines[opt]) >= 2 and site[0]]
        if before:
            return max(before, key=lambda x: x[0])[1]
        return fed[1] if fed[1][0] is not None else self.where

    def finish(self, probe: Probe) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []


def _distributed() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1)


@register
class ZeroGradBeforeStep(Check):
    """At ``optimizer.step()`` after a backward, some gradient must be non-zero; all zeros (or None) means
    the gradients were cleared between ``backward`` and ``step``."""

    name = "zero_grad_before_step"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if probe.backwards_since_step == 0:  # a closure (LBFGS, Lightning) runs its backward inside step
            return
        trainable = [p for p in ev.params if p.requires_grad]
        if not trainable or any(p.grad is not None and bool(torch.any(p.grad != 0)) for p in trainable):
            return
        nones = sum(p.grad is None for p in trainable)
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"optimizer.step() ran after {probe.backwards_since_step} backward call(s) but every gradient of "
                f"its {len(trainable)} parameters is zero or None: the gradients were cleared between "
                "backward and step (or the loss does not depend on these parameters)"
            ),
            evidence={
                "backward_calls_since_last_step": probe.backwards_since_step,
                "params": len(trainable),
                "params_grad_none": nones,
                "grad_norm": 0.0,
            },
            fix="order the step as zero_grad -> forward -> backward -> step; never zero_grad between backward and step",
        )
