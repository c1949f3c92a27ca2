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
    (a warm-up start)."""
    if not type(opt).__module__.startswith("torch.optim"):
        return False
    lr = _lr(group)
    if lr is None or not lr > 0 or not math.isfinite(lr):
        return False
    base = group.get("initial_lr")
    return not (isinstance(base, (int, float)) and lr < 0.5 * float(base))


def _momentum(opt: torch.optim.Optimizer, group: dict[str, Any]) -> float:
    """SGD's momentum (0 for other optimizers): its first steps are smaller than its later ones, so its update is
    judged at the size momentum grows it to, lr * (1 - dampening) * |grad| / (1 - momentum)."""
    if not isinstance(opt, torch.optim.SGD):
        return 0.0
    m = float(group.get("momentum", 0) or 0)
    return m if 0 < m < 1 else 0.0


def _ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    _, exp = torch.frexp(x)
    return torch.ldexp(torch.ones_like(x), exp - 1 - LOW[dtype])


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
    SGD with momentum takes small first steps that grow: its groups are judged before the step, by the same rule,
    on the update at the size momentum grows it to (lr (1 - dampening) |grad| / (1 - momentum)). Float32
    parameters (autocast, master weights), lr 0 or warm-up starts and optimizers that are not torch's are not
    judged.
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
        # momentum-SGD groups, at full momentum: (elements, within one ulp, under half an ulp: unchanged)
        kept, projected = [], [0, 0, 0]
        for group in opt.param_groups:
            if not _judged(opt, group):
                continue
            m = _momentum(opt, group)
            for p in group["params"]:
                grad = p.grad
                if p.dtype in LOW and grad is not None and grad.layout == torch.strided and grad.shape == p.shape:
                    with contextlib.suppress(Exception):  # a tensor subclass that cannot be sampled: not judged
                        if m:
                            self._project(p, group, m, projected)
                        else:
                            kept.append((p, _sample(p), _sample(grad)))
        if kept:
            self.before[id(opt)] = kept
        counted, rounded, unchanged = projected  # the measured rule, on the update momentum grows to
        if counted >= MIN_ELEMENTS and rounded / counted > ROUNDED_SHARE and unchanged / counted >= MIN_UNCHANGED:
            params = [p for g in opt.param_groups if _momentum(opt, g) for p in g["params"] if p.dtype in LOW]
            self._report(probe, ev, params, counted, rounded, unchanged, projected=True)

    @staticmethod
    def _project(p: torch.Tensor, group: dict[str, Any], m: float, into: list[int]) -> None:
        """Count the sampled elements (non-zero gradient and value), those whose update grown by momentum to its
        full size is at most one unit in the last place, and those for which it is under half a unit (rounded
        away at every step)."""
        old = _sample(p).float()
        grad = _sample(p.grad).float()  # type: ignore[arg-type]
        live = (grad != 0) & (old != 0) & torch.isfinite(old)
        if not bool(live.any()):
            return
        damp = float(group.get("dampening", 0) or 0)
        full = float(_lr(group) or 0) * (1 - damp) * grad[live].abs() / (1 - m)
        ulp = _ulp(old[live], p.dtype)
        into[0] += int(live.sum())
        into[1] += int((full <= ulp).sum())
        into[2] += int((full < 0.5 * ulp).sum())

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
            ulp = _ulp(old32[live], p.dtype)
            moved = (new[live] - old32[live]).abs()
            counted += n
            unchanged += int((moved == 0).sum())
            rounded += int((moved <= ulp).sum())
        if counted < MIN_ELEMENTS or rounded / counted <= ROUNDED_SHARE or unchanged / counted < MIN_UNCHANGED:
            return
        self._report(probe, ev, [p for p, _, _ in kept], counted, rounded, unchanged, projected=False)

    def _report(
        self,
        probe: Probe,
        ev: StepEvent,
        params: list[torch.Tensor],
        counted: int,
        rounded: int,
        unchanged: int,
        *,
        projected: bool,
    ) -> None:
        self.reported.add(id(ev.optimizer))
        dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in params})
        sites = [self.cast_sites[id(p)] for p in params if id(p) in self.cast_sites]
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
                + (
                    f"format's resolution even at the size SGD's momentum grows it to ({unchanged / counted:.0%} "
                    "under half a unit in the last place, rounded away at every step): the weights barely learn"
                    if projected
                    else f"format's resolution ({unchanged / counted:.0%} unchanged, rounded away; "
                    f"{(rounded - unchanged) / counted:.0%} moved by a single unit in the last place, mostly "
                    "rounding error): the weights barely learn"
                )
            ),
            evidence={
                "share_unchanged": unchanged / counted,
                "share_within_one_ulp": rounded / counted,
                "elements_sampled": counted,
                "param_dtype": "/".join(dtypes),
                "lr": lrs[-1] if lrs else None,
                "optimizer_step": ev.index,
                "judged_at_full_momentum": projected,
            },
            fix="keep the parameters in float32 and run the forward under torch.autocast(dtype=torch.bfloat16) "
            "(or keep float32 master weights in the optimizer); do not cast the trained model with "
            ".to(bfloat16)/.half()",
            where=where if where[0] is not None else None,
        )
