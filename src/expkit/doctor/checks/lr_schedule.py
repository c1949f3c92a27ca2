"""The learning rate the optimizer actually used vs the schedule's intent: a scheduler declared in optimizer
steps (a warm-up of N steps, a total of M steps) that is not stepped between optimizer steps - stepped once
per epoch, or never - so the lr stays at its warm-up start; and a schedule whose own rule never lets the lr near the
value set on the optimizer (a warm-up longer than the planned run, a LambdaLR lambda that returns the absolute lr);
and a cosine period counted in epochs stepped per batch; and a rate written by hand that drops many times over
after the first update (a warm-up written after ``step()``: the first update ran at the full rate)."""

from __future__ import annotations

import ast
import functools
import math
from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import keyword_line, source_tree

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, Probe, StepEvent

# The schedulers whose horizon is declared in optimizer steps, by construction: transformers'
# get_*_schedule_with_warmup build LambdaLR(partial(..., num_warmup_steps=, num_training_steps=));
# OneCycleLR and CyclicLR are documented as stepped "after each batch". A StepLR or CosineAnnealingLR may be
# meant per epoch, so those are not judged.
PER_BATCH_SCHEDULERS = ("OneCycleLR", "CyclicLR")


def declared_steps(scheduler: Any) -> dict[str, int] | None:
    """``{"warmup_steps": .., "total_steps": ..}`` (either may be absent) when the horizon is in steps, else None."""
    name = type(scheduler).__name__
    if name in PER_BATCH_SCHEDULERS:
        total = getattr(scheduler, "total_steps", None)
        return {"total_steps": int(total)} if total is not None else {}
    for fn in getattr(scheduler, "lr_lambdas", []) or []:
        if isinstance(fn, functools.partial):
            kw = fn.keywords
            found = {
                k: int(kw[s])
                for k, s in (("warmup_steps", "num_warmup_steps"), ("total_steps", "num_training_steps"))
                if s in kw
            }
            if found:
                return found
    return None


def drives(scheduler: Any, optimizer: Any) -> bool:
    """The scheduler sets this optimizer's lr (directly, or through a wrapper such as accelerate's
    AcceleratedOptimizer, which the HF Trainer hands its scheduler)."""
    held = getattr(scheduler, "optimizer", None)
    return held is optimizer or (held is not None and getattr(held, "optimizer", None) is optimizer)


def first_time_driving(probe: Probe, optimizer: Any, done: set[int]) -> list[Any]:
    """The probe's schedulers that set ``optimizer``'s lr and are not in ``done`` (ids), each added to ``done``:
    a check that projects a schedule once looks at each scheduler at its first step."""
    fresh = [s for s in list(probe.schedulers) if id(s) not in done and drives(s, optimizer)]
    done.update(id(s) for s in fresh)
    return fresh


def _intended_lr(scheduler: Any) -> float | None:
    """The lr a LambdaLR would give at its next step (base lr x lambda(last_epoch + 1)), or None."""
    fns = getattr(scheduler, "lr_lambdas", None)
    if not fns:
        return None
    return float(scheduler.base_lrs[0] * fns[0](scheduler.last_epoch + 1))


def _configure_return(built: tuple[str | None, int | None]) -> tuple[str, int] | None:
    """The last ``return`` of the ``configure_optimizers`` (Lightning's) whose body holds the line ``built``: the
    schedule was handed to the framework there, and how often it is stepped is said there."""
    file, line = built
    tree = source_tree(file) if file is not None else None
    if file is None or line is None or tree is None:
        return None
    around = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    fn = min(around, key=lambda n: (n.end_lineno or n.lineno) - n.lineno, default=None)
    if fn is None or fn.name != "configure_optimizers":
        return None
    returns = [n.lineno for n in ast.walk(fn) if isinstance(n, ast.Return)]
    return (file, max(returns)) if returns else None


def configure_optimizers_return(module: Any) -> tuple[str, int] | None:
    """The last ``return`` of a LightningModule's own ``configure_optimizers``: where its optimizers were handed
    to Lightning (a probe started by the callback, after they were built, saw no construction)."""
    code = getattr(getattr(type(module), "configure_optimizers", None), "__code__", None)
    if code is None:
        return None
    return _configure_return((code.co_filename, code.co_firstlineno + 1))


@register
class ScheduleNotStepped(Check):
    """Watches each scheduler bound to an optimizer: its ``_step_count`` (PyTorch's count of ``step()`` calls)
    at consecutive steps of that optimizer. A per-batch schedule that did not advance between them is reported
    with the lr the optimizer used at each step."""

    name = "schedule_not_stepped"

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, float]] = {}  # id(scheduler) -> (step count, lr) at the last opt step
        self.stepped_at: dict[int, tuple[str | None, int | None]] = {}  # id(scheduler) -> last step() call site

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "scheduler.step" and ev.obj is not None:
            from expkit.doctor.findings import user_frame

            self.stepped_at[id(ev.obj)] = user_frame(3)

    def _where(self, probe: Probe, sched: Any) -> tuple[str | None, int | None] | None:
        """The user's line of the schedule's last ``step()`` (stepped per epoch: that line), else the ``return``
        of the Lightning ``configure_optimizers`` that built it (where ``'interval': 'step'`` belongs), else its
        construction (stepped by a framework, or only at construction)."""
        built = probe.built_at(sched)
        stepped = self.stepped_at.get(id(sched), (None, None))
        if stepped[0] is not None and stepped != built and not probe.inside_forward:
            return stepped
        returned = _configure_return(built)
        where = returned if returned is not None else built
        return where if where[0] is not None else None

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        for sched in list(probe.schedulers):
            if not drives(sched, ev.optimizer) or type(sched).__name__ == "ReduceLROnPlateau":
                continue
            count, lr = int(getattr(sched, "_step_count", 0)), float(ev.optimizer.param_groups[0]["lr"])
            last = self.seen.get(id(sched))
            self.seen[id(sched)] = (count, lr)
            if last is None or count != last[0]:
                continue
            declared = declared_steps(sched)
            if declared is None:
                continue
            batches = probe.dataloader_batches()
            intended = _intended_lr(sched)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{type(sched).__name__} is declared in optimizer steps ({_steps_text(declared)}) but was "
                f"not stepped between two optimizer steps: the optimizer used lr {last[1]:.3g} then {lr:.3g}"
                + (f" where the schedule meant {intended:.3g}" if intended is not None else "")
                + " - a scheduler stepped once per epoch (or never) stays in its warm-up",
                evidence={
                    "lr_used_previous_step": last[1],
                    "lr_used_this_step": lr,
                    "lr_intended_this_step": intended,
                    "scheduler_steps_between": 0,
                    **declared,
                    "loader_batches_per_epoch": batches,
                },
                fix="call scheduler.step() right after optimizer.step(), inside the batch loop "
                "(or build the schedule in epochs if it is meant to be stepped per epoch); under Lightning put "
                "'interval': 'step' inside the lr_scheduler dict",
                where=self._where(probe, sched),
            )


FIRST_STEP_DROP = 4.0  # the first update's rate this many times the second's: a warm-up that came one step late


@register
class RateDropsAfterFirstUpdate(Check):
    """The rate an optimizer's first update used (read at its ``step()``) is FIRST_STEP_DROP or more times the
    rate of its second update, in every group that trains, with no scheduler bound to it: the rate is written by
    hand, and the first value written came after the first update (a warm-up computed after
    ``optimizer.step()`` in a Lightning ``optimizer_step`` or a loop), so the first update ran at the full rate
    and the warm-up only began after it."""

    name = "rate_drops_after_first_update"

    def __init__(self) -> None:
        self.first: dict[int, tuple[list[float], tuple[str | None, int | None]]] = {}  # id(opt) -> rates, step site

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        from expkit.doctor.findings import user_frame

        if ev.index > 2 or any(drives(s, ev.optimizer) for s in list(probe.schedulers)):
            return
        rates = [float(g["lr"]) for g in ev.optimizer.param_groups if any(p.requires_grad for p in g["params"])]
        if ev.index == 1:
            self.first[id(ev.optimizer)] = (rates, user_frame(3))
            return
        first, site = self.first.pop(id(ev.optimizer), (None, (None, None)))
        if not first or len(first) != len(rates):
            return
        if not all(0 < b * FIRST_STEP_DROP <= a for a, b in zip(first, rates, strict=True)):
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the first update used lr {first[0]:.3g} and the second {rates[0]:.3g} "
            f"({first[0] / rates[0]:.3g}x less), set by hand with no scheduler: the rate was written after the "
            "first step, so the first update ran at the full rate and the warm-up began one step late",
            evidence={"lr_first_update": first, "lr_second_update": rates},
            fix="set the step's rate before calling optimizer.step() (in a Lightning optimizer_step override, write "
            "param_groups[...]['lr'] first, then call optimizer.step(closure=optimizer_closure)), or use a LambdaLR",
            where=site if site[0] is not None else None,
        )


@register
class ScheduleStepsBeforeOptimizer(Check):
    """A scheduler's first ``step()`` called before its optimizer ever stepped (``optimizer._opt_called``, the flag
    PyTorch's scheduler keeps for its own warning, which programs often silence): the schedule's first value is
    skipped, every update uses the next one (a warm-up starts one step in, a StepLR decays before training)."""

    name = "schedule_steps_before_optimizer"

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        sched = ev.obj
        if ev.name != "scheduler.step" or sched is None or int(getattr(sched, "_step_count", 0)) != 2:
            return  # _step_count is 1 after construction: 2 right after the program's first step() call
        opt = getattr(sched, "optimizer", None)
        if opt is None or not hasattr(opt.step, "_wrapped_by_lr_sched") or getattr(opt, "_opt_called", False):
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(sched).__name__}.step() ran before the optimizer's first step(): the schedule's first "
            "value is skipped and every update uses the value meant for the next step",
            evidence={"scheduler": type(sched).__name__, "lr_after": float(opt.param_groups[0]["lr"])},
            fix="call scheduler.step() after optimizer.step() (PyTorch >= 1.1 order), at the end of the iteration "
            "or epoch",
        )


def _steps_text(declared: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in declared.items()) or "per batch"


PEAK_SHARE = 0.5  # a schedule that never reaches half the lr it was set to, over the steps it plans
FLOOR_SHARE = 0.05  # any schedule that never reaches 5 % of the lr it was set to, over its first PROJECT_STEPS
PROJECT_STEPS = 10_000  # the steps a schedule is projected over when it declares no planned length


def factor_rules(scheduler: Any) -> list[Any] | None:
    """One callable per param group: step -> the factor the schedule applies to that group's set lr (LambdaLR's
    lambdas; LinearLR as a line from start to end factor), or None for a schedule whose rule is not read here
    (StepLR, cosine, OneCycleLR... start at the set lr or rise to it)."""
    fns = getattr(scheduler, "lr_lambdas", None)
    if type(scheduler).__name__ == "LambdaLR" and fns:
        return list(fns)
    if type(scheduler).__name__ == "LinearLR":
        a, b, n = float(scheduler.start_factor), float(scheduler.end_factor), max(1, int(scheduler.total_iters))
        return [lambda k: a + (b - a) * min(k, n) / n] * len(scheduler.base_lrs)
    return None


def projected_peak(rule: Any, steps: int, stop_at: float) -> float:
    """The largest factor ``rule`` gives over steps 0..steps-1 (stops early once it reaches ``stop_at``)."""
    peak = float("-inf")
    for k in range(steps):
        peak = max(peak, float(rule(k)))
        if peak >= stop_at:
            break
    return peak


@register
class LrNeverReachesSetValue(Check):
    """A schedule whose own rule, projected over its planned steps, never lets the lr near the value set on the
    optimizer: a planned length declared in steps (transformers' warm-up schedules with ``num_training_steps``,
    what the HF Trainer builds from ``max_steps``) whose peak is below PEAK_SHARE of the set lr (the warm-up is
    longer than the run), or any LambdaLR/LinearLR whose factor stays below FLOOR_SHARE of the set lr in every
    param group over its first PROJECT_STEPS steps (a lambda returning the absolute lr, which LambdaLR multiplies
    by the set lr again)."""

    name = "lr_never_reaches_set_value"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        for sched in first_time_driving(probe, ev.optimizer, self.done):
            declared = declared_steps(sched)
            rules = factor_rules(sched)
            if not rules:
                continue
            if self._per_epoch_warmup(probe, sched, rules[0]):
                continue
            total = declared.get("total_steps", 0) if declared else 0
            try:
                if total >= 1:
                    peak = projected_peak(rules[0], total, PEAK_SHARE)
                    if math.isfinite(peak) and peak < PEAK_SHARE:
                        self._report(probe, sched, peak, total, declared or {})
                    continue
                peaks = [projected_peak(rule, PROJECT_STEPS, FLOOR_SHARE) for rule in rules]
            except (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError, KeyError):
                continue
            if peaks and math.isfinite(max(peaks)) and max(peaks) < FLOOR_SHARE:
                self._report(probe, sched, max(peaks), PROJECT_STEPS, None)

    def _per_epoch_warmup(self, probe: Probe, sched: Any, rule: Any) -> bool:
        """Under Lightning with ``interval`` 'epoch' (its default): a rule that does not reach half its set lr within
        the run's epochs, the number of times it will be stepped, and rises higher within its optimizer steps (to
        half the set lr or more; or less, when the warm-up is also longer than the run: batch18/bugs/
        kws_lightning_warmup_scheduler_epoch_interval.py, https://github.com/Lightning-AI/pytorch-lightning/issues/
        5584). Reported, True."""
        epochs, steps = lightning_epochs(sched)
        if epochs is None or steps is None or epochs >= steps:
            return False
        try:
            per_epoch = projected_peak(rule, epochs, PEAK_SHARE)
            per_step = projected_peak(rule, steps, PEAK_SHARE)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError, KeyError):
            return False
        if not (
            math.isfinite(per_epoch) and math.isfinite(per_step) and per_epoch < PEAK_SHARE and per_epoch < per_step
        ):
            return False
        built = probe.built_at(sched)
        # where 'interval': 'step' belongs: the return of the configure_optimizers that built it (of the fitted
        # module's, when the callback's probe started after it was built)
        fitted = lightning_module() if built[0] is None else None
        where = (
            _configure_return(built) or (configure_optimizers_return(fitted) if fitted is not None else None) or built
        )
        base = max([float(b) for b in getattr(sched, "base_lrs", [])] or [0.0])
        per_step_text = (
            "it would reach it: a warm-up written in steps"
            if per_step >= PEAK_SHARE
            else f"it would rise further, to {per_step:.0%} (the warm-up is also longer than this run)"
        )
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(sched).__name__} is stepped once per epoch (Lightning's default interval 'epoch'), "
            f"{epochs} time(s) in this run, and peaks at {per_epoch:.0%} of the lr {base:g} over those steps; "
            f"stepped per optimizer step ({steps} planned) {per_step_text}",
            evidence={"peak_share": per_epoch, "scheduler_steps_planned": epochs, "optimizer_steps_planned": steps},
            fix="return the scheduler as {'scheduler': sched, 'interval': 'step'} in configure_optimizers' "
            "lr_scheduler dict",
            where=where if where[0] is not None else None,
        )
        return True

    def _report(self, probe: Probe, sched: Any, peak: float, steps: int, declared: dict[str, int] | None) -> None:
        where = probe.built_at(sched)
        bases = [float(b) for b in getattr(sched, "base_lrs", [])] or [0.0]
        base = max(bases)
        if declared is not None:
            # the warm-up setting itself, when the call that built the scheduler (or the Trainer) does not show it
            at = keyword_line(where[0], ("warmup_steps", "warmup_ratio", "num_warmup_steps"), where[1])
            where = (where[0], at) if at is not None else where
            message = (
                f"{type(sched).__name__} projected over its {steps} planned steps peaks at lr {base * peak:.3g}, "
                f"{peak:.0%} of the lr {base:g} it was set to ({_steps_text(declared)}): the warm-up is longer "
                "than the run"
            )
            fix = "make the warm-up a fraction of the planned steps (warmup_steps < max_steps), or plan more steps"
            extra: dict[str, Any] = {"planned_steps": steps, **declared}
        else:
            message = (
                f"{type(sched).__name__}'s factor never exceeds {peak:.3g} over its first {steps:,} steps: the "
                f"optimizer runs at lr {base * peak:.3g} at most, {peak:.2%} of the lr {base:g} it was set to "
                "(a LambdaLR lambda returns a factor the set lr is multiplied by, not the lr itself)"
            )
            fix = "return a multiplicative factor from the lambda (decay(step), not lr * decay(step)), or set the lr "
            fix += "you mean on the optimizer"
            extra = {"projected_steps": steps}
        probe.report(
            kind="bug",
            check=self.name,
            message=message,
            evidence={"peak_lr": base * peak, "set_lr": base, "peak_share": peak, **extra},
            fix=fix,
            where=where if where[0] is not None else None,
        )


@register
class CosinePeriodTooShort(Check):
    """A CosineAnnealingLR stepped at every optimizer step whose period ``T_max`` is at most half the planned
    steps (a Lightning Trainer's estimated stepping batches, else one epoch of the program's largest
    DataLoader): a period counted in epochs (``T_max=max_epochs``) stepped per batch, so the lr reaches its
    floor early and then climbs and falls again."""

    name = "cosine_period_too_short"

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}  # id(scheduler) -> its last_epoch at the previous step of its optimizer
        self.done: set[int] = set()

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        import torch

        batches = _planned_steps(probe)
        for sched in list(probe.schedulers):
            if not isinstance(sched, torch.optim.lr_scheduler.CosineAnnealingLR) or not drives(sched, ev.optimizer):
                continue
            key, now = id(sched), int(getattr(sched, "last_epoch", 0))
            before, self.seen[key] = self.seen.get(key), now
            if before is None or now != before + 1 or key in self.done or batches is None:
                continue  # judged from the second step on, once it is seen to advance once per optimizer step
            period = int(sched.T_max)
            if 2 * period > batches:
                continue
            self.done.add(key)
            self._report(probe, sched, period, batches)

    def _report(self, probe: Probe, sched: Any, period: int, batches: int) -> None:
        where = probe.built_at(sched)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"CosineAnnealingLR(T_max={period}) is stepped at every optimizer step, and the run plans "
            f"{batches} steps (an epoch, or the Trainer's estimate): the lr reaches its floor after {period} steps, "
            "then rises and falls again every period (a T_max counted in epochs, stepped per batch)",
            evidence={"T_max": period, "planned_steps": batches, "stepped_per": "optimizer step"},
            fix="set T_max in optimizer steps (epochs x batches per epoch, e.g. trainer.estimated_stepping_batches "
            "in Lightning), or step the scheduler once per epoch (Lightning: interval 'epoch')",
            where=where if where[0] is not None else None,
        )


def lightning_trainer() -> Any:
    """The program's Lightning Trainer, or None: searched through the garbage collector at each call (the checks
    call it in the watched steps only), and only when Lightning is imported."""
    import gc
    import sys

    if "lightning.pytorch" not in sys.modules:
        return None
    trainer_type = sys.modules["lightning.pytorch"].Trainer
    return next((obj for obj in gc.get_objects() if type(obj) is trainer_type and _running(obj)), None)


def lightning_module() -> Any:
    """The LightningModule the fitting Trainer trains, or None."""
    trainer = lightning_trainer()
    return getattr(trainer, "lightning_module", None) if trainer is not None else None


def _running(trainer: Any) -> bool:
    """A Trainer that is fitting now (not one a finished run left behind)."""
    status = getattr(getattr(trainer, "state", None), "status", None)
    return str(getattr(status, "value", status)) == "running"


def lightning_epochs(sched: Any) -> tuple[int | None, int | None]:
    """For a scheduler a Lightning Trainer steps once per epoch: (the epochs the run plans, its optimizer steps);
    (None, None) otherwise (no Trainer, interval 'step', or a plan not known yet)."""
    trainer = lightning_trainer()
    configs = (getattr(trainer, "lr_scheduler_configs", None) or []) if trainer is not None else []
    config = next((c for c in configs if c.scheduler is sched), None)
    if config is None or getattr(config, "interval", "epoch") != "epoch":
        return None, None
    try:
        steps = trainer.estimated_stepping_batches
        batches = trainer.num_training_batches
    except Exception:  # noqa: BLE001 - not set up yet
        return None, None
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in (steps, batches)):
        return None, None
    accumulate = max(1, int(getattr(trainer, "accumulate_grad_batches", 1) or 1))
    epochs = math.ceil(int(steps) * accumulate / int(batches))
    max_epochs = getattr(trainer, "max_epochs", None)
    if isinstance(max_epochs, int) and max_epochs > 0:
        epochs = min(epochs, max_epochs)
    return max(1, epochs), int(steps)


def lightning_planned_steps() -> int | None:
    """A fitting Lightning Trainer's ``estimated_stepping_batches`` (optimizer steps, accumulation counted), or
    None without one."""
    trainer = lightning_trainer()
    if trainer is None:
        return None
    try:
        planned = trainer.estimated_stepping_batches
    except Exception:  # noqa: BLE001 - not set up yet
        return None
    return int(planned) if isinstance(planned, (int, float)) and math.isfinite(planned) and planned > 0 else None


def _planned_steps(probe: Probe) -> int | None:
    """The steps the run plans: a Lightning Trainer's ``estimated_stepping_batches`` when one exists, else one
    epoch of the largest DataLoader."""
    return lightning_planned_steps() or probe.dataloader_batches()
