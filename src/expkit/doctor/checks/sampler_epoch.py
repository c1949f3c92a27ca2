"""A ``DistributedSampler`` that shuffles but never gets ``set_epoch``: its permutation is seeded by
``seed + epoch``, so without ``set_epoch(epoch)`` every epoch visits the data in the same order on every
rank (PyTorch's DistributedSampler docstring: "calling set_epoch() ... is necessary to make shuffling
work properly across multiple epochs")."""

from __future__ import annotations

import ast
import functools
import sys
from typing import TYPE_CHECKING

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import RawStack, raw_stack, source_tokens, source_tree

TORCH_PARTS = ("/torch/", "\\torch\\", "/expkit/", "\\expkit\\")  # frames between the loop and the sampler

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, Probe


@functools.lru_cache(maxsize=32)
def _loop_bodies(file: str) -> tuple[tuple[int, int, int], ...]:
    """``(loop line, first body line, last body line)`` of every ``for``/``while`` in ``file`` (empty when it
    cannot be parsed)."""
    tree = source_tree(file)
    return tuple(
        (node.lineno, node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    )


def _in_a_loop(file: str, line: int, own: bool) -> bool:
    """Whether ``line`` of ``file`` lies in a loop's body (``own``: not counting the loop that starts there)."""
    return any(first <= line <= last and not (own and start == line) for start, first, last in _loop_bodies(file))


def _epoch_loop(file: str, line: int) -> int | None:
    """The first line of the innermost loop whose body holds ``line`` (not a loop starting there): where the
    epoch begins, so where ``set_epoch`` belongs."""
    around = [(start, first) for start, first, last in _loop_bodies(file) if first <= line <= last and start != line]
    return max(around)[0] if around else None


def inside_an_epoch_loop(stack: RawStack) -> bool:
    """Whether the user's innermost frame on ``stack`` runs in a loop's body that itself runs in a loop (in the
    same file, or in a caller's loop): a per-batch call inside an epoch loop."""
    frames = _user_frames(stack)
    if not frames:
        return False
    (file, line), outer = frames[0], frames[1:]
    inner = _epoch_loop(file, line)
    if inner is None:
        return False
    return _in_a_loop(file, inner, own=True) or any(_in_a_loop(f, n, own=False) for f, n in outer)


def _user_frames(stack: RawStack) -> list[tuple[str, int]] | None:
    """The user's frames on ``stack`` (innermost first), or None when an installed package other than torch
    (Lightning, transformers, accelerate) iterates the loader: those call ``set_epoch`` themselves."""
    from expkit.diagnose.tracebacks import classify_frame

    yours: list[tuple[str, int]] = []
    for path, line in stack:
        kind = "yours" if path.startswith("<") and not path.startswith("<frozen") else classify_frame(path)
        if kind == "yours":
            yours.append((path, line))
        elif kind == "framework" and not yours and not any(part in path for part in TORCH_PARTS):
            return None
    return yours


def _loader_iterates(stack: RawStack) -> bool:
    """Whether a DataLoader (its batch sampler) started this iteration of the sampler: the first frame below the
    sampler's own ``__iter__`` and the doctor's wrapper lies in ``torch.utils.data``. A program that iterates the
    sampler itself (``next(iter(sampler))`` to log the epoch's first index) starts no epoch."""
    for path, _ in stack:
        norm = path.replace("\\", "/")
        if "/expkit/" in norm or norm.endswith("/torch/utils/data/distributed.py"):
            continue
        return "/torch/utils/data/" in norm
    return False


@register
class SamplerWithoutSetEpoch(Check):
    """A shuffling DistributedSampler whose ``epoch`` never changes: iterated by the user's loop inside an epoch
    loop with no ``set_epoch`` in the loop's files (seen at the first epoch), or started a second time with the
    same ``epoch`` (seen at the epoch boundary)."""

    name = "sampler_without_set_epoch"

    def __init__(self) -> None:
        self.epochs: dict[int, tuple[int, int]] = {}  # id(sampler) -> (epoch at the last __iter__, iterations)
        self.early: set[int] = set()  # samplers already reported at their first epoch

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        sampler = ev.obj
        if ev.name != "sampler.iter" or sampler is None or not getattr(sampler, "shuffle", False):
            return
        stack = raw_stack(2)
        if not _loader_iterates(stack):
            return  # the program's own look at the order (next(iter(sampler)) to log it) starts no epoch
        epoch = int(getattr(sampler, "epoch", 0))
        last = self.epochs.get(id(sampler))
        self.epochs[id(sampler)] = (epoch, 1 if last is None else last[1] + 1)
        if last is None:
            self._no_set_epoch_in_source(probe, sampler, stack)
        if last is None or last[0] != epoch or id(sampler) in self.early:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a shuffling DistributedSampler started epoch {last[1] + 1} with sampler.epoch still "
            f"{epoch}: set_epoch() was never called, so every epoch repeats the same order on each of its "
            f"{getattr(sampler, 'num_replicas', '?')} ranks",
            evidence={
                "sampler_epoch": epoch,
                "epochs_started": last[1] + 1,
                "num_replicas": getattr(sampler, "num_replicas", None),
                "samples_per_rank": getattr(sampler, "num_samples", None),
            },
            fix="call loader.sampler.set_epoch(epoch) at the start of each epoch, before iterating the loader",
        )

    def _no_set_epoch_in_source(self, probe: Probe, sampler: object, stack: RawStack) -> None:
        """At the first epoch: the loop over the loader sits in an epoch loop (its own line, or a caller's, is in
        a loop's body) and none of those files nor the main script names ``set_epoch``: the second epoch will
        repeat the first's order. Seen now, not an epoch later (an epoch outlasts the watched steps)."""
        frames = _user_frames(stack)
        if not frames:
            return
        (file, line), outer = frames[0], frames[1:]
        epoch_loops = [f for f, n in outer if _in_a_loop(f, n, own=False)]  # callers inside a loop's body
        if not (_in_a_loop(file, line, own=True) or epoch_loops):
            return  # one pass over the data: the epoch never changes, set_epoch would change nothing
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        searched = sorted({file, *epoch_loops} | ({main} if main else set()))
        if any(tok.string == "set_epoch" for f in searched for tok in source_tokens(f)):
            return
        self.early.add(id(sampler))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a shuffling DistributedSampler is iterated inside an epoch loop and no file of the loop "
            f"({', '.join(searched)}) calls set_epoch(): every epoch will repeat the first epoch's order on each "
            f"of its {getattr(sampler, 'num_replicas', '?')} ranks",
            evidence={
                "sampler_epoch": int(getattr(sampler, "epoch", 0)),
                "num_replicas": getattr(sampler, "num_replicas", None),
                "files_searched": len(searched),
            },
            fix="call loader.sampler.set_epoch(epoch) at the start of each epoch, before iterating the loader",
            where=self._epoch_line(file, line, [(f, n) for f, n in outer if f in epoch_loops]),
        )

    @staticmethod
    def _epoch_line(file: str, line: int, callers: list[tuple[str, int]]) -> tuple[str, int]:
        """The first line of the epoch loop, where ``set_epoch`` belongs: the loop around the loader's own loop,
        else around the first caller's call inside a loop, else the loader's loop itself."""
        for f, n in [(file, line), *callers]:
            start = _epoch_loop(f, n)
            if start is not None:
                return f, start
        return file, line
