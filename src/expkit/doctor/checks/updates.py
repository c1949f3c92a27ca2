"""Checks of what the optimizer steps on and what happens to the weights between steps (issue 32): an embedding
handed to the optimizer while frozen (``from_pretrained`` freezes by default); fp16 gradients that flush to zero
without loss scaling; a trained parameter whose gradient is exactly zero at every watched step while the others'
are not (a dead output, a dropout of 1, a loss term weighted by 0); weights changed between steps by something
other than the optimizer (re-initialised or reloaded inside the loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import RawStack, is_user_file, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, Probe, StepEvent

FP16_ZERO_SHARE = 0.5  # share of fp16 gradient values exactly zero that marks an underflow
SAMPLE = 16  # values of each parameter compared between steps
RESTORE_RTOL, RESTORE_ATOL = 1e-5, 1e-7  # a weight moved and moved back by the same amount (rounding only)


def _made(probe: Probe, obj: Any) -> tuple[str | None, int | None] | None:
    rec = probe.made_at.get(id(obj))
    return user_line_of(rec[1]) if rec else None


def _modules_of(probe: Probe) -> list[nn.Module]:
    return [m for root in list(probe.roots.values()) for m in root.modules()]


@register
class FrozenInOptimizer(Check):
    """An embedding whose weight an optimizer holds but that does not require grad: frozen by its loader's
    default (``nn.Embedding.from_pretrained(..., freeze=True)``) while the program meant to train it."""

    name = "frozen_embedding_in_optimizer"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        held = {id(p) for p in ev.params}
        for root in list(probe.roots.values()) + list(probe.embeddings.values()):
            if not isinstance(root, (nn.Embedding, nn.EmbeddingBag)):
                continue
            w = root.weight
            if id(w) in held and not w.requires_grad:
                probe.report(
                    kind="bug",
                    check=self.name,
                    message=f"an embedding ({tuple(w.shape)}) is in the optimizer but frozen (requires_grad=False), "
                    "e.g. by from_pretrained's default freeze=True: it never trains",
                    evidence={"shape": list(w.shape)},
                    fix="nn.Embedding.from_pretrained(vectors, freeze=False), or leave it out of the optimizer",
                    where=_made(probe, root),
                )
                return


@register
class Fp16Underflow(Check):
    """Half-precision gradients of which most values are exactly zero, with no GradScaler scaling the loss."""

    name = "fp16_grad_underflow"

    def __init__(self) -> None:
        self.scaled = False

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        self.scaled = self.scaled or ev.name == "scaler.scale"

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        grads = [p.grad for p in ev.params if p.grad is not None and p.grad.dtype == torch.float16]
        if self.scaled or not grads:
            return
        total = sum(g.numel() for g in grads)
        zeros = sum(int((g == 0).sum()) for g in grads)
        if zeros / total < FP16_ZERO_SHARE:
            return
        root = next(
            (m for m in list(probe.roots.values()) if any(id(p) in {id(q) for q in ev.params} for p in m.parameters())),
            None,
        )
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{zeros:,} of {total:,} fp16 gradient values are exactly 0 and no GradScaler scales the loss: "
            "small gradients underflow in half precision",
            evidence={"zero_share": zeros / total, "fp16_values": total},
            fix="train in fp32 with torch.autocast(dtype=torch.float16) and a torch.amp.GradScaler, or use bf16",
            where=_made(probe, root) if root is not None else None,
        )


def _where_gradient_died(probe: Probe, mods: list[nn.Module]) -> nn.Module | None:
    """The first parameter-free layer that ran after the first of ``mods`` and gave every sample the same
    output (a softmax over a single unit, a dropout of 1): no gradient passes back through it."""
    ids = {id(m) for m in mods}
    order = probe.exec_order
    first = next((i for i, m in enumerate(order) if id(m) in ids), None)
    if first is None:
        return None
    return next((m for m in order[first + 1 :] if id(m) in probe.constant_outputs), None)


@register
class DeadGradient(Check):
    """A trained module whose weight gradient is exactly zero at two watched steps in a row while other
    parameters of the same optimizer get non-zero gradients."""

    name = "zero_gradient"

    def __init__(self) -> None:
        self.zero_before: set[int] = set()

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        with_grad = [p for p in ev.params if p.grad is not None and p.requires_grad]
        if probe.lead is None or probe.lead() is not ev.optimizer or not with_grad:
            return
        zero = {id(p) for p in with_grad if p.dim() >= 2 and p.grad is not None and not bool(p.grad.any())}
        if len(zero) == len(with_grad) or not zero:
            self.zero_before = set()
            return
        twice = zero & self.zero_before
        self.zero_before = zero
        mods = [m for m in _modules_of(probe) if any(id(p) in twice for p in m.parameters(recurse=False))]
        if mods:
            dead = _where_gradient_died(probe, mods)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{len(mods)} trained module(s) ({type(mods[0]).__name__}) get an all-zero gradient at "
                "every watched step while others do not: nothing reaches them (a dead output, dropout 1, a loss "
                "weight of 0)",
                evidence={"modules": len(mods), "dead_layer": type(dead).__name__ if dead is not None else None},
                fix="check what sits between these modules and the loss (activation on the output, dropout "
                "probability, loss weights)",
                where=_made(probe, dead if dead is not None else mods[0]),
            )


def _same(before: torch.Tensor, now: torch.Tensor) -> bool:
    """Equal up to rounding: weights moved away and back in place (SAM's ``p.add_(e)`` then ``p.sub_(e)``) differ
    from their old values in the last bits only; a re-initialisation or a reload moves them far more."""
    return before.shape == now.shape and bool(torch.allclose(before, now, rtol=RESTORE_RTOL, atol=RESTORE_ATOL))


def _projected(before: torch.Tensor, now: torch.Tensor) -> bool:
    """Moved toward zero value by value, keeping each sign, and not all to zero: a projection onto a constraint
    after the step (WGAN's ``p.data.clamp_(-c, c)``, a max-norm rescale, a pruning mask, weight decay by hand),
    which a re-initialisation or a reload does not look like."""
    if before.shape != now.shape or not bool(now.any()):
        return False
    shrunk = now.abs() <= before.abs() * (1 + RESTORE_RTOL) + RESTORE_ATOL
    return bool((shrunk & (now * before >= 0)).all())


@register
class WeightsChangedOutsideStep(Check):
    """Weights an optimizer holds that change between its steps without it (a re-initialisation or a reload
    inside the loop undoes training); weights only pulled toward zero (a clamp, a projection) are not judged."""

    name = "weights_changed_outside_step"

    def __init__(self) -> None:
        self.after: dict[int, torch.Tensor] = {}
        self.at_backward: dict[int, torch.Tensor] = {}  # what the held weights were when the backward began
        self.hooks: dict[int, RawStack] = {}  # id(parameter) -> where a post-accumulate-grad hook was put on it
        self.in_backward_reported = False
        self.registering: set[int] = set()

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def register(tensor: torch.Tensor, hook: Any) -> Any:
                # the outermost call only: a torch function mode on the stack calls this again from inside it
                if probe.active and not probe._in_check and id(tensor) not in check.registering:
                    check.hooks[id(tensor)] = raw_stack(2)
                check.registering.add(id(tensor))
                try:
                    return original(tensor, hook)
                finally:
                    check.registering.discard(id(tensor))

            return register

        if hasattr(torch.Tensor, "register_post_accumulate_grad_hook"):
            probe.patch(torch.Tensor, "register_post_accumulate_grad_hook", make)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if ev.first_after_step and not self.in_backward_reported:
            self.at_backward = {
                id(p): p.detach().flatten()[:SAMPLE].clone()
                for opt in list(probe.optimizers)
                for g in opt.param_groups
                for p in g["params"]
            }

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.after = {id(p): p.detach().flatten()[:SAMPLE].clone() for p in ev.params}
        self.at_backward = {}  # a step taken (inside the backward too: an optimizer fused into it) ends the window

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self._changed_in_backward(probe, ev)
        moved = []
        for p in ev.params:
            before, now = self.after.get(id(p)), p.detach().flatten()[:SAMPLE]
            if before is not None and not _same(before, now) and not _projected(before, now):
                moved.append(p)
        if not moved or not self.after:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(moved)} parameter(s) changed between two optimizer steps without the optimizer: "
            "something re-initialises or reloads the weights inside the loop",
            evidence={"params_changed": len(moved), "params": len(ev.params)},
            fix="initialise (model.apply(init), load_state_dict) once, before the training loop",
            where=user_line_of(probe.apply_site) if probe.apply_site else None,
        )

    def _changed_in_backward(self, probe: Probe, ev: StepEvent) -> None:
        """Weights the stepping optimizer holds, with a post-accumulate-grad hook on them, that changed between
        the start of the backward and this step with no step in between: the hook is given the parameter, not its
        gradient (``arg.clamp_(-c, c)`` clamps the weights). A clamp after the step (WGAN) falls outside this
        window; an optimizer step fused into the backward (the hook steps) ends it; a weight decay or max-norm by
        hand between backward() and step() (no hook) is not judged. Named where the hook was registered."""
        before, self.at_backward = self.at_backward, {}
        if not before or self.in_backward_reported:
            return
        moved = [
            p
            for p in ev.params
            if id(p) in before and id(p) in self.hooks and not _same(before[id(p)], p.detach().flatten()[:SAMPLE])
        ]
        if not moved:
            return
        self.in_backward_reported = True
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(moved)} parameter(s) with a post-accumulate-grad hook changed during the backward, "
            "before the optimizer stepped: the hook is called with the parameter itself (its gradient is "
            "param.grad), so an in-place op on its argument (clamp_, mul_) writes the weights, not the gradient",
            evidence={"params_changed": len(moved), "params": len(ev.params)},
            fix="in a register_post_accumulate_grad_hook hook, change param.grad (param.grad.clamp_(-c, c)), or use "
            "register_hook, whose hook gets the gradient",
            where=user_line_of(self.hooks[id(moved[0])]),
        )


@register
class MaskedRowsUpdated(Check):
    """Rows of a parameter whose gradient the user's own hook (``p.register_hook(lambda g: g * mask)``) sets to
    zero, meant to freeze them (the original vocabulary while new token rows train), that the optimizer still
    moves: a decoupled weight decay (AdamW) or momentum from earlier steps changes a row whatever its gradient.
    Measured: at the first watched step each user hook on a held parameter is wrapped to see which rows it zeroes
    (non-zero before it, zero after); at the next step those rows are compared across ``step()``. Named where the
    optimizer was built (its weight decay, its parameter groups)."""

    name = "masked_rows_updated"

    def __init__(self) -> None:
        self.masked: dict[int, torch.Tensor] = {}  # id(parameter) -> the rows its hook zeroed (bool, one per row)
        self.wrapped: set[int] = set()
        self.before: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (param, rows, their values)
        self.done = False

    def _wrap(self, p: torch.Tensor) -> None:
        hooks = getattr(p, "_backward_hooks", None)
        if not hooks or id(p) in self.wrapped or p.dim() < 1:
            return
        self.wrapped.add(id(p))
        check, key = self, id(p)
        for k, fn in list(hooks.items()):
            code = getattr(fn, "__code__", None)
            if code is None or not is_user_file(code.co_filename):
                continue  # a library's or the doctor's own hook

            def wrapper(grad: torch.Tensor, fn: Any = fn) -> Any:
                out = fn(grad)
                try:
                    if isinstance(out, torch.Tensor) and out.shape == grad.shape and grad.dim() >= 1:
                        was = grad.detach().reshape(grad.shape[0], -1).ne(0).any(1)
                        now = out.detach().reshape(out.shape[0], -1).eq(0).all(1)
                        check.masked[key] = was & now
                except Exception:  # noqa: BLE001, S110 - recording must never break the program's backward
                    pass
                return out

            hooks[k] = wrapper

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.done:
            return
        for p in ev.params:
            rows = self.masked.get(id(p))
            if rows is not None and bool(rows.any()) and not bool(rows.all()) and rows.shape[0] == p.shape[0]:
                self.before.append((p, rows, p.detach()[rows].clone()))
            else:
                self._wrap(p)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        before, self.before = self.before, []
        for p, rows, values in before:
            if torch.equal(p.detach()[rows], values):
                continue
            self.done = True
            moved = float((p.detach()[rows] - values).abs().max())
            decay = max((float(g.get("weight_decay", 0.0)) for g in ev.optimizer.param_groups), default=0.0)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{int(rows.sum())} row(s) of a {tuple(p.shape)} parameter get a zero gradient from the "
                f"program's own hook (masked, to keep them frozen), yet {type(ev.optimizer).__name__}.step() moved "
                f"them (by up to {moved:.3g}): "
                + (
                    f"its weight decay ({decay:g}) shrinks every row whatever its gradient"
                    if decay > 0
                    else "its momentum from earlier steps moves rows whose gradient is now zero"
                ),
                evidence={"masked_rows": int(rows.sum()), "max_change": moved, "weight_decay": decay},
                fix="give the masked rows weight_decay=0 (a parameter group of their own), restore them after each "
                "step, or split the trained rows into a parameter of their own",
                where=_made(probe, ev.optimizer),
            )
            return
