"""The learning rate each param group steps with, against the one it was configured with: groups built with
different rates that all step with one (a hand-written warm-up that reads the first group's rate and writes it
to every group), and a ReduceLROnPlateau whose mode runs against its metric (``mode="max"`` stepped with the
loss the program backpropagates, or a Lightning ``monitor`` named for a score that is better when higher, such as
``train_acc``, with ``mode="min"``; the same for EarlyStopping and ModelCheckpoint): the rate is cut while
training improves, or the best checkpoint is the worst; and groups whose weight decay treats normalisation
layers unevenly (a no-decay name list that misses some of them)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.lr_schedule import lightning_trainer
from expkit.doctor.findings import string_literals

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, LossEvent, Probe, StepEvent

MIN_LR_RATIO = 1.5  # configured rates this far apart are a deliberate per-group setting
LOSS_MATCH = 1e-6  # relative: a plateau metric this close to a loss value is that loss

# Words of a monitored metric's name (split at non-letters) that say which direction is better. A name with
# words of both lists, or of neither, is not judged.
HIGHER_BETTER = frozenset(
    [
        "acc",
        "accuracy",
        "auc",
        "auroc",
        "auprc",
        "f1",
        "precision",
        "recall",
        "iou",
        "miou",
        "dice",
        "bleu",
        "rouge",
        "map",
        "score",
        "top1",
        "top5",
        "r2",
    ]
)
LOWER_BETTER = frozenset(["loss", "err", "error", "mse", "mae", "rmse", "nll", "perplexity", "ppl", "wer", "cer"])


@register
class GroupLrsCollapsed(Check):
    """Param groups configured with different learning rates (the highest at least MIN_LR_RATIO times the
    lowest) that step with one and the same non-zero rate: a warm-up or schedule written by hand set every
    group's ``lr`` from one value, so the per-group setting (a head at 10x the backbone) is lost."""

    name = "group_lrs_collapsed"

    def __init__(self) -> None:
        self.configured: dict[int, list[float]] = {}  # id(optimizer) -> each group's lr when it was added
        self.done: set[int] = set()

    def start(self, probe: Probe) -> None:
        configured = self.configured

        def make(original: Any) -> Any:
            def add_param_group(opt: Any, group: dict[str, Any]) -> None:
                original(opt, group)
                try:
                    configured.setdefault(id(opt), []).append(float(opt.param_groups[-1]["lr"]))
                except Exception as exc:  # noqa: BLE001 - recording must never break the program
                    probe.check_failed(self.name, exc)

            return add_param_group

        probe.patch(torch.optim.Optimizer, "add_param_group", make)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        set_lrs = self.configured.get(id(ev.optimizer))
        groups = ev.optimizer.param_groups
        if id(ev.optimizer) in self.done or not set_lrs or len(set_lrs) != len(groups) or len(groups) < 2:
            return
        low, high = min(set_lrs), max(set_lrs)
        if low <= 0 or high < MIN_LR_RATIO * low:
            return
        now = [float(g["lr"]) for g in groups]
        if now[0] <= 0 or any(not math.isclose(x, now[0], rel_tol=1e-9) for x in now):
            return
        self.done.add(id(ev.optimizer))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the optimizer's {len(groups)} param groups were configured with learning rates "
            f"{_rates(set_lrs)}, but all of them step with lr {now[0]:.3g}: something set every group's lr from "
            "one value (a warm-up or schedule that reads one group's rate), so the per-group rates are lost",
            evidence={"configured_lrs": set_lrs, "stepped_lrs": now},
            fix="scale each group's own rate (g['lr'] = g['initial_lr'] * factor, one base per group), or use "
            "torch.optim.lr_scheduler.LambdaLR / LinearLR, which keep the groups' ratios",
        )


def _rates(lrs: list[float]) -> str:
    return "[" + ", ".join(f"{x:.3g}" for x in lrs) + "]"


def _direction(name: str) -> str | None:
    """'max' when the metric's name says higher is better, 'min' when lower is, else None."""
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    higher, lower = bool(words & HIGHER_BETTER), bool(words & LOWER_BETTER)
    return "max" if higher and not lower else "min" if lower and not higher else None


@register
class PlateauModeAgainstMetric(Check):
    """A ReduceLROnPlateau (or Lightning's EarlyStopping / ModelCheckpoint) whose ``mode`` runs against its
    metric: ``mode="max"`` stepped with a value equal to a loss the program computed this step, or a Lightning
    ``monitor`` whose name says it is better when higher (``*_acc``, ``*_f1``) with ``mode="min"``, or one named
    for a loss with ``mode="max"``. Every improvement then counts as a plateau: the rate is cut while training goes
    well (or the worst checkpoint is kept)."""

    name = "plateau_mode_against_metric"

    def __init__(self) -> None:
        self.losses: list[float] = []  # loss values of this step (loss functions and backward roots)
        self.done: set[int] = set()
        self.lightning_seen = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.value.numel() == 1:
            self.losses.append(float(ev.value.detach()))

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if ev.tensor.numel() == 1:
            self.losses.append(float(ev.tensor.detach()))

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "plateau.step" and ev.obj is not None:
            self._judge_step(probe, ev.obj, ev.args[0] if ev.args else ev.kwargs.get("metrics"))

    def _judge_step(self, probe: Probe, sched: Any, metric: Any) -> None:
        if isinstance(metric, torch.Tensor) and metric.numel() == 1:
            metric = float(metric.detach())
        if not isinstance(metric, (int, float)) or sched.mode != "max" or id(sched) in self.done:
            return
        if any(abs(metric - v) <= LOSS_MATCH * max(1.0, abs(v)) for v in self.losses[-8:]):
            self.done.add(id(sched))
            self._report(probe, "ReduceLROnPlateau", "the loss the program backpropagates", "max", sched)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.lightning_seen:
            return
        trainer = lightning_trainer()
        if trainer is None:
            return
        self.lightning_seen = True
        watched: list[tuple[str, Any, str, Any]] = []  # (what, object, monitor, mode)
        for cfg in getattr(trainer, "lr_scheduler_configs", None) or []:
            sched = getattr(cfg, "scheduler", None)
            if isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
                watched.append(("ReduceLROnPlateau", sched, str(getattr(cfg, "monitor", "") or ""), sched.mode))
        for cb in getattr(trainer, "callbacks", None) or []:
            monitor, mode = getattr(cb, "monitor", None), getattr(cb, "mode", None)
            if isinstance(monitor, str) and mode in ("min", "max"):
                watched.append((type(cb).__name__, cb, monitor, mode))
        for what, obj, monitor, mode in watched:
            better = _direction(monitor)
            if better is not None and better != mode:
                desc = f"the metric {monitor!r}, whose name says {'higher' if better == 'max' else 'lower'} is better"
                self._report(probe, what, desc, mode, obj)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.losses = self.losses[-8:]

    def _report(self, probe: Probe, what: str, metric: str, mode: str, obj: Any) -> None:
        where = probe.built_at(obj)
        effect = "cuts the learning rate" if what == "ReduceLROnPlateau" else "acts"
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{what}(mode={mode!r}) is given {metric}: with mode {mode!r} every improvement looks like a "
            f"plateau (or a step back), so it {effect} while training goes well",
            evidence={"object": what, "mode": mode, "metric": metric},
            fix=f"mode={'min' if mode == 'max' else 'max'!r} for this metric (min for a loss or an error, max for "
            "an accuracy or a score), or monitor the metric the mode was written for",
            where=where if where[0] is not None else None,
        )


@register
class NormWeightsDecayedUnevenly(Check):
    """An optimizer that decays some normalisation-layer parameters (LayerNorm, RMSNorm, BatchNorm, GroupNorm:
    any module whose class name holds "Norm") and not others: a no-decay rule matched by name (``"LayerNorm.weight"``)
    that misses the norms named otherwise (RoBERTa's ``lm_head.layer_norm``, GPT-2's ``ln_f``), so those are pulled
    toward zero every step unlike the rest."""

    name = "norm_weight_decayed_unevenly"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if id(ev.optimizer) in self.done:
            return
        self.done.add(id(ev.optimizer))
        decay = {
            id(p): float(g.get("weight_decay", 0.0) or 0.0) for g in ev.optimizer.param_groups for p in g["params"]
        }
        decayed: list[str] = []
        spared: list[str] = []
        for root in probe.trained_roots():
            for mname, mod in root.named_modules():
                if "Norm" not in type(mod).__name__:
                    continue
                for pname, p in mod.named_parameters(recurse=False):
                    if id(p) in decay and p.requires_grad:
                        (decayed if decay[id(p)] > 0 else spared).append(f"{mname}.{pname}".lstrip("."))
        if not decayed or not spared:
            return
        where = probe.built_at(ev.optimizer)
        # the no-decay list: the first string in the optimizer's file that names some spared norm and no decayed one
        rule = next(
            (
                n
                for n, v in string_literals(where[0])
                if v and any(v in s for s in spared) and not any(v in d for d in decayed)
            ),
            None,
        )
        where = (where[0], rule) if rule is not None else where
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the optimizer decays {len(decayed)} normalisation parameter(s) and spares {len(spared)}: "
            f"{', '.join(sorted(decayed)[:4])}{' ...' if len(decayed) > 4 else ''} get weight decay while the "
            "other norms' do not (a no-decay rule matched by a name these norms do not have), so they shrink "
            "toward zero every step",
            evidence={"decayed": sorted(decayed)[:8], "decayed_count": len(decayed), "spared_count": len(spared)},
            fix="choose the no-decay group by module type and shape (every Norm layer's parameters and every "
            "bias, or p.ndim < 2), not by a name list",
            where=where if where[0] is not None else None,
        )
