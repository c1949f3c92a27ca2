"""A frozen BatchNorm left in train mode (issue 32): its affine parameters (or, without affine parameters, those
of the module that holds it) do not require grad, yet it runs in training mode during the watched steps and
its running_mean/running_var move with every batch, so the "frozen" extractor drifts from the statistics it
was loaded with. Measured: the running statistics at its first training forward against those at the end of
the watch. The finding names the ``.train()`` call that put it in train mode, else its forward's line."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import RawStack, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe

MAX_NORMS = 512  # frozen norm layers remembered in one watch


def _frozen(bn: _BatchNorm, parents: dict[int, nn.Module]) -> bool:
    """Its affine parameters do not require grad; without any, the parameters of the module holding it."""
    own = [p for p in bn.parameters(recurse=False)]
    if own:
        return not any(p.requires_grad for p in own)
    parent = parents.get(id(bn))
    if parent is None:
        return False
    held = list(parent.parameters())
    return bool(held) and not any(p.requires_grad for p in held)


@register
class FrozenNormUpdatesStats(Check):
    """A BatchNorm whose parameters are frozen (``requires_grad=False``, or all of its enclosing module's) runs
    in train mode in the watched steps and its running_mean/running_var change: the frozen extractor drifts
    from its pretrained statistics with every batch (it needs ``.eval()`` after ``model.train()``)."""

    name = "frozen_norm_updates_stats"

    def __init__(self) -> None:
        self.train_sites: dict[int, RawStack] = {}  # id(module) -> the outermost train(True) that reached it
        self.seen: dict[int, tuple[_BatchNorm, torch.Tensor, torch.Tensor, RawStack]] = {}
        self.trained: set[int] = set()  # norms that ran with a parameter requiring grad (a GAN's D, unfrozen)
        self.affine: dict[int, list[torch.Tensor]] = {}  # id(norm) -> its weight and bias at its first forward
        self._train_depth = 0

    def start(self, probe: Probe) -> None:
        check = self

        def make_train(original: Any) -> Any:
            @functools.wraps(original)
            def train(module: nn.Module, mode: bool = True) -> Any:
                if check._train_depth == 0 and probe.active and not probe._in_check:
                    if mode:
                        stack = raw_stack(2)
                        for m in module.modules():
                            if isinstance(m, _BatchNorm):
                                check.train_sites[id(m)] = stack
                    else:
                        for m in module.modules():
                            check.train_sites.pop(id(m), None)
                check._train_depth += 1
                try:
                    return original(module, mode)
                finally:
                    check._train_depth -= 1

            return train

        def make_forward(original: Any) -> Any:
            @functools.wraps(original)
            def forward(module: _BatchNorm, *args: Any, **kwargs: Any) -> Any:
                if probe.active and any(p.requires_grad for p in module.parameters(recurse=False)):
                    check.trained.add(id(module))
                if (
                    probe.active
                    and not probe._in_check
                    and id(module) not in check.seen
                    and len(check.seen) < MAX_NORMS
                    and module.training
                    and module.track_running_stats
                    and module.running_mean is not None
                    and module.running_var is not None
                ):
                    check.seen[id(module)] = (
                        module,
                        module.running_mean.detach().clone(),
                        module.running_var.detach().clone(),
                        raw_stack(2),
                    )
                    check.affine[id(module)] = [p.detach().clone() for p in module.parameters(recurse=False)]
                return original(module, *args, **kwargs)

            return forward

        probe.patch(nn.Module, "train", make_train)
        probe.patch(_BatchNorm, "forward", make_forward)
        probe.patch(nn.SyncBatchNorm, "forward", make_forward)

    def finish(self, probe: Probe) -> None:
        if probe.step < 1 or not self.seen:
            return
        parents: dict[int, nn.Module] = {}
        for root in list(probe.roots.values()):
            for mod in root.modules():
                for child in mod.children():
                    parents.setdefault(id(child), mod)
        moved: list[tuple[_BatchNorm, float, RawStack]] = []
        for bn, mean0, var0, stack in self.seen.values():
            if id(bn) in self.trained or not _frozen(bn, parents) or bn.running_mean is None or bn.running_var is None:
                continue
            start = self.affine.get(id(bn), [])
            if any(not torch.equal(p, p0) for p, p0 in zip(bn.parameters(recurse=False), start, strict=False)):
                continue  # frozen weights moved by hand: an EMA copy (a mean teacher), in train mode on purpose
            with torch.no_grad():
                d_mean = (bn.running_mean.float() - mean0.float()).abs().max().item()
                d_var = (bn.running_var.float() - var0.float()).abs().max().item()
            change = max(d_mean, d_var)
            if change > 0:
                moved.append((bn, change, stack))
        if not moved:
            return
        bn, change, fwd_stack = moved[0]
        where = None
        site = next((self.train_sites[id(b)] for b, _, _ in moved if id(b) in self.train_sites), None)
        if site is not None:
            file, line = user_line_of(site)
            where = (file, line) if file is not None else None
        fwd_file, fwd_line = user_line_of(fwd_stack)
        if where is None and fwd_file is not None:
            where = (fwd_file, fwd_line)
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"{len(moved)} BatchNorm layer(s) with frozen parameters ran in train mode and their running "
                f"statistics changed during the watched steps (by up to {change:.3g}): the frozen part drifts "
                "from its pretrained statistics with every batch"
            ),
            evidence={
                "frozen_norms_updated": len(moved),
                "first_norm": type(bn).__name__,
                "max_stat_change": change,
                "forward_line": f"{fwd_file}:{fwd_line}" if fwd_file else None,
            },
            fix=(
                "put the frozen part in eval mode after every model.train() (e.g. backbone.eval(), or override "
                "train() to keep it in eval), or set its BatchNorm momentum to 0"
            ),
            where=where,
        )
