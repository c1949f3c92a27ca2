"""The data each step sees: the same batch at every step (a ``next(iter(loader))`` outside the loop)
and labels that are the inputs themselves (next-token targets not shifted)."""

from __future__ import annotations

import contextlib
import hashlib
import sys
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import keyword_line, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, LossEvent, Probe, StepEvent


def _fingerprint(x: torch.Tensor) -> tuple[Any, ...]:
    """A batch's shape, dtype and a digest of its bytes: equal only for the same values in the same places (sums
    are not: rows that are permutations of one another, cyclic token patterns, have equal sums)."""
    raw = x.detach().reshape(-1).cpu().contiguous().view(torch.uint8)
    return (tuple(x.shape), str(x.dtype), hashlib.blake2b(raw.numpy().tobytes(), digest_size=16).digest())


def _first_input_of_step(check: Any, ev: ForwardEvent) -> torch.Tensor | None:
    """The first input of the step's first training forward (``check.taken_this_step`` set once it is taken;
    the check clears it at each optimizer step), else None."""
    if check.taken_this_step or not (ev.training and ev.grad_enabled):
        return None
    x = ev.first_tensor()
    if x is None or x.numel() == 0:
        return None
    check.taken_this_step = True
    return x


@register
class SameBatch(Check):
    """The first training forward of each watched step, fingerprinted (shape, dtype, a digest of its bytes): the
    same fingerprint at two consecutive steps of one optimizer while a DataLoader with more than one batch exists
    means the loop reuses one batch. Full-batch training without a DataLoader is not flagged, nor two optimizers
    stepping on one batch (a GAN's discriminator and generator)."""

    name = "same_batch"

    def __init__(self) -> None:
        self.current: tuple[Any, ...] | None = None  # the first training input since the last step
        self.prints: dict[int, tuple[Any, ...]] = {}  # id(optimizer) -> the first input of its last step
        self.taken_this_step = False
        self.iter_sites: list[tuple[str | None, int | None]] = []  # where each DataLoader iterator was made

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "loader.iter":
            from expkit.doctor.findings import user_frame

            self.iter_sites.append(user_frame(3))

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = _first_input_of_step(self, ev)
        if x is not None:
            self.current = _fingerprint(x)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.taken_this_step = False
        now, self.current = self.current, None
        before = self.prints.get(id(ev.optimizer))
        if now is not None:
            self.prints[id(ev.optimizer)] = now
        if now is None or before != now:
            return
        batches = probe.dataloader_batches()
        if batches is None or batches < 2:
            return
        # a fresh iterator at every step, made at one line: that line restarts the loader
        fresh = len(self.iter_sites) >= 2 and self.iter_sites[-1] == self.iter_sites[-2] and self.iter_sites[-1][0]
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the model saw the same input batch at consecutive steps although a DataLoader holds {batches} "
            "batches: the loop is probably reusing one batch (next(iter(loader)) taken once, or a new iterator "
            "every step over an unshuffled loader)",
            evidence={"identical_steps": 2, "loader_batches": batches, "batch_shape": list(now[0])},
            fix="iterate the loader: `for x, y in loader:` (or keep one iterator and call next() on it)",
            where=self.iter_sites[-1] if fresh else None,
        )


def _setting_line(keyword: str) -> tuple[str | None, int | None]:
    """The line of the user's file (the innermost user frame's) that passes ``keyword=`` to a call, else that
    frame's line."""
    file, line = user_frame(3)
    return file, keyword_line(file, (keyword,)) or line


GATHER_WALK = 2_000  # autograd nodes searched from a backward for a gather of log-probabilities
SAME_SHARE = 0.5  # gathered indices equal to the input tokens at this share of the positions or more


@register
class LabelsNotShifted(Check):
    """For sequence models: the cross-entropy targets (or the indices a hand-written log-likelihood gathers its
    log-probabilities at) equal the token ids the model was given, position for position, so each position is
    asked to predict itself instead of the next token."""

    name = "labels_not_shifted"

    def __init__(self) -> None:
        self.ids: torch.Tensor | None = None
        self.smoother_watched = False
        self.gather_judged = False  # the first gather of log-probabilities over the ids' shape is judged, once

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        # the token ids of this step's last forward that took them; a later forward on floats (the head of an
        # LM written as separate modules: embedding, RNN, output layer) keeps them
        x = ev.first_tensor()
        if x is not None and not x.is_floating_point() and x.dim() == 2 and x.shape[1] > 1:
            self.ids = x

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.ids = None

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        """A hand-written sequence log-likelihood (DPO's, a reward's): log-probabilities gathered at the input
        tokens themselves, position for position (round fifteen: batch18/bugs/dpo_batch_logps_unshifted_targets.py,
        https://github.com/eric-mitchell/direct-preference-optimization/issues/61)."""
        ids = self.ids
        if self.gather_judged or ids is None or ev.tensor.grad_fn is None:
            return
        from expkit.doctor.checks.graph_kept import graph_nodes, made_where

        for node in graph_nodes(ev.tensor.grad_fn, GATHER_WALK):
            if type(node).__name__ != "GatherBackward0" or not node.next_functions:
                continue
            scored = node.next_functions[0][0]
            index = getattr(node, "_saved_index", None)
            if type(scored).__name__ not in ("LogSoftmaxBackward0", "SoftmaxBackward0"):
                continue
            if not isinstance(index, torch.Tensor) or index.numel() != ids.numel() or index.device != ids.device:
                continue
            self.gather_judged = True
            idx = index.reshape(ids.shape)
            same = float((idx == ids).float().mean())
            following = float((idx[:, :-1] == ids[:, 1:]).float().mean())
            if same < SAME_SHARE or following >= same:
                return
            where = made_where(node)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"log-probabilities are gathered at the input tokens themselves ({same:.0%} of the positions "
                "hold the token the model was given there): position t scores token t, not the next token, so the "
                "sequence log-likelihood rewards copying the input",
                evidence={"positions_equal_to_input": same, "next_token_agreement": following},
                fix="score the next token: logits[:, :-1].log_softmax(-1).gather(-1, labels[:, 1:, None]) (and shift "
                "the mask with the labels)",
                where=where if where[0] is not None else None,
            )
            return

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        # the HF Trainer's label smoothing scores the logits itself (log_softmax and gather, no cross_entropy
        # call), shifting the labels only for the causal-LM classes it knows by name: its unshifted call is judged
        # like a cross-entropy from the next step on
        smoother = getattr(sys.modules.get("transformers.trainer_pt_utils"), "LabelSmoother", None)
        if self.smoother_watched or smoother is None:
            return
        self.smoother_watched = True
        check = self

        def make(original: Any) -> Any:
            def smooth(this: Any, output: Any, labels: Any, shift_labels: bool = False, **kw: Any) -> Any:
                if not shift_labels and isinstance(labels, torch.Tensor) and not probe._in_check:
                    with contextlib.suppress(Exception):  # a judgement's failure is not the program's
                        check.judge(probe, labels, -100, _setting_line("label_smoothing_factor"))
                return original(this, output, labels, shift_labels=shift_labels, **kw)

            return smooth

        probe.patch(smoother, "__call__", make)

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if ev.function != "cross_entropy" or not isinstance(ev.target, torch.Tensor):
            return
        self.judge(probe, ev.target, ev.kwargs.get("ignore_index", -100), None)

    def judge(self, probe: Probe, y: torch.Tensor, ignore: int, where: tuple[str | None, int | None] | None) -> None:
        ids = self.ids
        if ids is None or y.is_floating_point() or y.numel() != ids.numel() or y.device != ids.device:
            return
        y2 = y.reshape(ids.shape)
        keep = y2 != ignore
        if int(keep.sum()) == 0 or not bool((y2[keep] == ids[keep]).all()):
            return
        shifted = ids[:, 1:] == y2[:, :-1]
        probe.report(
            kind="bug",
            check=self.name,
            message="the cross-entropy targets are the input tokens themselves (position t predicts token t): "
            "the labels were not shifted, so the model learns to copy and the loss drops to ~0",
            evidence={
                "positions_equal_to_input": int(keep.sum()),
                "positions": y.numel(),
                "next_token_agreement": float(shifted.float().mean()),
            },
            fix="predict the next token: logits[:, :-1] against ids[:, 1:] (Hugging Face causal LMs shift "
            "labels=input_ids themselves; a hand-written loss must shift; the Trainer's label smoothing shifts only "
            "for the causal-LM classes it knows by name: shift the labels in the collator, or smooth in compute_loss)",
            where=where if where is not None and where[0] is not None else None,
        )


MIN_CLASS_BATCH = 16  # a batch this large drawn at random from a task with 2+ classes is almost never one class


@register
class SingleClassBatches(Check):
    """Every watched step's classification batch holds a single class (the targets of its first cross-entropy
    all equal, 16+ of them, 2+ classes in the logits), or its targets in label order with fewer classes than the
    logits offer (a batch straddling two label groups), while a DataLoader without shuffling serves the data: the
    data set is stored grouped by label and read in order, so each step pulls the model toward one class."""

    name = "batches_single_class"

    def __init__(self) -> None:
        self.classes: list[int | None] = []  # per lead step: the one class its batch held, None if mixed
        self.seen_this_step = False
        self.iterated: list[Any] = []  # DataLoaders iterated during the watch (built before it, too)

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "loader.iter" and ev.obj is not None and ev.obj not in self.iterated:
            self.iterated.append(ev.obj)

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        y = ev.target
        if self.seen_this_step or ev.function not in ("cross_entropy", "nll_loss") or not isinstance(y, torch.Tensor):
            return
        if y.is_floating_point() or y.dim() != 1 or ev.input.dim() != 2 or ev.input.shape[1] < 2:
            return
        self.seen_this_step = True
        keep = y[y != ev.kwargs.get("ignore_index", -100)]
        single = keep.numel() >= MIN_CLASS_BATCH and bool((keep == keep[0]).all())
        # or in label order with fewer classes than the logits offer: a batch that straddles two label groups
        grouped = (
            keep.numel() >= MIN_CLASS_BATCH
            and bool((keep[1:] >= keep[:-1]).all())
            and int(torch.unique(keep).numel()) < ev.input.shape[1]
        )
        self.classes.append(int(keep[0]) if single or grouped else None)

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if probe.lead is None or probe.lead() is not ev.optimizer:
            return
        self.seen_this_step = False
        if len(self.classes) < 2 or any(c is None for c in self.classes[-2:]):
            return
        loaders = [*self.iterated, *(dl for dl in list(probe.dataloaders) if dl not in self.iterated)]
        in_order = [
            dl for dl in loaders if isinstance(getattr(dl, "sampler", None), torch.utils.data.SequentialSampler)
        ]
        if not in_order:
            return
        made = probe.made_at.get(id(in_order[0]))
        from expkit.doctor.findings import user_line_of

        file, line = user_line_of(made[1]) if made else (None, None)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"each of the last {len(self.classes)} steps trained on a batch of one class "
            f"(classes {self.classes[-2:]}) from a DataLoader that does not shuffle: the data is read in label "
            "order, so every step pulls the model toward one class",
            evidence={"batch_classes": self.classes[-2:]},
            fix="DataLoader(..., shuffle=True) (or a sampler that mixes the classes)",
            where=(file, line) if file else None,
        )
        self.classes = []


REPEAT_SHARE = 0.5  # a batch whose distinct rows are fewer than half its size draws the same few samples
MIN_REPEAT_BATCH = 8


def distinct_rows(x: torch.Tensor) -> int:
    """How many distinct rows (exact equality) the first dimension of ``x`` holds: rows are grouped by a
    fingerprint (a dot product with fixed weights) and each group is checked member by member."""
    rows = x.detach().reshape(x.shape[0], -1)
    if rows.dtype == torch.bool:
        rows = rows.to(torch.uint8)
    gen = torch.Generator().manual_seed(0)
    w = torch.rand(rows.shape[1], generator=gen, dtype=torch.float64).to(rows.device)
    keys = (rows.double() @ w).tolist()
    groups: dict[float, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    count = 0
    for members in groups.values():
        reps: list[int] = []
        for i in members:
            if not any(torch.equal(rows[i], rows[j]) for j in reps):
                reps.append(i)
        count += len(reps)
    return count


def _index_share(indices: Any) -> float | None:
    """The share of distinct sample indices in one batch of a DataLoader's sampler, or None."""
    if not isinstance(indices, (list, tuple)) or len(indices) < MIN_REPEAT_BATCH:
        return None
    try:
        return len({int(i) for i in indices}) / len(indices)
    except (TypeError, ValueError):
        return None


def _sampler_classes() -> list[type]:
    """torch's Sampler classes that define their own ``__init__`` (WeightedRandomSampler, RandomSampler,
    SubsetRandomSampler, BatchSampler, DistributedSampler, ...)."""
    import torch.utils.data.distributed  # registers DistributedSampler as a subclass

    out, todo = [], list(torch.utils.data.Sampler.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "__init__" in cls.__dict__ and cls.__module__.startswith("torch.") and cls not in out:
            out.append(cls)
    return out


@register
class BatchRepeatsSamples(Check):
    """The first training batch of each watched step holds far fewer distinct samples than its size (fewer than
    half of the first input's rows distinct, 8+ rows) and, when a DataLoader served it, its sampler drew fewer
    than half distinct indices: a sampler or indexing bug (a WeightedRandomSampler given one weight per class)
    draws the same few samples. Names the sampler's construction (else the DataLoader's)."""

    name = "batch_repeats_samples"

    def __init__(self) -> None:
        self.sampler_made: dict[int, Any] = {}  # id(sampler) -> construction stack
        self.loader_of: dict[int, Any] = {}  # id(loader iterator) -> its DataLoader
        self.indices: dict[int, Any] = {}  # id(loader iterator) -> the last index batch its sampler gave
        self.current: Any = None  # the iterator that gave this step's last batch
        self.taken_this_step = False
        self.records: list[dict[str, Any] | None] = []  # per lead step: the measured batch if it repeats

    def start(self, probe: Probe) -> None:
        from torch.utils.data import dataloader

        from expkit.doctor.findings import construction_stack

        check = self

        def make_init(original: Any) -> Any:
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                original(self, *args, **kwargs)
                if probe.active:
                    check.sampler_made[id(self)] = construction_stack(self, 1)

            return __init__

        for cls in _sampler_classes():
            probe.patch(cls, "__init__", make_init)

        def make_next_index(original: Any) -> Any:
            def _next_index(self: Any) -> Any:
                out = original(self)
                if probe.active:
                    check.indices[id(self)] = out
                return out

            return _next_index

        probe.patch(dataloader._BaseDataLoaderIter, "_next_index", make_next_index)

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "loader.iter" and ev.obj is not None and ev.result is not None:
            self.loader_of[id(ev.result)] = ev.obj
        elif ev.name == "loader.next":
            self.current = ev.obj

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = _first_input_of_step(self, ev)
        if x is not None:
            self.records.append(self._measure(x))

    def _measure(self, x: torch.Tensor) -> dict[str, Any] | None:
        if x.dim() < 2 or x.shape[0] < MIN_REPEAT_BATCH or x[0].numel() < 2:
            return None
        it = self.current
        idx_share = _index_share(self.indices.get(id(it))) if it is not None else None
        if it is not None and idx_share is not None and idx_share >= REPEAT_SHARE:
            return None  # the sampler drew distinct samples: rows that repeat are the data's own
        expanded = x.dim() > 0 and x.stride(0) == 0  # one sample expanded to the batch: a repeat whatever it holds
        if it is None and not expanded and (not x.is_floating_point() or bool(((x == 0) | (x == 1)).all())):
            # a 0/1 tensor fed without a loader (an attention mask, one-hot features, the one-hot states of a
            # small environment in an RL buffer), or token ids generated in the loop (a toy LM's few patterns):
            # few distinct rows are what it encodes, not a sampling bug; no sampler drew them
            return None
        if it is None and x._base is not None and x.stride(0) != 0:
            return None  # a slice of the data (basic indexing draws consecutive rows): rows that repeat are the data's
        rows = distinct_rows(x)
        if rows >= REPEAT_SHARE * x.shape[0]:
            return None
        from expkit.doctor.findings import user_frame

        return {"rows": rows, "batch": int(x.shape[0]), "index_share": idx_share, "iter": it, "at": user_frame(3)}

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        if probe.lead is None or probe.lead() is not ev.optimizer:
            return
        self.taken_this_step = False
        self.current = None
        last = self.records[-2:]
        if len(last) < 2 or any(r is None for r in last):
            return
        rec = last[-1]
        assert rec is not None
        loader = self.loader_of.get(id(rec["iter"])) if rec["iter"] is not None else None
        where, symptom = self._where(probe, loader), rec["at"]
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the training batch of each of the last {len(last)} steps holds only {rec['rows']} distinct "
            f"samples among its {rec['batch']} rows"
            + (
                f" (its sampler drew {rec['index_share']:.0%} distinct indices)"
                if rec["index_share"] is not None
                else ""
            )
            + ": the sampler or the indexing draws the same few samples again and again, the rest of the data is "
            "never seen",
            evidence={
                "distinct_rows": [r["rows"] for r in last if r is not None],
                "batch_size": rec["batch"],
                "distinct_index_share": rec["index_share"],
                "forward_line": list(symptom) if symptom[0] else None,
            },
            fix="draw indices over the whole data set: a WeightedRandomSampler takes one weight per sample "
            "(class_weights[labels]), not one per class; index with a permutation of len(dataset)",
            where=where or (symptom if symptom[0] else None),
        )
        self.records = []

    def _where(self, probe: Probe, loader: Any) -> tuple[str | None, int | None] | None:
        """The line that built the loader's sampler (or its batch sampler) while armed, else the loader's own."""
        from expkit.doctor.findings import user_line_of

        if loader is None:
            return None
        made = probe.made_at.get(id(loader))
        loader_at = user_line_of(made[1]) if made else (None, None)
        for s in (getattr(loader, "sampler", None), getattr(loader, "batch_sampler", None)):
            stack = self.sampler_made.get(id(s)) if s is not None else None
            at = user_line_of(stack) if stack else (None, None)
            if at[0] is not None and at != loader_at:
                return at
        return loader_at if loader_at[0] is not None else None
