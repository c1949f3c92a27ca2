"""Checks that measure the trained model by replaying its first training forward with one input changed
(issue 32): a sample's outputs must not change when another sample of the batch changes (batch-first data in
a time-first RNN, a softmax over the batch axis, a reshape across the batch), and a model trained on next
tokens must not change its output at position t when tokens after t change (a causal mask left out or built
the wrong way, a convolution padded on both sides). The replays run without grad, with the same random
state (dropout masks match) and batch norm on its running statistics; the module that first shows the
change, with inputs that do not, names the line."""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import init_attribute_line, is_user_file, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, LossEvent, Probe

REL_TOL = 1e-4  # a change smaller than this share of the output's scale is rounding
NEXT_VALUE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss")  # a forecaster's regression on the next value
SHIFT_MATCH = 0.9  # share of targets equal to the next input token that marks next-token training
BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def _first(x: Any) -> torch.Tensor | None:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, dict):
        x = [x["logits"]] if "logits" in x else list(x.values())
    if isinstance(x, (list, tuple)):
        return next((t for t in (_first(v) for v in x) if t is not None), None)
    return None


def _changed(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype == torch.bool or b.dtype == torch.bool:  # a mask: changed where any entry flips
        return a.shape == b.shape and bool((a != b).any())
    scale = float(a.detach().abs().max()) if a.numel() else 0.0
    return a.shape == b.shape and bool(((a - b).abs() > REL_TOL * max(scale, 1e-6)).any())


MASKING_FILL = -1e4  # a masked_fill value above this (0, -1, -e) leaves a masked score inside the softmax


class _MaskSites(TorchFunctionMode):
    """During a replay: the user line that made each boolean (or ``tril``/``triu``) tensor, and each
    ``masked_fill``/``where`` with its fill value, numbered in the order ops ran (``self.clock``)."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0
        self.made: dict[int, tuple[str | None, int | None]] = {}  # id(mask tensor) -> the line that made it
        self.fills: list[tuple[int, tuple[str | None, int | None], float | None]] = []  # (clock, line, value)
        self.keep: list[torch.Tensor] = []  # the recorded masks stay alive, so their ids stay theirs
        self.made_at_clock: list[tuple[int, tuple[str | None, int | None]]] = []  # (clock, line) of each mask made

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.clock += 1
        name = getattr(func, "__name__", "")
        filled = name in ("masked_fill", "masked_fill_")
        if not filled and not (isinstance(out, torch.Tensor) and (out.dtype == torch.bool or name in ("tril", "triu"))):
            return out
        caller = user_line_of(raw_stack(2)[:1])  # only ops the user's own code called (not torch's internals)
        if caller[0] is None:
            return out
        if filled:
            value = args[2] if len(args) > 2 else (kwargs or {}).get("value")
            self.fills.append((self.clock, caller, float(value) if isinstance(value, (int, float)) else None))
        else:
            self.made[id(out)] = caller
            self.made_at_clock.append((self.clock, caller))
            self.keep.append(out)
        return out


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# torch's own wrappers between a user's call and the op (``F.normalize`` -> handle_torch_function), and the doctor's
# (shape_ops wraps Tensor.view/reshape): skipped when looking for the caller; a frame in any other torch file (a
# layer's forward) makes the op torch's, not the user's
_PASS_THROUGH = (
    *(_TORCH_DIR + f for f in ("overrides.py", "nn/functional.py", "functional.py", "_tensor.py", "_jit_internal.py")),
    os.path.dirname(os.path.dirname(__file__)) + os.sep,
)


def _tensors(x: Any) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def op_caller(yours: dict[str, bool], skip: int) -> tuple[str | None, int | None]:
    """For a ``__torch_function__`` ``skip`` frames up: the user's line that called the op, (None, None) when torch
    itself did (a layer's forward). ``yours`` caches which files are the user's."""
    frame = sys._getframe(skip)
    while frame is not None and frame.f_code.co_filename.startswith(_PASS_THROUGH):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None, None
    path = frame.f_code.co_filename
    if path not in yours:
        yours[path] = is_user_file(path)
    return (path, frame.f_lineno) if yours[path] else (None, None)


def close_mode(mode: TorchFunctionMode) -> None:
    """Switch off a recording mode a check entered by hand (its ``on`` set to False) and leave the mode stack:
    from the top, every switched-off mode exits. A mode entered after ours and still open (the program's own, or
    another check's that closes later) keeps ours on the stack, switched off, until it leaves too; two checks'
    modes that open at one forward and close at one backward exit in either order."""
    mode.on = False  # type: ignore[attr-defined]
    stack = _get_current_function_mode_stack()
    while stack and getattr(stack[-1], "on", True) is False:
        stack[-1].__exit__(None, None, None)
        stack = _get_current_function_mode_stack()


class FirstUserOp(TorchFunctionMode):
    """A recording mode a check enters by hand: the first op the user's own code called for which :meth:`match`
    gives a record, kept with its line as ``self.found`` (``((file, line), record)``). The program's op always
    runs first and its result is returned unchanged; ``close_mode`` switches the mode off and leaves it."""

    def __init__(self) -> None:
        super().__init__()
        self.on = True
        self.yours: dict[str, bool] = {}
        self.found: tuple[tuple[str, int], Any] | None = None

    @property
    def line(self) -> tuple[str, int] | None:
        return self.found[0] if self.found is not None else None

    def match(self, func: Any, args: tuple[Any, ...], out: Any) -> Any:
        """What to record of this op (any value but None), or None when it is not the op sought."""
        raise NotImplementedError

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if not self.on or self.found is not None:
            return out
        record = self.match(func, tuple(args), out)
        if record is not None:
            file, line = op_caller(self.yours, 2)
            if file is not None and line is not None:
                self.found = ((file, line), record)
        return out


class _UserOps(TorchFunctionMode):
    """During a replay: each torch op the user's own code called (in a forward or a function it calls), as
    ``("op", (file, line), its tensor inputs, its first tensor output)``, in the order ops ran; the replay's
    module hooks add ``("module", module, (input,), output, call stack)`` to the same list."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]] = []
        self.yours: dict[str, bool] = {}

    def _caller(self) -> tuple[str | None, int | None]:
        return op_caller(self.yours, 3)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        first = _first(out)
        if first is not None:
            name = getattr(func, "__name__", "")
            if name.endswith("_") and not name.startswith("__") and args and args[0] is first:
                # an in-place op (zeros_like(h).index_add_(...)): the op that made the tensor did not make what
                # it holds now, so its record no longer says what it output
                self.events = [(k, w, i, None if o is first else o, s) for k, w, i, o, s in self.events]
                args = args[1:]  # nor is what it holds now its input
            line = self._caller()
            if line[0] is not None:
                self.events.append(("op", line, _tensors((args, kwargs or {})), first, None))
        return out


def replay_target(module: nn.Module) -> nn.Module:
    """The module a replay calls: a DistributedDataParallel's inner module (DDP's own forward broadcasts the
    buffers in place on every rank, which breaks the program's pending backward, and a collective run by one rank
    alone would hang the others)."""
    from torch.nn.parallel import DistributedDataParallel

    inner = module.module if isinstance(module, DistributedDataParallel) else module
    return inner if isinstance(inner, nn.Module) else module


class _Replay:
    """Run ``module`` again on given inputs: no grad, the same RNG state each time, batch norm in eval, its buffers
    put back after each run, and a record of every submodule's first-tensor input and output (and its call site)
    in execution order; with ``sites``, also where the masks it used were made and filled (:class:`_MaskSites`)."""

    def __init__(self, module: nn.Module, kwargs: dict[str, Any]) -> None:
        self.module, self.kwargs = replay_target(module), kwargs
        self.sites: _MaskSites | None = None
        self.spans: dict[int, tuple[int, int, list[Any]]] = {}  # id(submodule) -> (clock in, clock out, its masks)
        self.events: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]] = []
        with torch.random.fork_rng(devices=[]):  # the program's own random stream is left as it was
            self.seed = int(torch.randint(0, 2**31 - 1, (1,)))

    def __call__(
        self, inputs: tuple[Any, ...], record_masks: bool = False, record_ops: bool = False, grad: bool = False
    ) -> tuple[torch.Tensor | None, list[tuple[nn.Module, Any, Any, Any]]]:
        """The replay's output and its submodules' (module, input, output, call stack) in the order they
        returned; with ``record_ops``, ``self.events`` holds those and the user's own ops (:class:`_UserOps`);
        with ``grad``, the replay records its autograd graph (for ``torch.autograd.grad`` on its input, never a
        backward into the parameters' ``.grad``)."""
        trace: list[tuple[nn.Module, Any, Any, Any]] = []
        sites = _MaskSites() if record_masks else None
        ops = _UserOps() if record_ops else None
        starts: dict[int, int] = {}

        def pre(mod: nn.Module, args: Any) -> None:
            if sites is not None:
                starts.setdefault(id(mod), sites.clock)

        def hook(mod: nn.Module, args: Any, kwargs: Any, out: Any) -> None:
            trace.append((mod, _first(args), _first(out), raw_stack(3)))
            if ops is not None:
                ops.events.append(
                    ("module", mod, [t for t in [_first(args)] if t is not None], _first(out), trace[-1][3])
                )
            if sites is not None and id(mod) not in self.spans:
                masks = [v for k, v in (kwargs or {}).items() if "mask" in k and isinstance(v, torch.Tensor)]
                masks += [a for a in args[1:] if isinstance(a, torch.Tensor) and a.dtype == torch.bool]
                self.spans[id(mod)] = (starts.get(id(mod), 0), sites.clock, masks)

        norms = [m for m in self.module.modules() if isinstance(m, BATCH_NORMS) and m.training]
        # buffers a forward updates in place (spectral norm's power-iteration vectors, running statistics) are put
        # back after each replay: the replays compare like with like and leave the program's state as it was
        saved = [(b, b.detach().clone()) for b in self.module.buffers()]
        # and the attributes a forward rebinds (a recurrent state kept as ``self.state``): each replay starts from
        # the program's own, and the program goes on with it
        attrs = [(mod, dict(mod.__dict__)) for mod in self.module.modules()]
        subs = [m for m in self.module.modules() if m is not self.module]
        handles = [m.register_forward_hook(hook, with_kwargs=True) for m in subs]
        handles += [m.register_forward_pre_hook(pre) for m in subs] if sites is not None else []
        try:
            for m in norms:
                m.eval()
            with (
                torch.enable_grad() if grad else torch.no_grad(),
                torch.random.fork_rng(devices=[]),
                sites or contextlib.nullcontext(),
                ops or contextlib.nullcontext(),
            ):
                torch.manual_seed(self.seed)
                out = _first(self.module(*inputs, **self.kwargs))
        finally:
            for h in handles:
                h.remove()
            for m in norms:
                m.train()
            with torch.no_grad():
                for b, value in saved:
                    if not torch.equal(b, value):  # only what moved: a write bumps the version a backward checks
                        b.copy_(value)
            for mod, before in attrs:
                for key in [k for k in mod.__dict__ if k not in before]:
                    del mod.__dict__[key]
                for key, value in before.items():
                    if mod.__dict__.get(key) is not value:
                        mod.__dict__[key] = value
        if sites is not None:
            self.sites = sites
        self.events = ops.events if ops is not None else []
        return out, trace

    def first_cause(
        self, inputs: tuple[Any, ...], changed: tuple[Any, ...], differs: Any
    ) -> tuple[str, Any, Any, list[torch.Tensor]] | None:
        """Both inputs replayed again with the user's ops recorded: the first op or layer whose output differs
        while its inputs do not (:func:`_first_cause`)."""
        self(inputs, record_ops=True)
        before = self.events
        self(changed, record_ops=True)
        return _first_cause(before, self.events, differs)

    def mask_site(self, mod: nn.Module) -> tuple[str | None, int | None] | None:
        """Where the masking of ``mod``'s forward went wrong, when the replay saw it: a ``masked_fill`` inside
        it with a fill that does not mask (0 instead of -inf), else the line that made a mask it was given."""
        span = self.spans.get(id(mod))
        if self.sites is None or span is None:
            return None
        start, end, _ = span
        for clock, line, fill in self.sites.fills:
            if start < clock <= end and fill is not None and fill > MASKING_FILL:
                return line
        # a mask its own forward built and handed on (F.scaled_dot_product_attention(attn_mask=...)): one line
        built = list(dict.fromkeys(line for clock, line in self.sites.made_at_clock if start < clock <= end))
        if len(built) == 1:
            return built[0]
        # the masks given to it or to a module around it (torch's layers convert the user's mask before passing
        # it on), innermost first
        around = sorted((s for s in self.spans.values() if s[0] <= start and end <= s[1]), key=lambda s: s[1] - s[0])
        for _, _, masks in around:
            for m in masks:
                made = self.sites.made.get(id(m))
                if made is not None:
                    return made
        return None


def _culprit(
    probe: Probe,
    a: list[Any],
    b: list[Any],
    differs: Any,
    fallback: tuple[str | None, int | None] | None,
    replay: _Replay | None = None,
) -> tuple[str | None, int | None] | None:
    """The line of the first submodule whose output differs between the replays while its input does not:
    where its mask was made or filled wrongly when the replay saw it, its call site when its forward takes a
    mask (the mask was left out there), else where it was built."""
    for (mod, ia, oa, site), (_, ib, ob, _) in zip(a, b, strict=False):
        if oa is None or ob is None or not differs(oa, ob):
            continue
        if ia is not None and ib is not None and differs(ia, ib):
            continue
        masked = replay.mask_site(mod) if replay is not None else None
        if masked is not None:
            return masked
        params = inspect.signature(mod.forward).parameters
        if any("mask" in p or "causal" in p for p in params):
            file, line = user_line_of(site)
        else:
            made = probe.made_at.get(id(mod))
            file, line = user_line_of(made[1]) if made else user_line_of(site)
        if file is not None:
            return file, line
    if replay is not None and replay.sites is not None:  # the masking is written in the model's own forward
        weak = (line for _, line, fill in replay.sites.fills if fill is not None and fill > MASKING_FILL)
        built = list(dict.fromkeys(line for _, line in replay.sites.made_at_clock))  # one mask line: that one
        return next(weak, built[0] if len(built) == 1 else fallback)
    return fallback


def _built_at(probe: Probe, root: nn.Module, mod: nn.Module) -> tuple[str | None, int | None]:
    """Where ``mod`` was built: the probe's record when it was built while the probe was armed, else (a model
    built before an in-process watch) the ``self.<name> =`` line of its parent's ``__init__``."""
    made = probe.made_at.get(id(mod))
    if made is not None:
        line = user_line_of(made[1])
        if line[0] is not None:
            return line
    parents = {id(child): parent for parent in root.modules() for child in parent.children()}
    parent = parents.get(id(mod))
    if parent is not None:
        name = next(k for k, v in parent._modules.items() if v is mod)
        line = init_attribute_line(type(parent), name)
        if line[0] is not None:
            return line
    # a layer its container deep-copied (nn.TransformerEncoder clones the layer it is given; a copy is built
    # without __init__): the nearest container built while the probe watched, at the user's line that built it
    while parent is not None:
        made = probe.made_at.get(id(parent))
        line = user_line_of(made[1]) if made is not None else (None, None)
        if line[0] is not None:
            return line
        parent = parents.get(id(parent))
    return None, None


def _equal(p: torch.Tensor, q: torch.Tensor) -> bool:
    strided = p.layout == q.layout == torch.strided
    return strided and p.shape == q.shape and p.dtype == q.dtype and p.device == q.device and torch.equal(p, q)


def _first_cause(
    a: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]],
    b: list[tuple[str, Any, list[torch.Tensor], torch.Tensor | None, Any]],
    differs: Any,
) -> tuple[str, Any, Any, list[torch.Tensor]] | None:
    """The first event of two replays (their ``_Replay.events``) whose output differs while none of its inputs
    does: ``("op", (file, line), None, fixed)`` for an op in the user's code, ``("module", module, call stack,
    fixed)``; ``fixed`` are its inputs equal in both replays (what it was given besides the batch)."""
    for (kind, what, ins_a, oa, site), (_, _, ins_b, ob, _) in zip(a, b, strict=False):
        if oa is None or ob is None or not differs(oa, ob):
            continue
        if any(differs(p, q) for p, q in zip(ins_a, ins_b, strict=False)):
            continue
        fixed = [p for p, q in zip(ins_a, ins_b, strict=False) if p is q or _equal(p, q)]
        return kind, what, site, fixed
    return None


def _shift_axis(x: torch.Tensor, target: torch.Tensor) -> int | None:
    """The axis (not the batch's) along which ``target`` is ``x`` shifted by one step (``target[t] == x[t + 1]``),
    at least four steps long; None when there is none."""
    if target.shape != x.shape or not target.is_floating_point():
        return None
    for axis in range(1, x.dim()):
        length = x.shape[axis]
        if length >= 4 and torch.allclose(
            target.detach().narrow(axis, 0, length - 1), x.detach().narrow(axis, 1, length - 1), rtol=1e-5, atol=1e-6
        ):
            return axis
    return None


def _relates_rows(others: Any, kwargs: dict[str, Any], n: int) -> bool:
    """Whether the forward's other inputs say how its first input's ``n`` rows relate: an edge list (integer
    indices below ``n``, as many as there are edges, not one per row), an ``n`` x ``n`` adjacency, a sparse
    matrix. A graph network's rows are its nodes, and it mixes them on purpose."""
    stack = [*others, *kwargs.values()]
    while stack:
        t = stack.pop()
        if isinstance(t, (tuple, list)):
            stack.extend(t)
            continue
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            continue
        if t.layout != torch.strided or (t.dim() == 2 and t.shape[0] == t.shape[1] == n):
            return True
        edges = not t.is_floating_point() and t.dtype != torch.bool and t.shape[-1] != n
        if edges and int(t.min()) >= 0 and int(t.max()) < n:
            return True
    return False


def _carries_gradient(ev: ForwardEvent, x: torch.Tensor, changed: torch.Tensor) -> bool:
    """Whether the other samples' outputs depend on sample 0 through the autograd graph: one more replay, with
    grad and the same random state, and the gradient of samples 1..'s outputs (weighted at random) with respect
    to sample 0. A batch statistic taken under ``no_grad`` (a fake quantiser's per-tensor scale, a detached
    normaliser) mixes the forward's values but trains no sample on another: then False. True when it cannot be
    measured (an integer input, a DDP wrapper that a backward outside its own would confuse, an error)."""
    if not x.is_floating_point() or "DistributedDataParallel" in type(ev.module).__name__:
        return True
    try:
        probe_x = changed.clone().requires_grad_(True)
        replay = _Replay(ev.module, ev.kwargs)
        out, _ = replay((probe_x, *ev.inputs[1:]), grad=True)
        if out is None or not out.requires_grad or out.dim() == 0 or out.shape[0] != x.shape[0]:
            return True
        with torch.random.fork_rng(devices=[]):
            weights = torch.randn(out[1:].shape, generator=torch.Generator().manual_seed(0)).to(out.dtype)
        (grad,) = torch.autograd.grad((out[1:] * weights).sum(), probe_x, allow_unused=True)
    except Exception:  # noqa: BLE001 - unmeasured: the replays' finding stands
        return True
    return grad is not None and bool(grad[0].abs().max() > 0)


@register
class SamplesMixed(Check):
    """The first training forward of each model, replayed with the batch's last sample changed: the other
    samples' outputs must stay the same."""

    name = "samples_mixed"

    def __init__(self) -> None:
        self.tested: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not ev.first_training(self.tested):
            return
        if getattr(ev.module, "batch_first", None) is False:
            return  # a time-first layer (nn.GRU, nn.MultiheadAttention) called directly: axis 0 is time by contract
        x, out = ev.first_tensor(), _first(ev.output)
        if x is None or out is None or x.dim() < 1 or x.shape[0] < 3 or out.dim() < 1 or out.shape[0] != x.shape[0]:
            return
        if not ev.inputs or ev.inputs[0] is not x:
            return  # the batch came as a keyword (an HF model's input_ids=): not replayed
        if _relates_rows(ev.inputs[1:], ev.kwargs, x.shape[0]):
            return  # a graph's nodes: the forward is given how the rows relate, and mixes them by design
        # the changed input is made without grad: ops recorded here would be saved tensors a non-reentrant
        # checkpoint around the model counts in its forward and misses in its recomputation
        x = x.detach()
        changed = x.clone()  # the first sample changes: a recurrence run across the batch carries it forward
        with torch.random.fork_rng(devices=[]):
            changed[0] = x[-1] if not x.is_floating_point() else torch.randn_like(x[0]) * (x.std() + 1) + x.mean()
        replay = _Replay(ev.module, ev.kwargs)
        oa, _ = replay(ev.inputs)
        ob, _ = replay((changed, *ev.inputs[1:]))
        if oa is None or ob is None:
            return

        def differs(p: torch.Tensor, q: torch.Tensor) -> bool:
            n = p.shape[0] if p.dim() else 0
            return n == x.shape[0] and _changed(p[1:], q[1:])

        if not differs(oa, ob):
            return
        # the replays again, recording the user's ops too: the first module or op that mixes names the line
        cause = replay.first_cause(ev.inputs, (changed, *ev.inputs[1:]), differs)
        if cause is not None and cause[0] == "op" and _relates_rows(cause[3], {}, x.shape[0]):
            return  # the op that mixes was told how the rows relate (an edge list kept outside the call): a graph's
        if not _carries_gradient(ev, x, changed):
            return  # sample 0 reaches the others only through what no gradient crosses (a quantiser's scale)
        where = None
        if cause is not None and cause[0] == "op":
            where = cause[1]
        elif cause is not None:  # where the mixing layer was built (batch_first, dim=), else its call
            where = _built_at(probe, ev.module, cause[1])
            where = where if where[0] is not None else user_line_of(cause[2])
        where = where if where is not None and where[0] is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=(
                f"the outputs of samples 1..{x.shape[0] - 1} change when only sample 0 of the batch changes: "
                "the model mixes samples (batch and time/feature axes swapped, a softmax or "
                "reshape across the batch)"
            ),
            evidence={"batch": int(x.shape[0]), "output_shape": list(oa.shape)},
            fix="keep the batch axis apart: batch_first=True for batch-first data, permute instead of view, "
            "softmax over the class/time axis",
            where=where,
        )


@register
class FutureTokensSeen(Check):
    """A model trained on next tokens (the loss target equals its input shifted by one) replayed with the
    second half of every sequence changed: its outputs over the first half must stay the same."""

    name = "future_tokens_seen"
    reports: ClassVar[dict[str, str]] = {
        "future_tokens_seen": "A model trained on next tokens changes earlier outputs when later tokens change.",
        "future_values_seen": "A forecaster trained on next values changes earlier outputs when later inputs change.",
    }

    def __init__(self) -> None:
        self.pending: ForwardEvent | None = None
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not self.done and ev.training and ev.grad_enabled and ev.first_tensor() is not None:
            self.pending = ev

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        fwd, self.pending = self.pending, None
        if self.done or fwd is None or not isinstance(ev.target, torch.Tensor):
            return
        x = fwd.first_tensor()
        if x is not None and x.is_floating_point() and ev.function in NEXT_VALUE_LOSSES:
            self._next_value(probe, fwd, x, ev.target)
            return
        if ev.function != "cross_entropy" or x is None or x.is_floating_point():
            return
        if x.dim() != 2 or x.shape[1] < 4 or ev.target.numel() != x.shape[0] * (x.shape[1]):
            return
        nxt = ev.target.reshape(x.shape)[:, :-1]
        if float((nxt == x[:, 1:]).float().mean()) < SHIFT_MATCH:
            return
        self.done = True
        cut = x.shape[1] // 2
        changed = x.clone()
        changed[:, cut:] = x.roll(1, dims=0)[:, cut:]
        if not bool((changed != x).any()) or not fwd.inputs or fwd.inputs[0] is not x:
            return
        replay = _Replay(fwd.module, fwd.kwargs)
        oa, ta = replay(fwd.inputs, record_masks=True)
        ob, tb = replay((changed, *fwd.inputs[1:]))

        def differs(p: torch.Tensor, q: torch.Tensor) -> bool:
            # time on axis 1 (batch, time, ...), or last (a Conv1d's (batch, channels, time)); where the shape
            # allows both (channels == time), the early positions changed only if they changed in both views
            views = []
            if p.dim() >= 2 and p.shape[:2] == x.shape:
                views.append((p[:, :cut], q[:, :cut]))
            if p.dim() >= 3 and p.shape[0] == x.shape[0] and p.shape[-1] == x.shape[1]:
                views.append((p[..., :cut], q[..., :cut]))
            return bool(views) and all(_changed(a, b) for a, b in views)

        if oa is not None and ob is not None and differs(oa, ob):
            probe.report(
                kind="bug",
                check=self.name,
                message=(
                    f"a model trained to predict the next token changes its outputs at positions 0..{cut - 1} when "
                    f"only tokens {cut}.. change: it sees the future (a causal mask left out or reversed, a "
                    "convolution padded on the right)"
                ),
                evidence={"sequence": int(x.shape[1]), "changed_from": cut},
                fix="mask attention to earlier positions (a causal mask, is_causal=True), pad convolutions on the "
                "left only",
                where=_culprit(probe, ta, tb, differs, None, replay),
            )

    def _next_value(self, probe: Probe, fwd: ForwardEvent, x: torch.Tensor, target: torch.Tensor) -> None:
        """A forecaster trained on the next value (a regression target equal to its input shifted by one along a
        time axis: ``x = s[:, :-1]``, ``y = s[:, 1:]``), replayed with the later half of that axis changed (taken
        from another series of the batch): its outputs over the earlier half must stay the same. The first op or
        layer whose earlier half moves while its input's does not names the line (a causal convolution trimmed on
        the wrong side)."""
        axis = _shift_axis(x, target)
        if axis is None or x.shape[0] < 2 or not fwd.inputs or fwd.inputs[0] is not x:
            return
        self.done = True
        n, length = x.shape[0], x.shape[axis]
        cut = length // 2
        x = x.detach()
        changed = x.clone()
        changed.narrow(axis, cut, length - cut).copy_(x.roll(1, dims=0).narrow(axis, cut, length - cut))
        if torch.equal(changed, x):
            return

        def differs(p: torch.Tensor, q: torch.Tensor) -> bool:
            aligned = p.dim() == x.dim() and p.shape[0] == n and p.shape[axis] == length and p.shape == q.shape
            return aligned and _changed(p.narrow(axis, 0, cut), q.narrow(axis, 0, cut))

        replay = _Replay(fwd.module, fwd.kwargs)
        oa, _ = replay(fwd.inputs)
        ob, _ = replay((changed, *fwd.inputs[1:]))
        if oa is None or ob is None or not differs(oa, ob):
            return
        cause = replay.first_cause(fwd.inputs, (changed, *fwd.inputs[1:]), differs)
        where = None
        if cause is not None and cause[0] == "op":
            where = cause[1]
        elif cause is not None:
            where = _built_at(probe, fwd.module, cause[1])
        probe.report(
            kind="bug",
            check="future_values_seen",
            message=f"a model trained to predict the next value of a series changes its outputs at steps 0..{cut - 1} "
            f"when only steps {cut}.. of its input change: it sees the future it is asked to predict (a causal "
            "convolution trimmed or padded on the wrong side, a bidirectional layer, a mask left out)",
            evidence={"steps": int(length), "changed_from": cut, "time_axis": axis},
            fix="let step t see steps <= t only: pad convolutions on the left (and trim the right: y[..., :-pad]), "
            "keep recurrent layers one-directional, mask attention causally",
            where=where if where is not None and where[0] is not None else None,
        )
