"""Data-parallel replicas that disagree (issue 32, DDP on gloo): each rank's probe sends, at every watched
optimizer step, a digest of the weights it steps from, the gradients it steps on and the first training input of
the step (``rank_state`` events); the parent compares the ranks of one run (:func:`rank_findings`). Replicas
must start equal (DDP broadcasts rank 0's weights), step on equal gradients (the all-reduce) and see different
samples (a DistributedSampler). A rank that bypasses DDP's forward, a backward that never syncs, an unbroadcast
start or a loader that is not sharded shows as a measured difference (or sameness), named at the line that
caused it where the probe saw it: the bypassing forward, the ``no_sync()`` call, the model's construction, the
DataLoader's construction."""

from __future__ import annotations

import gc
from collections import defaultdict
from typing import TYPE_CHECKING, Any, ClassVar

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import Finding, user_frame, user_line_of

if TYPE_CHECKING:
    import torch

    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, Probe, StepEvent

REL_TOL = 1e-6  # digests of equal tensors are equal bit for bit; this only absorbs a reduction's last bit


def _world() -> tuple[int, int] | None:
    """``(rank, world size)`` of an initialized process group of two or more ranks, else None."""
    import torch

    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return dist.get_rank(), dist.get_world_size()


def _digest(tensors: list[torch.Tensor]) -> list[float]:
    """``[sum, sum of |x|, elements]`` in float64: equal tensors give equal digests."""
    total = absolute = 0.0
    n = 0
    for t in tensors:
        d = t.detach().double()
        total += float(d.sum())
        absolute += float(d.abs().sum())
        n += t.numel()
    return [total, absolute, float(n)]


def _ddp_around(module: torch.nn.Module) -> Any:
    """The DistributedDataParallel that wraps ``module``, if any (found through the garbage collector)."""
    from torch.nn.parallel import DistributedDataParallel as ddp_type

    for obj in gc.get_objects():
        if issubclass(type(obj), ddp_type) and obj.module is module:  # type(), not __class__
            return obj
    return None


def _wrapped_params(probe: Probe) -> set[int]:
    """The ids of the parameters the program's DistributedDataParallel models hold."""
    from torch.nn.parallel import DistributedDataParallel as ddp_type

    return {id(p) for r in list(probe.roots.values()) if isinstance(r, ddp_type) for p in r.parameters()}


def _ddp_holding(module: torch.nn.Module) -> bool:
    """Whether a DistributedDataParallel wraps ``module`` or a module above it."""
    from torch.nn.parallel import DistributedDataParallel as ddp_type

    return any(
        issubclass(type(obj), ddp_type) and any(m is module for m in obj.module.modules()) for obj in gc.get_objects()
    )


def _site(where: tuple[str | None, int | None]) -> list[Any] | None:
    return None if where[0] is None else [where[0], where[1]]


@register
class RankState(Check):
    """The child side: one ``rank_state`` event per watched step of each optimizer, under a process group of
    two or more ranks."""

    name = "ranks_out_of_sync"
    reports: ClassVar[dict[str, str]] = {
        "ranks_same_batch": "Every DDP rank trains on the same batch (no DistributedSampler).",
        "ranks_shards_overlap": "DDP ranks' data shards overlap (a sampler seeded or split per rank).",
    }

    def __init__(self) -> None:
        self.inputs: list[float] | None = None
        self.bypass: list[Any] | None = None  # the forward that called a DDP-wrapped module directly
        self.no_sync_call: list[Any] | None = None  # the last no_sync() call
        self.unsynced: list[Any] | None = None  # ... when a backward ran under it since the last step
        self.by_hand: list[Any] | None = None  # torch.autograd.grad over DDP-wrapped parameters since the last step
        self.order: dict[int, int] = {}  # id(optimizer) -> its place among the optimizers (same on every rank)
        self.sampler_seed: int | None = None  # the seed of the shuffling DistributedSampler this rank iterated
        self.loaded: list[Any] | None = None  # a load_state_dict into a DDP-wrapped module, after the wrap

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if _world() is None or not (ev.training and ev.grad_enabled):
            return
        x = ev.first_tensor()
        if self.inputs is None and x is not None:
            self.inputs = _digest([x])
        from torch.nn.parallel import DistributedDataParallel as ddp_type

        if self.bypass is None and not isinstance(ev.module, ddp_type) and _ddp_around(ev.module) is not None:
            self.bypass = _site(user_frame(3))

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "ddp.no_sync":
            self.no_sync_call = _site(user_frame(3))
        elif ev.name == "autograd_grad" and self._of_ddp(probe, ev):
            self.by_hand = _site(user_frame(3))  # DDP all-reduces in backward(); autograd.grad bypasses it
        elif ev.name == "module.load_state_dict" and _world() is not None and _ddp_holding(ev.obj):
            self.loaded = _site(user_frame(3))  # after the wrap: DDP broadcast rank 0's weights before it
        elif ev.name == "sampler.iter" and getattr(ev.obj, "shuffle", False):
            self.sampler_seed = int(getattr(ev.obj, "seed", 0))

    @staticmethod
    def _of_ddp(probe: Probe, ev: CallEvent) -> bool:
        """Whether a ``torch.autograd.grad`` call took gradients of parameters a DDP wrapper holds."""

        inputs = ev.args[1] if len(ev.args) > 1 else ev.kwargs.get("inputs")
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        held = _wrapped_params(probe)
        return any(id(t) in held for t in inputs)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        from torch.nn.parallel import DistributedDataParallel as ddp_type

        for root in list(probe.roots.values()):
            if isinstance(root, ddp_type) and not root.require_backward_grad_sync:
                self.unsynced = self.no_sync_call or _site(user_frame(3))

    def _unhooked(self, probe: Probe, ev: StepEvent) -> list[Any] | None:
        """Where a parameter the optimizer steps was put into a DDP-wrapped module after the wrap (DDP hooked
        the parameters it saw at construction; a replaced one is never all-reduced)."""
        from torch.nn.parallel import DistributedDataParallel as ddp_type

        stepped = {id(p) for p in ev.params}
        for root in list(probe.roots.values()):
            if not isinstance(root, ddp_type):
                continue
            hooked = {id(p) for p in getattr(root, "_module_parameters", root.parameters())}
            for p in root.module.parameters():
                if id(p) in stepped and id(p) not in hooked and id(p) in probe.origins:
                    return _site(user_line_of(probe.origins[id(p)][1]))
        return None

    @staticmethod
    def _outside_ddp(probe: Probe, ev: StepEvent) -> list[Any] | None:
        """Where the module was built whose parameters this optimizer steps, with gradients, outside every DDP
        wrapper of the program (a loss with learnable weights, a head kept beside the wrapped body): nothing
        all-reduces their gradients."""
        from torch.nn.parallel import DistributedDataParallel as ddp_type

        roots = list(probe.roots.values())
        wrapped = _wrapped_params(probe)
        if not wrapped:
            return None
        outside = {id(p) for p in ev.params if p.grad is not None and id(p) not in wrapped}
        for root in roots:
            if isinstance(root, ddp_type) or not any(id(p) in outside for p in root.parameters()):
                continue
            made = probe.made_at.get(id(root))
            if made is not None and not _ddp_holding(root):
                return _site(user_line_of(made[1]))
        return None

    @staticmethod
    def _seeded_at(probe: Probe) -> list[Any] | None:
        """Without a DataLoader, the inputs are drawn in the loop from the global generator: the program's last
        seeding call (the same seed on every rank makes every rank draw the same batch)."""
        from expkit.doctor.checks.rng_reset import RngReseededEveryStep

        rng = next((c for c in probe.checks if isinstance(c, RngReseededEveryStep)), None)
        site = rng.last_site if rng is not None else None
        return _site(user_line_of(site)) if site else None

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        world = _world()
        if world is None:
            return
        grads = [p.grad for p in ev.params if p.grad is not None]
        place = self.order.setdefault(id(ev.optimizer), len(self.order))
        roots = probe.trained_roots()
        made = probe.made_at.get(id(roots[0])) if roots else None
        loaders = [probe.made_at[id(d)] for d in list(probe.dataloaders) if id(d) in probe.made_at]
        probe.sink(
            {
                "event": "rank_state",
                "step": ev.index,
                "optimizer": f"{type(ev.optimizer).__name__}#{place}",
                "dist_rank": world[0],
                "world": world[1],
                "weights": _digest(list(ev.params)),
                "grads": _digest(grads) if grads else None,
                "lrs": [float(g.get("lr", 0.0)) for g in ev.optimizer.param_groups],
                "inputs": self.inputs,
                "sampler_seed": self.sampler_seed,
                "sites": {
                    "grads": self.unsynced
                    or self.bypass
                    or self.by_hand
                    or self._unhooked(probe, ev)
                    or self._outside_ddp(probe, ev)
                    or _site(user_frame(3)),
                    "lrs": _site(user_frame(3)),
                    "weights": _site(user_line_of(made[1])) if made else None,
                    "weights_loaded": self.loaded,
                    "inputs": _site(user_line_of(max(loaders)[1])) if loaders else self._seeded_at(probe),
                },
            }
        )
        self.inputs = self.bypass = self.unsynced = self.by_hand = None


def _close(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None or len(a) != len(b):
        return a is b
    return all(abs(x - y) <= REL_TOL * max(1.0, abs(x), abs(y)) for x, y in zip(a, b, strict=True))


def _where(site: list[Any] | None) -> tuple[str | None, int | None]:
    return (str(site[0]), int(site[1])) if site else (None, None)


def rank_findings(events: list[dict[str, Any]]) -> list[Finding]:
    """The parent side: compare the ``rank_state`` events of every rank, step by step (one finding per kind).

    Replicas out of sync: weights that differ before the first step (nothing broadcast them), else gradients
    that differ at a step whose weights agreed (no all-reduce). Same batch: the first training input of every
    watched step equal on all ranks."""
    by_step: dict[tuple[str, int], dict[int, dict[str, Any]]] = defaultdict(dict)
    for ev in events:
        if ev.get("event") == "rank_state":
            by_step[(ev["optimizer"], int(ev["step"]))][int(ev["dist_rank"])] = ev
    findings: list[Finding] = []
    out_of_sync = same_batch = False
    same_steps = 0
    for (_opt, step), ranks in sorted(by_step.items(), key=lambda kv: kv[0][1]):
        if len(ranks) < 2:
            continue
        states = [ranks[r] for r in sorted(ranks)]
        first = states[0]
        if not out_of_sync and not all(_close(first["weights"], s["weights"]) for s in states[1:]):
            if step == 1:
                findings.append(_finding(first, "weights", step, states))
                out_of_sync = True
        elif not out_of_sync and not all(_close(first["grads"], s["grads"]) for s in states[1:]):
            findings.append(_finding(first, "grads", step, states))
            out_of_sync = True
        elif not out_of_sync and not all(_close(first.get("lrs"), s.get("lrs")) for s in states[1:]):
            findings.append(_finding(first, "lrs", step, states))
            out_of_sync = True
        if first["inputs"] is not None and all(_close(first["inputs"], s["inputs"]) for s in states[1:]):
            same_steps += 1
            if not same_batch and same_steps >= 2:
                same_batch = True
                site = next((s["sites"]["inputs"] for s in states if s["sites"].get("inputs")), None)
                file, line = _where(site)
                findings.append(
                    Finding(
                        kind="bug",
                        check="ranks_same_batch",
                        message=f"all {len(states)} ranks trained on the same input at {same_steps} watched steps: "
                        "the data is not sharded across ranks, so data parallelism repeats one batch",
                        file=file,
                        line=line,
                        evidence={"ranks": len(states), "steps_with_equal_inputs": same_steps},
                        fix="give the DataLoader a DistributedSampler(dataset) (rank and world size from the process "
                        "group) and call sampler.set_epoch(epoch) each epoch",
                        step=step,
                    )
                )
    overlap = _seeds_differ(by_step)
    if overlap is not None and not same_batch:
        findings.append(overlap)
    return findings


def _seeds_differ(by_step: dict[tuple[str, int], dict[int, dict[str, Any]]]) -> Finding | None:
    """Ranks whose shuffling DistributedSampler holds different seeds: each rank shuffles the data set its own
    way before taking its slice, so the shards overlap and some samples are never seen in an epoch."""
    for (_opt, step), ranks in sorted(by_step.items(), key=lambda kv: kv[0][1]):
        seeds = {r: ev.get("sampler_seed") for r, ev in ranks.items()}
        if len(ranks) < 2 or None in seeds.values() or len(set(seeds.values())) < 2:
            continue
        site = next((ev["sites"]["inputs"] for ev in ranks.values() if ev["sites"].get("inputs")), None)
        file, line = _where(site)
        return Finding(
            kind="bug",
            check="ranks_shards_overlap",
            message=f"the {len(ranks)} ranks' DistributedSamplers shuffle with different seeds "
            f"({[seeds[r] for r in sorted(seeds)]}): each rank permutes the data set its own way before taking its "
            "slice, so the shards overlap (samples repeated across ranks, others never seen in the epoch)",
            file=file,
            line=line,
            evidence={"ranks": len(ranks), "seeds_by_rank": [seeds[r] for r in sorted(seeds)]},
            fix="give every rank the same seed (DistributedSampler(dataset, seed=SEED), not a seed derived from "
            "the rank); set_epoch(epoch) changes the shuffle each epoch",
            step=step,
        )
    return None


def _finding(first: dict[str, Any], what: str, step: int, states: list[dict[str, Any]]) -> Finding:
    loaded = next((s["sites"]["weights_loaded"] for s in states if s["sites"].get("weights_loaded")), None)
    site = (loaded if what == "weights" else None) or next(
        (s["sites"][what] for s in states if s["sites"].get(what)), None
    )
    file, line = _where(site)
    spread = [s.get(what) if what == "lrs" else (s[what][1] if s[what] else None) for s in states]
    if what == "lrs":
        message = (
            f"the {len(states)} ranks stepped with different learning rates at step {step} (on equal, all-reduced "
            "gradients): the rate is computed from something each rank has its own of (its own data progress, "
            "its own step count or clock), so the replicas drift apart"
        )
        fix = "compute the learning rate from values every rank shares (the global step, or counts all-reduced)"
    elif what == "weights":
        message = f"the {len(states)} replicas' weights differ before the first step: " + (
            "weights were loaded into the wrapped model after DDP broadcast rank 0's (on some ranks only, or "
            "different weights on each), so the ranks train different models"
            if loaded
            else "each rank built its own model and nothing broadcast rank 0's weights, so the ranks train "
            "different models"
        )
        fix = (
            "load the checkpoint on every rank before wrapping the model in DistributedDataParallel"
            if loaded
            else "wrap the model in DistributedDataParallel (it broadcasts rank 0's weights) or broadcast every "
            "parameter"
        )
    else:
        message = (
            f"the {len(states)} ranks stepped on different gradients at step {step}: the gradients were not "
            "all-reduced (a forward that bypasses the DDP wrapper, every backward under no_sync(), parameters "
            "outside every wrapper, or gradients taken with torch.autograd.grad and assigned by hand), so the "
            "replicas drift apart"
        )
        fix = (
            "call the DDP-wrapped model (not model.module) and let the last backward of each step run outside no_sync()"
        )
    return Finding(
        kind="bug",
        check="ranks_out_of_sync",
        message=message,
        file=file,
        line=line,
        evidence={
            "ranks": len(states),
            "step": step,
            ("lrs_by_rank" if what == "lrs" else f"{what}_abs_sum_by_rank"): spread,
        },
        fix=fix,
        step=step,
    )


@register
class DdpGradientsReducedAgain(Check):
    """Under DistributedDataParallel, ``dist.all_reduce`` called on a gradient DDP already averaged (between a
    backward and the step): a hand-written sync left over from before the port, so each step uses world-size
    times the gradient (with SUM), or the same average again at the cost of a second all-reduce."""

    name = "ddp_gradients_reduced_again"

    def start(self, probe: Probe) -> None:
        import torch

        if torch.distributed.is_available():
            probe.patch(torch.distributed, "all_reduce", self._wrap(probe))

    def _wrap(self, probe: Probe) -> Any:
        check = self

        def make(original: Any) -> Any:
            def all_reduce(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                if probe.active and probe.backwards_since_step > 0:
                    try:
                        check._judge(probe, tensor, args, kwargs)
                    except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's all_reduce
                        probe.check_failed(check.name, exc)
                return original(tensor, *args, **kwargs)

            return all_reduce

        return make

    def _judge(self, probe: Probe, tensor: Any, args: Any, kwargs: Any) -> None:
        from torch.nn.parallel import DistributedDataParallel as ddp_type

        world = _world()
        if world is None:
            return  # one rank: an all-reduce changes nothing
        for root in list(probe.roots.values()):
            if not isinstance(root, ddp_type) or not root.require_backward_grad_sync:
                continue
            if any(p.grad is tensor for p in root.parameters() if p.requires_grad):
                op = args[0] if args else kwargs.get("op")
                probe.report(
                    kind="bug",
                    check=self.name,
                    message="dist.all_reduce on a gradient that DistributedDataParallel already averaged over the "
                    f"ranks in backward (op {getattr(op, 'name', op) or 'SUM'}): with SUM each step uses "
                    f"{world[1]} times the averaged gradient, an lr raised by the "
                    "world size",
                    evidence={"world_size": world[1], "op": str(op) if op is not None else "SUM"},
                    fix="remove the hand-written gradient all-reduce: DDP averages the gradients during backward",
                    where=user_frame(2),  # the first of the user's frames above this one
                )
                return
