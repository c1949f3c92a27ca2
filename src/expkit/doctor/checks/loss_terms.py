"""What the backpropagated loss is made of, measured on its autograd graph and values: a term that adds to the
loss value but carries no gradient (a penalty computed from ``argmax``, a ``.item()`` or a detached output: it
shows in the logged loss and trains nothing), and class targets that hold one value at every position of every
watched step (a segmentation mask scaled like an image and truncated to class 0: the labels say nothing), and
class targets that are a label map resized with a smoothing interpolation (bilinear averaging invents classes),
and a sum over the whole batch spread back onto every sample (each sample's term then holds the batch's total)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.graph_kept import graph_nodes, made_where
from expkit.doctor.findings import raw_stack, user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import BackwardEvent, ForwardEvent, LossEvent, Probe, StepEvent

MIN_TERM_SHARE = 0.01  # a gradient-free term this large a share of the loss's absolute terms is not rounding
MAX_TERMS = 64  # additive terms expanded before giving up (a loss summed over many pieces is not judged)


def _coefficient(node: Any, side: int) -> float | None:
    """The constant factor of a ``MulBackward0``/``DivBackward0`` on its grad-carrying operand ``side``."""
    name = type(node).__name__
    try:
        other = node._saved_other if side == 0 else node._saved_self
    except (AttributeError, RuntimeError):
        return None
    if not isinstance(other, torch.Tensor) or other.numel() != 1:
        return None
    value = float(other)
    if name.startswith("Div"):
        return 1.0 / value if side == 0 and value != 0 else None
    return value


def expand_terms(root: Any, stop: set[int]) -> list[tuple[Any, float]] | None:
    """Expand ``root`` (a loss's ``grad_fn``) over +, -, and multiplication or division by a constant into its
    additive terms: ``(node, coefficient)`` each, node None for a term that carries no gradient; a node whose id is
    in ``stop`` (a loss function's value) is not expanded further. None when there are more than MAX_TERMS."""
    terms: list[tuple[Any, float]] = []
    todo = [(root, 1.0)]
    while todo:
        if len(todo) + len(terms) > MAX_TERMS:
            return None
        node, coef = todo.pop()
        if node is None or id(node) in stop:
            terms.append((node, coef))
            continue
        name, kids = type(node).__name__, node.next_functions
        factor = None
        if name in ("MulBackward0", "DivBackward0") and len(kids) == 2 and (kids[0][0] is None) != (kids[1][0] is None):
            side = 0 if kids[0][0] is not None else 1
            factor = _coefficient(node, side)
        if name in ("AddBackward0", "SubBackward0") and len(kids) == 2:
            alpha = float(getattr(node, "_saved_alpha", 1))
            todo += [(kids[0][0], coef), (kids[1][0], coef * (alpha if name.startswith("Add") else -alpha))]
        elif name == "NegBackward0" and len(kids) == 1:
            todo.append((kids[0][0], -coef))
        elif factor is not None:
            todo.append((kids[side][0], coef * factor))
        else:
            terms.append((node, coef))
    return terms


def additive_terms(root: Any, known: dict[int, float]) -> tuple[float, int] | None:
    """``(sum of the terms whose value is known, number of terms that carry no gradient)`` of ``root``'s additive
    terms (``expand_terms``), or None when a grad-carrying term is neither a known loss value nor such an
    expression."""
    terms = expand_terms(root, set(known))
    if terms is None:
        return None
    total, free = 0.0, 0
    for node, coef in terms:
        if node is None:
            free += 1
        elif id(node) in known:
            total += coef * known[id(node)]
        else:
            return None
    return total, free


@register
class LossTermWithoutGradient(Check):
    """A backpropagated loss whose value holds a term that carries no gradient: the loss's graph, expanded over
    + - and constant factors, ends in loss-function outputs plus a gradient-free term worth MIN_TERM_SHARE or more
    of it (loss value minus the loss functions' values). The term is logged and optimised by nobody: a penalty
    built from ``argmax``, a ``.item()``, a comparison or a detached output."""

    name = "loss_term_without_gradient"

    def __init__(self) -> None:
        self.known: dict[int, tuple[float, RawStack]] = {}  # id(grad_fn of a loss function's value) -> value, site
        self.items: list[RawStack] = []  # .item() calls since the last step
        self.done = False

    def start(self, probe: Probe) -> None:
        items = self.items

        def make(original: Any) -> Any:
            def item(tensor: torch.Tensor) -> Any:
                if probe.active and not self.done and len(items) < MAX_TERMS:
                    items.append(raw_stack(2))
                return original(tensor)

            return item

        probe.patch(torch.Tensor, "item", make)

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.value.numel() == 1 and ev.value.grad_fn is not None:
            self.known[id(ev.value.grad_fn)] = (float(ev.value.detach()), raw_stack(3))

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        loss = ev.tensor
        if self.done or not self.known or loss.numel() != 1 or loss.grad_fn is None:
            return
        terms = additive_terms(loss.grad_fn, {k: v for k, (v, _) in self.known.items()})
        if terms is None or terms[1] == 0:
            return
        value = float(loss.detach())
        rest = value - terms[0]
        scale = abs(rest) + sum(abs(v) for v, _ in self.known.values())
        if scale == 0 or abs(rest) < MIN_TERM_SHARE * scale:
            return
        self.done = True
        site = user_line_of(self.items[-1]) if self.items else (None, None)
        if site[0] is None:
            site = user_line_of(list(self.known.values())[-1][1])
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the loss {value:.4g} holds a term of {rest:.4g} that carries no gradient (the loss functions "
            f"give {terms[0]:.4g}): it shows in the logged loss but trains nothing (a penalty built from argmax, "
            ".item(), a comparison or a detached tensor)",
            evidence={"loss": value, "term_without_gradient": rest, "loss_functions": terms[0]},
            fix="build the term from differentiable tensors (softmax probabilities instead of argmax, the tensor "
            "instead of .item()), or leave it out of the loss and log it separately",
            where=site if site[0] is not None else None,
        )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.known = {}
        self.items.clear()


MIN_DENSE_TARGETS = 256  # class targets per batch (pixels, tokens) that a real task never fills with one class


@register
class DenseTargetsOneClass(Check):
    """Class-index targets with positions (a segmentation mask, token labels: ``target.dim() >= 2``), at least
    MIN_DENSE_TARGETS per batch, that hold one and the same class at every position in every watched step while
    the logits offer two or more: the labels were destroyed on the way in (a mask divided by 255 like an image
    and truncated), so the model learns to predict one class."""

    name = "dense_targets_one_class"

    def __init__(self) -> None:
        self.classes: list[int | None] = []  # per loss call: the one class its targets held, or None
        self.site: tuple[str | None, int | None] = (None, None)

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        y = ev.target
        if ev.function not in ("cross_entropy", "nll_loss") or not isinstance(y, torch.Tensor) or y.dim() < 2:
            return
        if y.is_floating_point() or ev.input.dim() != y.dim() + 1 or ev.input.shape[1] < 2:
            return
        keep = y[y != ev.kwargs.get("ignore_index", -100)]
        one = keep.numel() >= MIN_DENSE_TARGETS and bool((keep == keep.flatten()[0]).all())
        self.classes.append(int(keep.flatten()[0]) if one else None)
        if one and self.site[0] is None:
            from expkit.doctor.checks.loss_mask import made_line

            self.site = made_line(probe, y) or user_frame(3)  # where the targets were made, else the loss

    def finish(self, probe: Probe) -> None:
        if len(self.classes) < 2 or any(c is None for c in self.classes) or len(set(self.classes)) != 1:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the class targets of all {len(self.classes)} watched losses hold class {self.classes[0]} at "
            f"every position (per-pixel or per-token targets, {MIN_DENSE_TARGETS}+ a batch): the labels were "
            "destroyed on the way in (a mask scaled like an image, /255, then truncated by .long()), so the model "
            "learns one class",
            evidence={"target_class": self.classes[0], "losses": len(self.classes)},
            fix="load label masks without the image transform (torch.as_tensor(mask, dtype=torch.long), nearest "
            "resize, no /255 or normalisation)",
            where=self.site if self.site[0] is not None else None,
        )


SMOOTH_MODES = ("linear", "bilinear", "bicubic", "trilinear", "area")
MAX_LABEL_CLASSES = 64  # distinct integral values a label map holds (an image holds more)
MAX_RESAMPLED = 8  # resampled label maps remembered


@register
class LabelMapInterpolated(Check):
    """A class-index target that is a label map resampled with a smoothing mode: ``F.interpolate(mask,
    mode="bilinear")`` on a float tensor of 3+ integral class ids (at most MAX_LABEL_CLASSES) averages
    neighbouring ids, and the rounded result, found again by value as a cross-entropy target, holds classes that
    were never at those pixels (a 1 on the border of classes 0 and 2). Binary masks resized and thresholded are
    not judged."""

    name = "label_map_interpolated"

    def __init__(self) -> None:
        self.resampled: list[tuple[torch.Tensor, RawStack]] = []
        self.done = False

    def start(self, probe: Probe) -> None:
        resampled = self.resampled

        def make(original: Any) -> Any:
            def interpolate(x: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(x, *args, **kwargs)
                mode = kwargs.get("mode", args[2] if len(args) > 2 else "nearest")
                if probe.active and mode in SMOOTH_MODES and len(resampled) < MAX_RESAMPLED:
                    try:
                        if _label_map(x) and isinstance(out, torch.Tensor) and not _integral(out):
                            resampled.append((out.detach().round().long().flatten(), raw_stack(2)))
                    except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's training
                        probe.check_failed(self.name, exc)
                return out

            return interpolate

        probe.patch(torch.nn.functional, "interpolate", make)

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        y = ev.target
        if self.done or not self.resampled or ev.function not in ("cross_entropy", "nll_loss"):
            return
        if not isinstance(y, torch.Tensor) or y.is_floating_point() or y.dim() < 2:
            return
        flat = y.detach().flatten()
        lo, hi = int(flat.min()), int(flat.max())
        for made, stack in self.resampled:
            # rounded, and clamped into the classes (bicubic overshoots the ids at the ends of the range)
            if made.numel() == flat.numel() and torch.equal(made.to(flat.device).clamp(lo, hi), flat):
                self.done = True
                where = user_line_of(stack)
                probe.report(
                    kind="bug",
                    check=self.name,
                    message="the class targets are a label map resized with a smoothing interpolation: averaging "
                    "class ids and rounding invents classes at the borders between regions (the ids in between)",
                    evidence={"target_shape": list(y.shape), "classes_in_target": int(torch.unique(flat).numel())},
                    fix='resize label maps with mode="nearest" (or nearest-exact), never bilinear/bicubic/area',
                    where=where if where[0] is not None else None,
                )
                return


def _integral(x: torch.Tensor) -> bool:
    return bool(torch.equal(x, x.round()))


def _label_map(x: Any) -> bool:
    """A float tensor with spatial axes whose values are 3 to MAX_LABEL_CLASSES distinct integers."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 3 or not _integral(x):
        return False
    distinct = torch.unique(x).numel()
    return 3 <= distinct <= MAX_LABEL_CLASSES


MAX_GRAPH_NODES = 20_000  # autograd nodes walked from one loss or term (a larger graph is not judged)
SPREADING_OPS = ("AddBackward0", "SubBackward0", "MulBackward0")


def _leading(sizes: Any) -> int | None:
    return int(sizes[0]) if sizes is not None and len(sizes) >= 1 else None


def _scalar_sums(node: Any, depth: int = 8) -> list[Any]:
    """The full sums (``SumBackward0``) that a scalar-valued node is made of, through scalar-valued arithmetic
    (``-0.5 * t.sum()``, ``t.sum() / n``)."""
    meta = getattr(node, "_input_metadata", ())
    if depth == 0 or not meta or len(meta[0].shape) != 0:
        return []
    if type(node).__name__ == "SumBackward0":
        return [node]
    return [s for kid, _ in node.next_functions if kid is not None for s in _scalar_sums(kid, depth - 1)]


@register
class BatchSumSpreadOverSamples(Check):
    """A sum over a whole batch tensor spread back onto every sample: ``torch.sum(t)`` with no ``dim`` on a
    tensor whose first axis is the batch (the size of the step's model input), whose total is then added to, or
    multiplied with, a tensor of that batch again before the loss is reduced. Each sample's term then holds the
    total of every sample (a VAE's KL summed without ``dim`` and masked per event), so the term is counted once
    per sample: batch-size times too strong. Normalising by a batch total (a division) is not judged."""

    name = "batch_sum_spread_over_samples"

    def __init__(self) -> None:
        self.batch_sizes: set[int] = set()
        self.outputs: set[Any] = set()  # grad_fns of the step's model outputs: the summed tensor is made from one
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        first = next((x for x in ev.inputs if isinstance(x, torch.Tensor) and x.dim() >= 1), None)
        if first is None or first.shape[0] < 2 or len(self.outputs) > MAX_TERMS:
            return
        self.batch_sizes.add(int(first.shape[0]))
        out = ev.output
        values = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else (out,)
        self.outputs.update(v.grad_fn for v in values if isinstance(v, torch.Tensor) and v.grad_fn is not None)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        loss = ev.tensor
        if self.done or not self.batch_sizes or loss.numel() != 1 or loss.grad_fn is None:
            return
        found = self._spread(loss.grad_fn)
        if found is None:
            return
        total, spread, batch = found
        self.done = True
        site = made_where(total)
        if site[0] is None:
            site = made_where(spread)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a sum over the whole batch (torch.sum with no dim over a tensor of {batch} samples) is "
            f"spread back onto every sample ({type(spread).__name__[:3].lower()} with a per-sample tensor) before "
            "the loss is reduced: each sample's term holds the whole batch's total, so the term counts "
            f"{batch} times over",
            evidence={"batch": batch, "summed_shape": list(total._saved_self_sym_sizes), "op": type(spread).__name__},
            fix="reduce per sample first (sum(dim=...) over the non-batch axes), combine per-sample terms, and "
            "reduce over the batch once at the end",
            where=site if site[0] is not None else None,
        )

    def _spread(self, root: Any) -> tuple[Any, Any, int] | None:
        """The first (full ``SumBackward0``, the add/sub/mul that spreads it, batch) below ``root``."""
        for node in graph_nodes(root, MAX_GRAPH_NODES):
            if type(node).__name__ not in SPREADING_OPS:
                continue
            meta = getattr(node, "_input_metadata", ())
            out = _leading(meta[0].shape) if meta else None
            kids = [k for k, _ in node.next_functions if k is not None]
            for total in (t for kid in kids for t in _scalar_sums(kid)):
                batch = _leading(getattr(total, "_saved_self_sym_sizes", None))
                if batch is not None and batch == out and batch in self.batch_sizes and self._of_model(total):
                    return total, node, batch
        return None

    def _of_model(self, node: Any) -> bool:
        """Whether a model output of this step is below ``node`` (a weight penalty is not a batch's total)."""
        return any(n in self.outputs for n in graph_nodes(node, MAX_GRAPH_NODES))

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.batch_sizes.clear()
        self.outputs.clear()


def reached_parameters(node: Any) -> set[int]:
    """The ids of the leaf tensors (parameters) whose ``AccumulateGrad`` lies below ``node``."""
    return {
        id(n.variable)
        for n in graph_nodes(node, MAX_GRAPH_NODES)
        if type(n).__name__ == "AccumulateGrad" and hasattr(n, "variable")
    }


@dataclass
class _Term:
    params: set[int]  # ids of the parameters its gradient reaches
    node: Any  # its autograd node
    site: tuple[str | None, int | None] | None  # the loss call that made it, when it is a loss function's value
    function: str | None


@register
class LossTermTrainsNothingStepped(Check):
    """A term of a backpropagated loss whose gradient reaches only parameters that no optimizer steps before the
    next backward, while another term of the same loss reaches the parameters that are stepped: the term is
    computed, logged and trains nothing (a generator's adversarial term on a detached fake reaches only the
    discriminator, which the generator's optimizer does not step). The loss is split over +, - and constant
    factors; each term's parameters are read from its autograd graph. Named at the term's loss call."""

    name = "loss_term_trains_nothing_stepped"

    def __init__(self) -> None:
        self.sites: dict[int, tuple[tuple[str | None, int | None], str]] = {}  # id(grad_fn) -> loss call, function
        self.pending: list[tuple[list[_Term], set[int]]] = []  # per backward: its terms, the parameters stepped
        self.done = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.value.numel() == 1 and ev.value.grad_fn is not None and len(self.sites) < MAX_TERMS:
            self.sites[id(ev.value.grad_fn)] = (user_frame(3), ev.function)

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        self._judge(probe)
        loss, sites, self.sites = ev.tensor, self.sites, {}
        if self.done or loss.numel() != 1 or loss.grad_fn is None:
            return
        terms = expand_terms(loss.grad_fn, set(sites))
        if terms is None:
            return
        found = [_Term(reached_parameters(node), node, *sites.get(id(node), (None, None))) for node, _ in terms if node]
        if len(found) >= 2:
            self.pending.append((found, set()))

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.pending:
            self.pending[-1][1].update(id(p) for p in ev.params)

    def finish(self, probe: Probe) -> None:
        self._judge(probe)

    def _judge(self, probe: Probe) -> None:
        pending, self.pending = self.pending, []
        for terms, stepped in pending:
            if self.done or not stepped or not any(t.params & stepped for t in terms):
                continue
            idle = [t for t in terms if t.params and not t.params & stepped]
            if idle:
                self._report(probe, idle[0], len(terms))

    def _report(self, probe: Probe, term: _Term, terms: int) -> None:
        self.done = True
        site = term.site if term.site is not None and term.site[0] is not None else made_where(term.node)
        what = term.function or type(term.node).__name__
        probe.report(
            kind="bug",
            check=self.name,
            message=f"one of the loss's {terms} terms ({what}) reaches only {len(term.params)} parameter tensor(s) "
            "that no optimizer steps before the next backward, while the other terms reach the parameters that are "
            "stepped: that term trains nothing (an input detached where the trained model's output was meant, "
            "e.g. a generator's adversarial loss on fake.detach())",
            evidence={"terms": terms, "term": what, "parameters_reached": len(term.params)},
            fix="compute the term on the tensor that carries the trained model's gradient (D(fake), not "
            "D(fake.detach()), in the generator's loss), or leave it out of this loss",
            where=site if site[0] is not None else None,
        )
