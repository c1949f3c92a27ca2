"""The probe: global PyTorch hooks that turn a training loop's first optimizer steps into events for
the checks, and hand their findings to a sink (a JSONL file in the child of ``expkit doctor``, a list
for :func:`expkit.doctor.watch`).

Hooks used, all process-wide and removed once the watched steps are over (so the rest of the run pays
nothing): ``register_module_forward_pre_hook``/``register_module_forward_hook`` (top-level forwards and
which modules ran with grad), ``register_optimizer_step_pre_hook``/``_post_hook``, and thin wrappers on
``Tensor.backward``, ``Tensor.item``, the losses of ``torch.nn.functional``, and the calls some checks
watch (:func:`_watched_calls`: gradient clipping, GradScaler's scale/unscale, a DistributedSampler's
epochs, DataLoader batches).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.loss import _Loss

from expkit.doctor.checks import Check, all_checks
from expkit.doctor.child import DEFAULT_WATCH_STEPS
from expkit.doctor.findings import (
    Finding,
    FindingKind,
    RawStack,
    construction_stack,
    raw_stack,
    user_frame,
    user_line_of,
)

__all__ = ["DEFAULT_WATCH_STEPS", "BackwardEvent", "CallEvent", "ForwardEvent", "LossEvent", "Probe", "StepEvent"]

LOSS_FUNCTIONS = (
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy_with_logits",
    "binary_cross_entropy",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "ctc_loss",
    "kl_div",
)
Sink = Callable[[dict[str, Any]], None]
BOUNDED_ACTIVATIONS = (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.Softplus)  # output ranges checked against the targets
MAX_DETACHES = 64  # detach() calls remembered between two steps (a cut that explains a missing gradient)
MAX_EXEC_ORDER = 10_000  # module forwards remembered between two steps (their order names where a gradient died)


@dataclass
class ForwardEvent:
    module: nn.Module
    inputs: tuple[Any, ...]
    output: Any
    training: bool
    grad_enabled: bool
    kwargs: dict[str, Any] = field(default_factory=dict)

    def first_training(self, seen: set[int]) -> bool:
        """Whether this is the module's first training forward (train mode, grad enabled) that ``seen`` has not
        seen; the module is then added to ``seen``, so a check replaying it does so once per model."""
        if not (self.training and self.grad_enabled) or id(self.module) in seen:
            return False
        seen.add(id(self.module))
        return True

    def first_tensor(self) -> torch.Tensor | None:
        """The first tensor argument, positional first, then keyword (``model(input_ids=...)``)."""
        for x in (*self.inputs, *self.kwargs.values()):
            if isinstance(x, torch.Tensor):
                return x
        return None


@dataclass
class LossEvent:
    function: str
    input: torch.Tensor
    target: torch.Tensor | None
    value: torch.Tensor
    kwargs: dict[str, Any]


@dataclass
class BackwardEvent:
    tensor: torch.Tensor
    first_after_step: bool


@dataclass
class StepEvent:
    optimizer: torch.optim.Optimizer
    index: int  # this optimizer's step count, 1-based
    params: list[torch.Tensor] = field(default_factory=list)


@dataclass
class CallEvent:
    """A watched call returned: ``name`` is a key of :func:`_watched_calls` (``clip_grad_norm_``), ``obj`` the
    instance for a method (the GradScaler, the sampler), ``args``/``kwargs`` as called, ``result`` its value."""

    name: str
    obj: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: Any


def _watched_calls() -> dict[str, tuple[Any, str]]:
    """name -> (owner, attribute) of every call sent to ``Check.on_call``."""
    import torch.nn.utils as nn_utils
    import torch.nn.utils.clip_grad as clip_grad
    from torch.utils.data import dataloader, distributed

    return {
        "clip_grad_norm_": (nn_utils, "clip_grad_norm_"),
        "clip_grad.clip_grad_norm_": (clip_grad, "clip_grad_norm_"),
        "clip_grad_value_": (nn_utils, "clip_grad_value_"),
        "clip_grad.clip_grad_value_": (clip_grad, "clip_grad_value_"),
        "scaler.scale": (torch.amp.GradScaler, "scale"),
        "scaler.unscale_": (torch.amp.GradScaler, "unscale_"),
        "sampler.iter": (distributed.DistributedSampler, "__iter__"),
        "loader.next": (dataloader._BaseDataLoaderIter, "__next__"),
        "loader.iter": (dataloader.DataLoader, "__iter__"),
        "ddp.no_sync": (torch.nn.parallel.DistributedDataParallel, "no_sync"),
        "scheduler.step": (torch.optim.lr_scheduler.LRScheduler, "step"),
        "plateau.step": (torch.optim.lr_scheduler.ReduceLROnPlateau, "step"),  # its own step, not LRScheduler's
        "optimizer.zero_grad": (torch.optim.Optimizer, "zero_grad"),
        "autograd_grad": (torch.autograd, "grad"),  # a function: no instance argument (no dot in the name)
        "module.load_state_dict": (nn.Module, "load_state_dict"),
    }


class _Outermost:
    """A wrapped function's original, run with a flag that says whether a call of it is already running: a
    torch-function mode hands a patched function back to itself (``handle_torch_function`` calls the patched
    attribute), and only the outermost call may send an event."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.running = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        before, self.running = self.running, True
        try:
            return self.original(*args, **kwargs)
        finally:
            self.running = before


class _ProbeData(property):
    """The probe's ``tensor.data`` (a type of its own, so ``uninstall`` removes only what it put there)."""


def _error_event(check: str, exc: BaseException) -> dict[str, Any]:
    return {"event": "check_error", "check": check, "error": f"{type(exc).__name__}: {exc}"}


class Probe:
    """Watches the first ``watch_steps`` optimizer steps of whatever trains in this process.

    The first optimizer that steps leads: when it has stepped ``watch_steps`` times the checks finish and
    every hook is removed. Errors inside a check never reach the user's program; they are sent to the
    sink as ``check_error`` events and shown in the report.
    """

    def __init__(
        self,
        *,
        watch_steps: int = DEFAULT_WATCH_STEPS,
        sink: Sink,
        checks: list[str] | None = None,
        after_watch: bool = False,
        steps_before: int = 0,
    ) -> None:
        if watch_steps < 1:
            raise ValueError(f"watch_steps must be >= 1, got {watch_steps}")
        self.watch_steps = watch_steps
        self.sink = sink
        registry = all_checks()
        self.checks: list[Check] = [registry[n]() for n in (checks or list(registry))]
        self.active = False
        self.finished = False
        self.step = 0  # steps of the leading optimizer
        self.lead: Any = None
        self.optimizers: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()
        self._stepping: list[int] = []  # ids of the optimizers whose step() runs now, outermost first
        # embeddings built while armed, by id (a WeakValueDictionary: a module is never hashed mid-construction)
        self.embeddings: weakref.WeakValueDictionary[int, nn.Module] = weakref.WeakValueDictionary()
        self.softmax_nodes: dict[int, nn.Module] = {}  # id(grad_fn of a Softmax/LogSoftmax module's output)
        self.activation_nodes: dict[int, nn.Module] = {}  # id(grad_fn of a bounded activation module's output)
        self.dataloaders: weakref.WeakSet[Any] = weakref.WeakSet()
        self.schedulers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.roots: weakref.WeakValueDictionary[int, nn.Module] = weakref.WeakValueDictionary()
        self.called_with_grad: set[int] = set()
        self.backwards_since_step = 0
        self.steps_by_optimizer: dict[int, int] = {}
        self._depth = 0
        self._loss_depth = 0  # of the forwards running now, those of loss modules (nn.CrossEntropyLoss ...)
        self.loss_module: nn.Module | None = None  # the outermost loss module running now (a loss call's owner)
        self._in_check = False
        self._seen: set[tuple[str, str | None, int | None]] = set()
        # provenance (checks/provenance.py): where objects were made or assigned, where the graph was cut
        self.origins: dict[int, tuple[int, RawStack]] = {}  # id -> (order, stack) of a module attribute set
        self.made_at: dict[int, tuple[int, RawStack]] = {}  # id -> (order, stack): optimizer, scheduler
        self.call_sites: dict[int, RawStack] = {}  # id(module not under its root) -> where it was called
        self.owner: dict[int, nn.Module] = {}  # id(param) -> the unregistered module that holds it
        self.ran_modules: dict[int, nn.Module] = {}  # modules with parameters that ran since the last step
        self.exec_order: list[nn.Module] = []  # every module whose forward returned since the last step, in order
        self.constant_outputs: set[int] = set()  # parameter-free layers whose output was the same for every sample
        # ids of module outputs that left their forward with no graph behind them (a frozen embedding's output): an
        # activation made to require grad later (enable_input_require_grads' hook) is not a weight
        self.leaf_outputs: set[int] = set()
        self.ran_without_grad: dict[int, RawStack | None] = {}  # ... under no_grad: where it was entered
        self.cut_sites: list[RawStack] = []  # detach()/item() on a grad-carrying tensor inside a forward
        self._runs: dict[str, _Outermost] = {}  # each watched call's original, with its running flag
        self.detaches: list[tuple[Any, RawStack]] = []  # every detach() of a computed tensor: (its grad_fn, where)
        # ``tensor.data = value`` with a value that carries a graph (which the write drops), since the last step
        self.graph_data_writes: list[tuple[Any, RawStack]] = []  # (value's grad_fn, where)
        self.nograd_site: RawStack | None = None  # where the open no_grad that disabled grad was entered
        self._nograd_ctx: Any = None
        self.apply_site: RawStack | None = None  # the last Module.apply(...) after the first step
        self.eval_sites: dict[int, RawStack] = {}  # id(module) -> where train(False)/eval() was last called on it
        self._order = 0
        self._registered: dict[int, set[int]] = {}  # id(root) -> ids of its modules
        self._root_modules: set[int] | None = None
        self._handles: list[Any] = []
        self._restore: list[tuple[Any, str, Any]] = []
        self._t0 = time.perf_counter()
        # a program run under doctor (not an in-process watch()) keeps two light hooks once the watch is over
        self.after_watch = after_watch
        self.after: Any = None  # those hooks (after_watch.AfterWatch)
        self.steps_before = steps_before  # a second watch's: the steps the program took before it (findings' step)

    # ---- reporting -------------------------------------------------------------------------------
    def report(
        self, *, kind: FindingKind, check: str, message: str, evidence: dict[str, Any], fix: str, where: Any = None
    ) -> None:
        """Send one finding (once per check and user line). ``where`` is ``(file, line)``, the cause the check
        traced; default: the stack. The stack's user line is also kept as where the symptom showed when it differs."""
        seen_file, seen_line = user_frame(2)
        file, line = where if where is not None else (seen_file, seen_line)
        if seen_file is None or (seen_file, seen_line) == (file, line):
            seen_file, seen_line = None, None
        key = (check, file, line)
        if key in self._seen:
            return
        self._seen.add(key)
        clean = {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in evidence.items()}
        finding = Finding(
            kind=kind,
            check=check,
            message=message,
            file=file,
            line=line,
            evidence=clean,
            fix=fix,
            step=self.steps_before + self.step + (0 if self.lead is None else 1),
            seen_file=seen_file,
            seen_line=seen_line,
        )
        self.sink({"event": "finding", **finding.to_json()})

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """The doctor's own work (a check's judgement, a replay of the program's code): no event is dispatched
        and no wrapper records what runs inside it."""
        before, self._in_check = self._in_check, True
        try:
            yield
        finally:
            self._in_check = before

    def _dispatch(self, method: str, *args: Any) -> None:
        if self._in_check or not self.active:
            return
        with self.quiet():
            for check in self.checks:
                try:
                    getattr(check, method)(self, *args)
                except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's training
                    self.sink(_error_event(check.name, exc))

    # ---- what checks ask -------------------------------------------------------------------------
    def optimizer_param_ids(self) -> set[int]:
        return {id(p) for opt in list(self.optimizers) for g in opt.param_groups for p in g["params"]}

    @property
    def inside_forward(self) -> bool:
        """A module's forward is running (a loss computed now is the model's own, as an HF causal LM's); a loss
        module's own forward (``nn.CrossEntropyLoss()(logits, y)``) is the user's loss, not a model's."""
        return self._depth > self._loss_depth

    def trained_roots(self) -> list[nn.Module]:
        """Top-level modules whose parameters some optimizer holds."""
        held = self.optimizer_param_ids()
        return [m for m in list(self.roots.values()) if any(id(p) in held for p in m.parameters())]

    def built_at(self, obj: Any) -> tuple[str | None, int | None]:
        """The user's line where ``obj`` (an optimizer, scheduler, DataLoader or module built while the probe was
        armed) was made, else ``(None, None)``."""
        made = self.made_at.get(id(obj))
        return user_line_of(made[1]) if made else (None, None)

    def dataloader_batches(self) -> int | None:
        """The largest ``len()`` of the DataLoaders built in this process (None: none, or no length)."""
        sizes = []
        for dl in list(self.dataloaders):
            try:
                sizes.append(len(dl))
            except TypeError:
                continue
        return max(sizes) if sizes else None

    # ---- hooks -----------------------------------------------------------------------------------
    def install(self) -> None:
        """Install every hook and wrapper (idempotent per probe)."""
        if self.active or self.finished:
            return
        from torch.nn.modules import module as module_mod
        from torch.optim import optimizer as optimizer_mod

        self._handles = [
            module_mod.register_module_forward_pre_hook(self._forward_pre),
            module_mod.register_module_forward_hook(self._forward_post, with_kwargs=True, always_call=True),
            optimizer_mod.register_optimizer_step_pre_hook(self._step_pre),
            optimizer_mod.register_optimizer_step_post_hook(self._step_post),
        ]
        self._patch(torch.Tensor, "backward", self._wrap_backward)
        self._patch(torch.Tensor, "item", self._wrap_item)
        self._patch(torch.optim.Optimizer, "__init__", self._wrap_init(self.optimizers, record=True))
        self._patch(torch.utils.data.DataLoader, "__init__", self._wrap_init(self.dataloaders, record=True))
        self._patch(torch.optim.lr_scheduler.LRScheduler, "__init__", self._wrap_init(self.schedulers, record=True))
        # ReduceLROnPlateau builds itself without LRScheduler.__init__: only where it was made is recorded (the
        # checks that read self.schedulers project rule-based schedules, which it is not)
        self._patch(torch.optim.lr_scheduler.ReduceLROnPlateau, "__init__", self._wrap_init(None, record=True))
        self._patch(nn.Module, "__setattr__", self._wrap_setattr)
        self._patch(nn.Module, "__init__", self._wrap_module_init)
        self._patch(torch.Tensor, "detach", self._wrap_cut)
        with contextlib.suppress(Exception):  # a probe's bookkeeping must never break the program
            self._patch_data_property()
        self._patch(torch.autograd.grad_mode.no_grad, "__enter__", self._wrap_no_grad)
        self._patch(torch.autograd.grad_mode.no_grad, "__exit__", self._wrap_no_grad_exit)
        self._patch(nn.Module, "apply", self._wrap_apply)
        self._patch(nn.Module, "train", self._wrap_train)
        for name in LOSS_FUNCTIONS:
            self._patch(F, name, self._wrap_loss(name))
        for call, (owner, attr) in _watched_calls().items():
            self._patch(owner, attr, self._wrap_call(call.removeprefix("clip_grad.")))
        self.active = True
        self._dispatch("start")

    def uninstall(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        if isinstance(torch.Tensor.__dict__.get("data"), _ProbeData):
            delattr(torch.Tensor, "data")  # the base class's own descriptor serves again
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore = []
        self.active = False

    def finish(self) -> None:
        """End the watch: let the checks report what was pending, remove the hooks, tell the sink."""
        if self.finished:
            return
        self._dispatch("finish")
        self.finished = True
        self.uninstall()
        self.sink({"event": "watch_done", "steps": self.step, "watch_s": time.perf_counter() - self._t0})

    def check_failed(self, check: str, exc: BaseException) -> None:
        """A check's own error, caught inside a wrapper it installed: shown in the report, never raised into
        the user's program."""
        self.sink(_error_event(check, exc))

    def call_running(self, name: str) -> bool:
        """Whether a watched call (a key of ``_watched_calls``: ``autograd_grad``) is running now: tensor hooks
        fire inside ``torch.autograd.grad`` too, and what it computes never reaches ``.grad``."""
        run = self._runs.get(name)
        return run is not None and run.running

    def patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Replace ``owner.name`` with ``make(original)`` until the watch ends (a check that needs to see a call
        the probe does not watch, e.g. ``Module.load_state_dict``, patches it in its ``start``)."""
        self._patch(owner, name, make)

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = owner.__dict__[name] if name in owner.__dict__ else getattr(owner, name)
        self._restore.append((owner, name, original))
        setattr(owner, name, make(original))

    def _wrap_init(self, registry: weakref.WeakSet[Any] | None, record: bool = False) -> Callable[[Any], Any]:
        probe = self

        def make(original: Any) -> Any:
            def __init__(obj: Any, *args: Any, **kwargs: Any) -> None:
                original(obj, *args, **kwargs)
                if registry is not None:
                    registry.add(obj)
                if record and probe.active:
                    probe._order += 1
                    probe.made_at[id(obj)] = (probe._order, raw_stack(2))

            return __init__

        return make

    def _wrap_module_init(self, original: Any) -> Any:
        """Record where each module was built. Nothing here may hash or inspect the half-built object beyond
        its type (torchmetrics' Metric hashes its state, which does not exist yet when nn.Module.__init__ returns)."""
        probe = self

        def __init__(obj: Any, *args: Any, **kwargs: Any) -> None:
            original(obj, *args, **kwargs)
            if probe.active:
                probe._order += 1
                with contextlib.suppress(Exception):  # recording must never break the program
                    probe.made_at[id(obj)] = (probe._order, construction_stack(obj, 2))
                if isinstance(obj, (nn.Embedding, nn.EmbeddingBag)):
                    with contextlib.suppress(Exception):  # recording must never break the program
                        probe.embeddings[id(obj)] = obj

        return __init__

    def _wrap_setattr(self, original: Any) -> Any:
        """Record where a module, a tensor, or a list/tuple/dict of them was assigned to a module attribute
        (the line that keeps layers in a plain list, or replaces a head after the optimizer was built)."""
        probe = self

        def __setattr__(module: nn.Module, name: str, value: Any) -> None:
            original(module, name, value)
            if probe.active and not probe._in_check:
                with contextlib.suppress(Exception):  # recording must never break the program
                    probe._record_assignment(value)

        return __setattr__

    def _record_assignment(self, value: Any) -> None:
        kinds = (nn.Module, torch.Tensor)
        items = list(value.values()) if isinstance(value, dict) else value
        if isinstance(value, kinds):
            items = [value]
        elif not isinstance(items, (list, tuple)) or not any(isinstance(v, kinds) for v in items):
            return
        self._order += 1
        where = (self._order, raw_stack(3))
        for v in items:
            if isinstance(v, kinds):
                self.origins[id(v)] = where

    def _wrap_cut(self, original: Any) -> Any:
        probe = self

        def detach(tensor: torch.Tensor) -> torch.Tensor:
            if probe.active and tensor.requires_grad and not probe._in_check:
                if probe._depth > 0:
                    probe.cut_sites.append(raw_stack(2))
                if tensor.grad_fn is not None and len(probe.detaches) < MAX_DETACHES:
                    probe.detaches.append((tensor.grad_fn, raw_stack(2)))
            return original(tensor)

        return detach

    def _patch_data_property(self) -> None:
        """``tensor.data`` inside a forward, on a tensor that carries a graph: a cut like ``detach()`` (the getter
        of TensorBase's descriptor is shadowed on ``torch.Tensor`` while armed, and removed by ``uninstall``); and
        ``tensor.data = value`` with a value that carries a graph (``graph_data_writes``)."""
        if "data" in torch.Tensor.__dict__:
            return  # someone else shadows it already: leave it alone
        base = torch._C.TensorBase.__dict__["data"]
        probe = self

        def get(tensor: torch.Tensor) -> torch.Tensor:
            if probe.active and probe._depth > 0 and not probe._in_check and tensor.requires_grad:
                probe.cut_sites.append(raw_stack(2))
            return base.__get__(tensor, type(tensor))

        def set_(tensor: torch.Tensor, value: torch.Tensor) -> None:
            node = getattr(value, "grad_fn", None)
            if probe.active and not probe._in_check and node is not None and len(probe.graph_data_writes) < 16:
                probe.graph_data_writes.append((node, raw_stack(2)))  # p.data -= lr * g runs this setter too
            base.__set__(tensor, value)

        torch.Tensor.data = _ProbeData(get, set_)  # type: ignore[assignment]

    def _wrap_apply(self, original: Any) -> Any:
        probe = self

        def apply(module: nn.Module, fn: Any) -> Any:
            if probe.active and probe.lead is not None and not probe._in_check:
                probe.apply_site = raw_stack(2)
            return original(module, fn)

        return apply

    def _wrap_train(self, original: Any) -> Any:
        """Record where a module was put in eval mode (``eval()`` calls ``train(False)``)."""
        probe = self

        def train(module: nn.Module, mode: bool = True) -> Any:
            if probe.active and not probe._in_check:
                if mode:
                    probe.eval_sites.pop(id(module), None)
                else:
                    probe.eval_sites[id(module)] = raw_stack(2)
            return original(module, mode)

        return train

    def _wrap_no_grad(self, original: Any) -> Any:
        probe = self

        @functools.wraps(original)  # TorchScript compiles a scripted class's `with torch.no_grad()` from
        # the source of __wrapped__ (inspect.getsourcelines unwraps): this wrapper's own body does not script
        def __enter__(ctx: Any) -> None:
            if probe.active and not probe._in_check and torch.is_grad_enabled():
                probe.nograd_site, probe._nograd_ctx = raw_stack(2), ctx
            return original(ctx)

        return __enter__

    def _wrap_no_grad_exit(self, original: Any) -> Any:
        """The ``no_grad`` that disabled grad is left: a later module that runs without grad (autograd Function's
        forward, reentrant checkpointing) is placed at its own call, not at this stale site."""
        probe = self

        @functools.wraps(original)
        def __exit__(ctx: Any, *exc: Any) -> Any:
            if probe._nograd_ctx is ctx:
                probe.nograd_site, probe._nograd_ctx = None, None
            return original(ctx, *exc)

        return __exit__

    def _wrap_backward(self, original: Any) -> Any:
        probe = self

        run = _Outermost(original)

        def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if probe.active and not probe._in_check and not run.running:
                first = probe.backwards_since_step == 0 and probe.lead is not None
                probe._dispatch("on_backward", BackwardEvent(tensor=tensor, first_after_step=first))
                probe.backwards_since_step += 1
            return run(tensor, *args, **kwargs)

        backward.__wrapped__ = original  # type: ignore[attr-defined]
        return backward

    def _wrap_item(self, original: Any) -> Any:
        probe = self

        def item(tensor: torch.Tensor) -> Any:
            if probe.active and not probe._in_check and probe._depth > 0 and tensor.requires_grad:
                probe.cut_sites.append(raw_stack(2))
            if probe.active and not probe._in_check and tensor.device.type != "cpu":
                probe._dispatch("on_item", tensor)
            return original(tensor)

        return item

    def _wrap_call(self, name: str) -> Callable[[Any], Any]:
        probe = self
        is_method = "." in name  # scaler.scale, sampler.iter: the first argument is the instance

        def make(original: Any) -> Any:
            run = probe._runs[name] = _Outermost(original)

            def call(*args: Any, **kwargs: Any) -> Any:
                outermost = not run.running
                result = run(*args, **kwargs)
                if outermost and probe.active and not probe._in_check:
                    obj, rest = (args[0], args[1:]) if is_method and args else (None, args)
                    probe._dispatch("on_call", CallEvent(name, obj, tuple(rest), kwargs, result))
                return result

            call.__wrapped__ = original  # type: ignore[attr-defined]
            return call

        return make

    def _wrap_loss(self, name: str) -> Callable[[Any], Any]:
        probe = self

        def make(original: Any) -> Any:
            run = _Outermost(original)
            try:
                names = list(inspect.signature(original).parameters)
            except (TypeError, ValueError):
                names = []

            def loss_fn(*args: Any, **kwargs: Any) -> Any:
                outermost = not run.running
                value = run(*args, **kwargs)
                if outermost and probe.active and not probe._in_check:
                    inp = args[0] if args else kwargs.get("input")
                    target = args[1] if len(args) > 1 else kwargs.get("target")
                    if isinstance(inp, torch.Tensor) and isinstance(value, torch.Tensor):
                        # the arguments after the first two by name, as given (nn.CTCLoss passes its blank by position)
                        rest = {k: v for k, v in zip(names[2:], args[2:], strict=False)}
                        rest |= {k: v for k, v in kwargs.items() if k not in ("input", "target")}
                        probe._dispatch("on_loss", LossEvent(name, inp, target, value, rest))
                return value

            loss_fn.__wrapped__ = original  # type: ignore[attr-defined]
            return loss_fn

        return make

    def _forward_pre(self, module: nn.Module, inputs: Any) -> None:
        if self._depth == 0 and not self._in_check:
            known = self._registered.get(id(module))
            if known is None:
                known = self._registered[id(module)] = {id(m) for m in module.modules()}
            self._root_modules = known
        self._depth += 1
        if isinstance(module, _Loss):
            self._loss_depth += 1
            if self._loss_depth == 1:
                self.loss_module = module

    def _note_module(self, module: nn.Module, grad: bool) -> None:
        """Which modules with parameters ran since the last step, under no_grad or outside their root."""
        if len(self.exec_order) < MAX_EXEC_ORDER:
            self.exec_order.append(module)
        if not module._parameters:
            return
        self.ran_modules[id(module)] = module
        if not grad:
            self.ran_without_grad[id(module)] = self.nograd_site or raw_stack(3)  # no open no_grad: the call
        if self._depth > 0 and self._root_modules is not None and id(module) not in self._root_modules:
            if id(module) not in self.call_sites:
                self.call_sites[id(module)] = raw_stack(3)
            for p in module._parameters.values():
                if p is not None:
                    self.owner[id(p)] = module

    def _note_constant(self, module: nn.Module, output: torch.Tensor) -> None:
        """A parameter-free layer on the training path whose output is the same for every sample of the batch
        (a softmax over one unit, a dropout of 1): the gradient dies there (``zero_gradient`` names it)."""
        if output.requires_grad and output.is_floating_point() and output.dim() >= 1 and output.shape[0] > 1:
            with torch.no_grad():
                if bool((output == output[:1]).all()):
                    self.constant_outputs.add(id(module))

    def _forward_post(self, module: nn.Module, inputs: Any, kwargs: Any, output: Any = None) -> None:
        # output is absent when the forward raised (an always_call hook still runs)
        self._depth = max(0, self._depth - 1)
        if isinstance(module, _Loss):
            self._loss_depth = max(0, self._loss_depth - 1)
            if self._loss_depth == 0:
                self.loss_module = None
        if self._in_check:
            return
        grad = torch.is_grad_enabled()
        self._note_module(module, grad)
        if grad and not module._parameters and not module._modules and isinstance(output, torch.Tensor):
            self._note_constant(module, output)
        if (
            grad
            and isinstance(output, torch.Tensor)
            and output.grad_fn is None
            and len(self.leaf_outputs) < MAX_EXEC_ORDER
        ):
            self.leaf_outputs.add(id(output))
        if isinstance(module, (nn.Softmax, nn.LogSoftmax)) and isinstance(output, torch.Tensor):
            self.softmax_nodes[id(output.grad_fn)] = module
        if isinstance(module, BOUNDED_ACTIVATIONS) and isinstance(output, torch.Tensor) and output.grad_fn is not None:
            self.activation_nodes[id(output.grad_fn)] = module
        if grad:
            self.called_with_grad.add(id(module))
        if self._depth == 0 and next(module.parameters(), None) is not None:
            if grad and module.training:
                self.roots[id(module)] = module
            ev = ForwardEvent(module, tuple(inputs), output, module.training, grad, dict(kwargs or {}))
            self._dispatch("on_forward", ev)

    def _params_of(self, opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for g in opt.param_groups for p in g["params"]]

    def _nested_step(self, opt: torch.optim.Optimizer, pre: bool) -> bool:
        """Whether this step runs inside another optimizer's step (ZeroRedundancyOptimizer steps its local
        shard's optimizer, a Lookahead its inner one): the program stepped the outer one, which is watched;
        the inner one, its parameters a shard or a copy, is not an optimizer of the program's."""
        stack = self._stepping
        if pre:
            if id(opt) in stack:  # a step that raised left it there: start afresh
                stack.clear()
            stack.append(id(opt))
            return len(stack) > 1
        if stack and stack[-1] == id(opt):
            stack.pop()
        return bool(stack)

    def _step_pre(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._nested_step(opt, pre=True):
            return
        self.optimizers.add(opt)
        if self.lead is None:
            self.lead = weakref.ref(opt)
        n = self.steps_by_optimizer.get(id(opt), 0) + 1
        self._dispatch("on_step_pre", StepEvent(opt, n, self._params_of(opt)))

    def _step_post(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._nested_step(opt, pre=False):
            return
        n = self.steps_by_optimizer.get(id(opt), 0) + 1
        self.steps_by_optimizer[id(opt)] = n
        self._dispatch("on_step_post", StepEvent(opt, n, self._params_of(opt)))
        self.backwards_since_step = 0
        self.called_with_grad = set()
        self.ran_modules = {}
        self.exec_order = []
        self.constant_outputs = set()
        self.leaf_outputs = set()
        self.ran_without_grad = {}
        self.cut_sites = []
        self.detaches = []
        self.graph_data_writes = []
        if self.lead is not None and self.lead() is opt:
            self.step = n
            self.sink({"event": "step", "step": n})
        if self._watch_over():
            self.finish()
            if self.after_watch:
                from expkit.doctor.after_watch import AfterWatch

                self.after = AfterWatch(self).install()  # an eval() left behind by a later validation

    def _watch_over(self) -> bool:
        """The leading optimizer took its watched steps, and so did every other optimizer that stepped (a GAN's
        second optimizer is watched too), or the leader took four times as many (one that steps rarely)."""
        if self.step < self.watch_steps:
            return False
        others = all(k >= self.watch_steps for k in self.steps_by_optimizer.values())
        return others or self.step >= 4 * self.watch_steps
