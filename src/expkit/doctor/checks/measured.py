"""Checks of a measured property of the loss's inputs and of the schedule (issue 32): a regression loss whose
prediction and target differ in shape (they broadcast, every row fit to other rows' targets); a softmax or
log-softmax over the batch axis feeding a classification loss (found by the tensor's ``grad_fn``, not by its
values); attention weights softmaxed over another axis than the one their matmul sums over; a learning-rate
schedule that is zero for a stretch of the planned steps (projected from the scheduler object, not waited for)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.lr_schedule import declared_steps, first_time_driving, lightning_planned_steps
from expkit.doctor.findings import user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, LossEvent, Probe, StepEvent

REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits")
CLASSIFICATION = ("cross_entropy", "nll_loss")
SOFTMAX_NODES = ("SoftmaxBackward0", "LogSoftmaxBackward0")
WALK = 8  # graph nodes followed up from a loss input to its softmax
GRAPH_LIMIT = 2_000  # autograd nodes searched from a backward for a softmax over the batch
PROJECTED_STEPS = 200  # steps of the schedule projected from the first step
ZERO_RUN = 10  # consecutive projected steps at lr 0 that make a finding
DROP = 0.25  # a projected lr at or above this share of the base just before the zero run: it drops to 0 at once
EPOCH_DECAY = 0.1  # an epoch-written schedule stepped per batch that falls to this share of its lr in two epochs


@register
class LossBroadcast(Check):
    """A regression or binary loss given a prediction and a target of different shapes (PyTorch only warns):
    the loss broadcasts them to a shape the prediction does not have."""

    name = "loss_broadcast"

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        t = ev.target
        if ev.function not in REGRESSION or not isinstance(t, torch.Tensor) or t.shape == ev.input.shape:
            return
        if t.dim() == 0:
            return  # a scalar target (fit everything to one value) is what it says
        try:
            shape = torch.broadcast_shapes(ev.input.shape, t.shape)
        except RuntimeError:
            return  # the loss raises on its own
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"{ev.function} got a prediction of shape {list(ev.input.shape)} and a target of shape "
                f"{list(t.shape)}: they broadcast to {list(shape)}, so each prediction is compared with other "
                "rows' targets"
            ),
            evidence={"input_shape": list(ev.input.shape), "target_shape": list(t.shape), "broadcast": list(shape)},
            fix="give the target the prediction's shape (target.view_as(pred), unsqueeze(1) or squeeze(-1))",
        )


def _softmax_over_batch(t: torch.Tensor) -> Any:
    """The Softmax/LogSoftmax node a few steps above ``t`` that normalised over dim 0 of a batch, or None."""
    node, steps = t.grad_fn, 0
    while node is not None and steps < WALK:
        if type(node).__name__ in SOFTMAX_NODES:
            dim = int(getattr(node, "_saved_dim", 1))
            result = getattr(node, "_saved_result", None)
            ndim = result.dim() if isinstance(result, torch.Tensor) else t.dim()
            if isinstance(result, torch.Tensor) and result.shape[0] != t.shape[0]:
                return None  # its axis 0 is not the loss's batch (time-major scores softmaxed over time)
            return node if ndim >= 2 and dim in (0, -ndim) else None
        nxt = [n for n, _ in node.next_functions if n is not None and type(n).__name__ != "AccumulateGrad"]
        node, steps = (nxt[0] if nxt else None), steps + 1
    return None


@register
class SoftmaxOverBatch(Check):
    """A classification loss whose input comes from a softmax/log-softmax over dim 0, the batch axis: each class
    is normalised across the samples instead of each sample across the classes."""

    name = "softmax_over_batch"

    def __init__(self) -> None:
        self.reported = False
        self.batch: int | None = None  # axis 0 of the last training forward's output

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        from expkit.doctor.checks.perturb import _first

        out = _first(ev.output)  # the model's output: batch-first even when its input is time-major
        if ev.training and ev.grad_enabled and out is not None and out.dim() >= 1:
            self.batch = int(out.shape[0])

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        """A loss written by hand (a policy gradient's ``-(logp * adv)``): any softmax/log-softmax in the graph
        over dim 0 of a (batch, classes) tensor whose classes are not the batch again (a contrastive (B, B) matrix
        is softmaxed over either axis on purpose). Named where the softmax was made (anomaly mode's record)."""
        batch = self.batch
        if self.reported or batch is None or batch < 2 or ev.tensor.grad_fn is None:
            return
        from expkit.doctor.checks.graph_kept import graph_nodes, made_where

        for node in graph_nodes(ev.tensor.grad_fn, GRAPH_LIMIT):
            if type(node).__name__ not in SOFTMAX_NODES:
                continue
            result = getattr(node, "_saved_result", None)
            dim = int(getattr(node, "_saved_dim", 1))
            if not isinstance(result, torch.Tensor) or result.dim() < 2 or dim not in (0, -result.dim()):
                continue
            if result.shape[0] != batch or result.shape[1] in (1, batch):
                continue
            self.reported = True
            where = made_where(node)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"a {type(node).__name__[:-9].lower()} over dim 0 of a {list(result.shape)} tensor, whose "
                f"axis 0 is the batch ({batch}), feeds the loss: each class is normalised across the samples "
                "instead of each sample across its classes",
                evidence={"batch": batch, "shape": list(result.shape)},
                fix="normalise over the class axis (dim=-1)",
                where=where if where[0] is not None else None,
            )
            return

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if self.reported or ev.function not in CLASSIFICATION or ev.input.dim() < 2 or ev.input.shape[0] < 2:
            return
        node = _softmax_over_batch(ev.input)
        if node is None:
            return
        module = probe.softmax_nodes.get(id(node))
        made = probe.made_at.get(id(module)) if module is not None else None
        file, line = user_line_of(made[1]) if made else (None, None)
        self.reported = True
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"the input of {ev.function} comes from a {type(node).__name__[:-9].lower()} over dim 0, the batch "
                f"axis (batch {ev.input.shape[0]}): each class is normalised across samples"
            ),
            evidence={"batch": int(ev.input.shape[0]), "classes": int(ev.input.shape[1])},
            fix="normalise over the class axis (dim=-1 or dim=1)",
            where=(file, line) if file is not None else None,
        )


def _lr_rule(sched: Any) -> Any:
    """The lr of the first param group at scheduler step ``k``, as a function of ``k``, from the scheduler's own
    rule (LambdaLR, and the closed forms of StepLR, MultiStepLR, ExponentialLR); None for others."""
    lr_sched = torch.optim.lr_scheduler
    base = float(sched.base_lrs[0])
    if isinstance(sched, lr_sched.LambdaLR):
        return lambda k: base * float(sched.lr_lambdas[0](k))
    if isinstance(sched, lr_sched.StepLR):
        return lambda k: base * sched.gamma ** (k // sched.step_size)
    if isinstance(sched, lr_sched.ExponentialLR):
        return lambda k: base * sched.gamma**k
    if isinstance(sched, lr_sched.MultiStepLR):
        marks = sorted(sched.milestones.elements())
        return lambda k: base * sched.gamma ** sum(k >= m for m in marks)
    return None


def _projected_lrs(sched: Any, opt: torch.optim.Optimizer) -> list[float] | None:
    """The lr of the first param group over the planned steps (declared by the schedule, as transformers'
    ``num_training_steps``; else the first PROJECTED_STEPS), from the scheduler's own rule (:func:`_lr_rule`);
    None for others. A schedule that reaches 0 at its planned end is not projected past it."""
    rule = _lr_rule(sched)
    planned = (declared_steps(sched) or {}).get("total_steps")
    return [rule(k) for k in range(planned if planned else PROJECTED_STEPS)] if rule is not None else None


def _epoch_decay(sched: Any, batches: int | None) -> float | None:
    """For a schedule written in epochs (StepLR, MultiStepLR, ExponentialLR), its lr after ``batches`` steps as
    a share of its base: what it becomes when it is stepped with the optimizer."""
    lr_sched = torch.optim.lr_scheduler
    if not batches or not isinstance(sched, (lr_sched.StepLR, lr_sched.MultiStepLR, lr_sched.ExponentialLR)):
        return None
    base = float(sched.base_lrs[0])
    return float(_lr_rule(sched)(batches)) / base if base > 0 else None


# what lies between attention weights and the matmul that applies them without moving an axis
WEIGHT_PATH = (
    "ViewBackward0",
    "UnsafeViewBackward0",
    "ExpandBackward0",
    "ReshapeAliasBackward0",
    "CloneBackward0",
    "NativeDropoutBackward0",
    "ToCopyBackward0",
)


def _signed(dim: int) -> int:
    """An autograd node's saved ``dim`` (a negative one reads back as an unsigned 64-bit integer)."""
    return dim - (1 << 64) if dim >= 1 << 63 else dim


def _weights_softmax(matmul: Any) -> Any:
    """The softmax node whose output is ``matmul``'s first operand (through views, expands, dropout), else None."""
    node = matmul.next_functions[0][0] if matmul.next_functions else None
    for _ in range(WALK):
        if node is None:
            return None
        name = type(node).__name__
        if name == "SoftmaxBackward0":
            return node
        scaled = name in ("MulBackward0", "DivBackward0") and all(n is None for n, _ in node.next_functions[1:])
        if not (name in WEIGHT_PATH or scaled) or not node.next_functions:
            return None  # a constant factor (dropout's mask on the CPU, a mask) keeps the weights' axes
        node = node.next_functions[0][0]
    return None


@register
class AttentionSoftmaxAxis(Check):
    """Attention weights softmaxed over another axis than the one the following matmul sums over: ``softmax(scores,
    dim=1) @ v`` on (batch, heads, queries, keys) scores normalises across the heads, so no query's weights over
    the keys sum to 1. Measured on the backward's graph: a softmax (3+ axes) whose output, through views and
    dropout only, is the first operand of a matmul, which sums over its last axis; named where the softmax was
    made."""

    name = "attention_softmax_axis"

    def __init__(self) -> None:
        self.reported = False

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        if self.reported or ev.tensor.grad_fn is None:
            return
        from expkit.doctor.checks.graph_kept import graph_nodes, made_where

        for node in graph_nodes(ev.tensor.grad_fn, GRAPH_LIMIT):
            if type(node).__name__ not in ("BmmBackward0", "MmBackward0"):
                continue
            soft = _weights_softmax(node)
            result = getattr(soft, "_saved_result", None) if soft is not None else None
            if not isinstance(result, torch.Tensor) or result.dim() < 3:
                continue
            dim = _signed(int(soft._saved_dim)) % result.dim()
            if dim == result.dim() - 1 or result.shape[dim] < 2 or result.shape[-1] < 2:
                continue
            self.reported = True
            where = made_where(soft)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"a softmax over dim {dim} of a {list(result.shape)} tensor is the left operand of a matmul, "
                f"which sums over its last axis ({result.shape[-1]}): the weights are normalised across axis {dim}, "
                "so no row of weights the matmul applies sums to 1 (attention scores softmaxed over the heads or "
                "the queries instead of the keys)",
                evidence={"softmax_dim": dim, "shape": list(result.shape)},
                fix="softmax the scores over the keys: softmax(scores, dim=-1)",
                where=where if where[0] is not None else None,
            )
            return


@register
class LrScheduleZero(Check):
    """A scheduler whose learning rate, projected over the planned steps from its own rule, is zero for
    ZERO_RUN or more consecutive steps (a gamma of 0, a warm-up factor with integer division).

    A rate that drops to 0 at once (from the start, or from DROP of its base or more) is reported where the
    scheduler was built. A rate that decays toward 0 (an exponential or step decay, 1e-12 of its base after many
    steps) is a bug only when it is stepped faster than it was written for: reported at a ``step()`` call seen
    within the watched steps (per batch), never when no call came (stepped per epoch, round fifteen: batch18/clean/
    lightning_manual_opt_timeseries_gan.py, https://github.com/Lightning-AI/pytorch-lightning/pull/6294). A decay
    that lands on 0 (linear or cosine to its end) is a bug only where the run goes on past it: before the end of a
    known plan, or of one epoch of the largest DataLoader when no plan is declared. A zero run that starts within
    ZERO_RUN steps of the run's known plan (a declared ``num_training_steps``, a Lightning Trainer's estimated
    optimizer steps) is the schedule's planned end (batch18/clean/lightning_forecaster_accumulation_with_step_
    warmup.py, https://github.com/Lightning-AI/pytorch-lightning/issues/1476: projected 200 steps past its 88)."""

    name = "lr_schedule_zero"

    def __init__(self) -> None:
        self.done: set[int] = set()
        # id(scheduler) -> (it, zero from step or plan, projected steps or batches, kind): judged at its next step()
        self.pending: dict[int, tuple[Any, int, int, str]] = {}

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        for sched in first_time_driving(probe, ev.optimizer, self.done):
            try:
                lrs = _projected_lrs(sched, ev.optimizer)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                continue
            if not lrs or not lrs[0] >= 0:
                continue
            base = float(sched.base_lrs[0])
            batches = probe.dataloader_batches()
            declared = (declared_steps(sched) or {}).get("total_steps")
            lightning = lightning_planned_steps()
            if declared and batches and 2 * declared <= batches and lightning is None:
                # a plan of steps shorter than half an epoch (num_training_steps=epochs): judged at a step()
                # seen within the watch (stepped with the optimizer, it ends long before the first epoch does)
                self.pending[id(sched)] = (sched, declared, batches, "short_plan")
                continue
            start = _zero_run(lrs, base)
            if start is None:
                decay = _epoch_decay(sched, 2 * batches if batches else None)
                if decay is not None and decay <= EPOCH_DECAY and lightning is None:
                    self.pending[id(sched)] = (sched, 0, batches or 0, "epoch_decay")
                continue
            plan = declared or lightning
            if plan is not None and start + ZERO_RUN > plan:
                continue  # the schedule's planned end
            if start > 0 and lrs[start - 1] < DROP * base:
                if lrs[start] == 0.0:
                    # a decay that lands on 0 (linear, cosine to its end): a bug only where the run goes on past
                    # it, known from a plan, or at least one epoch of the largest DataLoader
                    plan = plan or probe.dataloader_batches()
                    if plan is None or start + ZERO_RUN > plan:
                        continue
                else:
                    # a decay that reaches 0 only by being stepped often (a per-epoch StepLR stepped per batch):
                    # the cause is where it is stepped, seen at its next step() within the watch
                    self.pending[id(sched)] = (sched, start, len(lrs), "zero")
                    continue
            self._report(probe, sched, start, len(lrs), probe.built_at(sched), False)

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name != "scheduler.step" or ev.obj is None or id(ev.obj) not in self.pending:
            return
        from expkit.doctor.checks.sampler_epoch import inside_an_epoch_loop
        from expkit.doctor.findings import raw_stack, user_frame

        sched, start, projected, kind = self.pending.pop(id(ev.obj))
        site = user_frame(3)
        if kind == "short_plan":
            # a plan the user wrote (not a Trainer's max_steps), stepped per batch inside an epoch loop (a single
            # pass that breaks at its planned steps ends with its schedule)
            if _built_by_user(probe, sched) and inside_an_epoch_loop(raw_stack(2)):
                self._report_short_plan(probe, sched, start, projected)
        elif kind == "epoch_decay":
            if inside_an_epoch_loop(raw_stack(2)):  # stepped per batch in a run of several epochs
                self._report_epoch_decay(probe, sched, projected, site)
        else:
            stepped = site[0] is not None
            self._report(probe, sched, start, projected, site if stepped else probe.built_at(sched), stepped)

    def _report_short_plan(self, probe: Probe, sched: Any, plan: int, batches: int) -> None:
        """A schedule planned in steps (transformers' ``num_training_steps``) over fewer than half an epoch's
        batches, stepped with the optimizer: the plan was counted in epochs; named at the argument."""
        from expkit.doctor.findings import argument_made_at

        file, line = probe.built_at(sched)
        line = argument_made_at(file, line, "num_training_steps", position=2) or line
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(sched).__name__} plans {plan} steps and is stepped with the optimizer, but one epoch of "
            f"the program's DataLoader is {batches} batches: the lr reaches the end of its schedule (0) after "
            f"{plan} steps and every later step changes nothing (a plan counted in epochs, stepped per batch)",
            evidence={"planned_steps": plan, "batches_per_epoch": batches},
            fix="plan the schedule in optimizer steps: num_training_steps = epochs * len(loader) (divided by the "
            "accumulation steps)",
            where=(file, line) if file is not None else None,
        )

    def _report_epoch_decay(self, probe: Probe, sched: Any, batches: int, site: tuple[str | None, int | None]) -> None:
        """A StepLR/MultiStepLR/ExponentialLR stepped per batch inside an epoch loop that falls to EPOCH_DECAY of
        its lr or less within two epochs: written in epochs (step_size=5 for 'every 5 epochs'); named at the
        step() call."""
        share = _epoch_decay(sched, 2 * batches) or 0.0
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(sched).__name__} is stepped here, with the optimizer, and its rule is written in "
            f"scheduler steps (step_size {getattr(sched, 'step_size', '-')}, gamma {getattr(sched, 'gamma', '-')}): "
            f"over two epochs of {batches} batches the lr falls to {share:.2g} of its value, and toward 0 in the "
            "epochs after (a schedule meant per epoch, stepped per batch)",
            evidence={"lr_share_after_two_epochs": share, "batches_per_epoch": batches},
            fix="step an epoch-based schedule once per epoch, after the batch loop (or give it a step_size in "
            "optimizer steps)",
            where=site if site[0] is not None else None,
        )

    def finish(self, probe: Probe) -> None:
        self.pending.clear()  # decays never stepped within the watch: stepped per epoch, as written

    def _report(
        self, probe: Probe, sched: Any, start: int, projected: int, where: tuple[str | None, int | None], stepped: bool
    ) -> None:
        """``stepped``: ``where`` is the user's ``step()`` call, the cause of a decay that ran out."""
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"{type(sched).__name__} projects lr 0 from step {start} for {ZERO_RUN}+ steps "
                f"(base lr {sched.base_lrs[0]:g}): those steps change nothing"
                + (
                    f"; it decays every {getattr(sched, 'step_size', 1)} step() call(s) and is stepped here, with "
                    "the optimizer: a schedule meant in epochs, stepped per batch, runs out within the first epochs"
                    if stepped
                    else ""
                )
            ),
            evidence={"zero_from_step": start, "base_lr": float(sched.base_lrs[0]), "projected": projected},
            fix="check the schedule's factor (a gamma of 0, an integer division in a warm-up lambda), or step an "
            "epoch-based schedule once per epoch, outside the batch loop",
            where=where if where[0] is not None else None,
        )


SCHEDULE_FACTORIES = ("/torch/optim/", "/transformers/optimization.py", "/diffusers/optimization.py")


def _built_by_user(probe: Probe, sched: Any) -> bool:
    """Whether the code that asked for ``sched`` is the user's: the first frame of its construction outside the
    schedule factories (torch's schedulers, transformers' ``get_*_schedule_with_warmup``) is the user's own, not
    a library's (the HF Trainer builds its schedule from its own ``max_steps``)."""
    from expkit.diagnose.tracebacks import classify_frame

    made = probe.made_at.get(id(sched))
    for path, _ in made[1] if made else ():
        if any(part in path.replace("\\", "/") for part in SCHEDULE_FACTORIES) or "/expkit/" in path:
            continue
        return classify_frame(path) == "yours"
    return False


def _zero_run(lrs: list[float], base: float) -> int | None:
    """The first step of ZERO_RUN consecutive projected steps at lr 0 (or 1e-12 of the base), or None."""
    tiny = abs(base) * 1e-12
    run = 0
    for k, lr in enumerate(lrs):
        run = run + 1 if math.isfinite(lr) and abs(lr) <= tiny else 0
        if run >= ZERO_RUN and base > 0:
            return k - ZERO_RUN + 1
    return None
