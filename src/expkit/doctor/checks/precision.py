"""Low-precision weights stepped on directly: parameters stored in bfloat16 or float16 (``model.to(torch.bfloat16)``,
``.half()``) that a torch optimizer updates with no float32 master copy. An update below half a unit in the last
place rounds back to the old value, and one of about one unit is mostly rounding error: the weights barely learn
while the loop runs normally."""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import Probe, StepEvent

LOW = {torch.bfloat16: 7, torch.float16: 10}  # dtype -> explicit mantissa bits
SAMPLE = 4096  # elements sampled per parameter tensor
ROUNDED_SHARE = 0.5  # share of elements (non-zero gradient) the step left unchanged or moved by one ulp at most
MIN_UNCHANGED = 0.1  # ... of which this share did not move at all: some updates really were rounded away
MIN_ELEMENTS = 64


def _sample(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().reshape(-1)
    stride = max(1, flat.numel() // SAMPLE)
    return flat[::stride][:SAMPLE].clone()


def _lr(group: dict[str, Any]) -> float | None:
    lr = group.get("lr")
    if isinstance(lr, torch.Tensor) and lr.numel() == 1:
        return float(lr)
    return float(lr) if isinstance(lr, (int, float)) else None


def _judged(opt: torch.optim.Optimizer, group: dict[str, Any]) -> bool:
    """Groups whose step must move the weights: a torch optimizer, lr > 0 and not far below its schedule's base
    (a warm-up start), plain SGD without momentum (its first steps are smaller than its later ones)."""
    if not type(opt).__module__.startswith("torch.optim"):
        return False
    lr = _lr(group)
    if lr is None or not lr > 0 or not math.isfinite(lr):
        return False
    base = group.get("initial_lr")
    if isinstance(base, (int, float)) and lr < 0.5 * float(base):
        return False
    return not (isinstance(opt, torch.optim.SGD) and float(group.get("momentum", 0) or 0) > 0)


@register
class UpdatesRoundedAway(Check):
    """Parameters stored in bfloat16/float16 that a torch optimizer steps on directly: the step left most elements
    with a non-zero gradient unchanged or moved by a single unit in the last place (the update is below the
    format's resolution and was rounded away).

    Before each watched step a sample of every low-precision parameter (and its gradient) is kept; after it, among
    the elements whose gradient is non-zero and whose value is not zero, the share that did not move or moved by
    exactly one ulp of their old value is measured over the optimizer's low-precision parameters. Reported above
    50 % (with at least 10 % unchanged), at the line that cast the parameters to low precision (the last
    ``.to``/``.half``/``.bfloat16``/``.type`` of a module that made its parameters bf16/fp16 while the probe was
    armed), else at the optimizer's construction.
    Float32 parameters (autocast, master weights), lr 0 or warm-up starts, SGD with momentum and optimizers that
    are not torch's are not judged.
    """

    name = "updates_rounded_away"

    def __init__(self) -> None:
        self.cast_sites: dict[int, RawStack] = {}  # id(param) -> the call that made it low precision
        self.depth = 0
        self.before: dict[int, list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = {}
        self.reported: set[int] = set()

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def cast(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
                if not probe.active or check.depth > 0:
                    return original(module, *args, **kwargs)
                check.depth += 1
                try:
                    old = {id(p): p.dtype for p in module.parameters()}
                    out = original(module, *args, **kwargs)
                finally:
                    check.depth -= 1
                with contextlib.suppress(Exception):  # bookkeeping must never break the user's cast
                    check._note_cast(out if isinstance(out, nn.Module) else module, old)
                return out

            cast.__wrapped__ = original  # type: ignore[attr-defined]
            return cast

        for name in ("to", "half", "bfloat16", "type"):
            probe.patch(nn.Module, name, make)

    def _note_cast(self, module: nn.Module, old: dict[int, torch.dtype]) -> None:
        site: RawStack | None = None
        for p in module.parameters():
            if p.dtype in LOW and old.get(id(p)) not in LOW:
                site = site or raw_stack(2)
                self.cast_sites[id(p)] = site

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        opt = ev.optimizer
        if id(opt) in self.reported:
            return
        kept = []
        for group in opt.param_groups:
            if not _judged(opt, group):
                continue
            for p in group["params"]:
                grad = p.grad
                if p.dtype in LOW and grad is not None and grad.layout == torch.strided and grad.shape == p.shape:
                    with contextlib.suppress(Exception):  # a tensor subclass that cannot be sampled: not judged
                        kept.append((p, _sample(p), _sample(grad)))
        if kept:
            self.before[id(opt)] = kept

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        kept = self.before.pop(id(ev.optimizer), None)
        if not kept:
            return
        counted = rounded = unchanged = 0
        for p, old, grad in kept:
            new = _sample(p).float()
            old32 = old.float()
            live = (grad != 0) & (old32 != 0) & torch.isfinite(old32)
            n = int(live.sum())
            if n == 0:
                continue
            _, exp = torch.frexp(old32[live])
            ulp = torch.ldexp(torch.ones_like(old32[live]), exp - 1 - LOW[p.dtype])
            moved = (new[live] - old32[live]).abs()
            counted += n
            unchanged += int((moved == 0).sum())
            rounded += int((moved <= ulp).sum())
        if counted < MIN_ELEMENTS or rounded / counted <= ROUNDED_SHARE or unchanged / counted < MIN_UNCHANGED:
            return
        self.reported.add(id(ev.optimizer))
        dtypes = sorted({str(p.dtype).removeprefix("torch.") for p, _, _ in kept})
        sites = [self.cast_sites[id(p)] for p, _, _ in kept if id(p) in self.cast_sites]
        where = user_line_of(sites[-1]) if sites else (None, None)
        if where[0] is None:
            where = probe.built_at(ev.optimizer)
        lrs = sorted({lr for g in ev.optimizer.param_groups if (lr := _lr(g)) is not None})
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"the optimizer steps on {'/'.join(dtypes)} weights with no float32 master copy: for "
                f"{rounded / counted:.0%} of the elements with a non-zero gradient the update is at or below the "
                f"format's resolution ({unchanged / counted:.0%} unchanged, rounded away; "
                f"{(rounded - unchanged) / counted:.0%} moved by a single unit in the last place, mostly rounding "
                "error): the weights barely learn"
            ),
            evidence={
                "share_unchanged": unchanged / counted,
                "share_within_one_ulp": rounded / counted,
                "elements_sampled": counted,
                "param_dtype": "/".join(dtypes),
                "lr": lrs[-1] if lrs else None,
                "optimizer_step": ev.index,
            },
            fix="keep the parameters in float32 and run the forward under torch.autocast(dtype=torch.bfloat16) "
            "(or keep float32 master weights in the optimizer); do not cast the trained model with "
            ".to(bfloat16)/.half()",
            where=where if where[0] is not None else None,
        )
