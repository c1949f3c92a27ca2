"""Graphs kept alive across optimizer steps (issue 32): at the end of the watch, a live tensor whose autograd
graph still reaches nodes made before the previous optimizer step (a running loss summed as a tensor, a list of
losses or outputs kept for a metric) makes the graph grow step over step. A variable left holding one earlier
step's graph (a loss kept until the next assignment) is not that: the graph must span both steps or sit in a
list. Measured, not read from the code: every live tensor is found through the garbage collector, each autograd
node's age is its sequence number, and the line that made the kept tensor comes from the creation stack anomaly
mode records during the watch."""

from __future__ import annotations

import collections
import gc
import os
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent

MAX_NODES_PER_TENSOR = 512  # a bound on the walk from one live tensor (a kept graph shows in its first nodes)
MAX_TENSORS_JUDGED = 10_000  # live non-leaf tensors walked at most


def next_sequence_nr() -> int:
    """The sequence number the next autograd node of this thread will get (PyTorch numbers nodes as made)."""
    with torch.enable_grad():
        leaf = torch.zeros((), requires_grad=True)
        return int((leaf * 1).grad_fn._sequence_nr()) + 1  # type: ignore[union-attr]


def graph_nodes(start: Any, limit: int) -> Iterator[Any]:
    """The autograd nodes of ``start``'s graph, ``start`` first, each once, at most ``limit`` of them."""
    seen = {start}
    todo = [start]
    while todo:
        node = todo.pop()
        yield node
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen and len(seen) < limit:
                seen.add(nxt)
                todo.append(nxt)


def oldest_node(start: Any, before: int, since: int = 0) -> tuple[Any, int] | None:
    """A node of ``start``'s graph made in ``[since, before)`` by sequence number (AccumulateGrad leaves
    excluded), and how many nodes the walk saw; None when there is none."""
    for walked, node in enumerate(graph_nodes(start, MAX_NODES_PER_TENSOR), 1):
        if type(node).__name__ != "AccumulateGrad" and since <= node._sequence_nr() < before:
            return node, walked
    return None


_DOCTOR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the doctor's recording modes live here
_OVERRIDES = os.path.join("torch", "overrides.py")  # and torch's __torch_function__ dispatch


def made_where(node: Any, direct: bool = False) -> tuple[str | None, int | None]:
    """The user's line that made an autograd node, from anomaly mode's creation stack (None when unrecorded);
    ``direct``: only when the user's own line ran the op (not a layer's forward it called)."""
    from expkit.doctor.findings import user_line_of

    stack = (getattr(node, "metadata", None) or {}).get("traceback_")
    if not stack:
        return None, None
    frames: list[tuple[str, int]] = []
    for entry in stack:  # 'File "path", line N, in fn\n    code'
        head = entry.strip().split("\n", 1)[0]
        if head.startswith('File "') and '", line ' in head:
            path, rest = head[6:].split('", line ', 1)
            frames.append((path, int(rest.split(",", 1)[0])))
    frames.reverse()  # innermost first
    if direct:  # below the op's caller: only the doctor's own recording modes (a TorchFunctionMode) may sit
        ops = [f for f in frames if not (f[0].startswith(_DOCTOR_DIR) or f[0].endswith(_OVERRIDES))]
        if ops and user_line_of(tuple(ops[:1]))[0] is None:
            return None, None
    return user_line_of(tuple(frames))


FILLS = ("append", "extend", "insert", "appendleft")  # the calls that put a tensor into a kept container
NUMBERS = ("item", "detach", "tolist", "numpy", "cpu")  # what makes a kept value graph-free


def _grows(tensor: torch.Tensor, mark: int, ours: tuple[list[Any], ...]) -> bool:
    """Whether a tensor holding a graph older than ``mark`` makes the kept graphs grow step over step: its own
    graph reaches a node made since ``mark`` as well (a running sum links each step's graph to the next), or a list
    holds it (one more graph kept at every step). A variable left holding one earlier step's graph (the loss
    ``opt.step(closure)`` returned, a check made once before the loop) keeps one graph, not more each step.
    ``ours``: the lists of the walk itself (the garbage collector's list of live objects), not the program's."""
    nodes = graph_nodes(tensor.grad_fn, MAX_NODES_PER_TENSOR)
    if any(type(n).__name__ != "AccumulateGrad" and n._sequence_nr() >= mark for n in nodes):  # leaves: no age
        return True
    lists = (r for r in gc.get_referrers(tensor) if isinstance(r, (list, collections.deque)))
    return any(all(r is not o for o in ours) for r in lists)  # the walk's own lists aside


def _holder_name(tensor: torch.Tensor) -> tuple[str, str] | None:
    """``(file, name)`` of a user's variable that holds a list (or a dict's list) with ``tensor`` in it, read from
    the live frames' locals and globals: the kept tensor is in that container, not in a variable of its own."""
    from expkit.doctor.findings import is_user_file

    holders = [r for r in gc.get_referrers(tensor) if isinstance(r, (list, collections.deque))]
    if not holders:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if is_user_file(file):
            for scope in (frame.f_locals, frame.f_globals):
                for name, value in list(scope.items()):
                    if any(value is h for h in holders):
                        return file, name
                    if isinstance(value, dict) and any(v is h for v in value.values() for h in holders):
                        return file, name
        frame = frame.f_back  # type: ignore[assignment]
    return None


def filled_at(file: str, name: str) -> int | None:
    """The first line of ``file`` that puts something into the container ``name`` (``name.append(..)``,
    ``name[key].append(..)``, ``name += [..]``)."""
    import ast

    from expkit.doctor.findings import source_tree

    tree = source_tree(file)
    if tree is None:
        return None

    def is_name(node: Any) -> bool:
        if isinstance(node, ast.Subscript):  # history["loss"].append(..)
            return is_name(node.value)
        return isinstance(node, ast.Name) and node.id == name

    def plain(node: Any) -> bool:  # not a number or a detached copy put in (the fix of this very bug)
        return not any(
            isinstance(n, ast.Call)
            and (
                (isinstance(n.func, ast.Attribute) and n.func.attr in NUMBERS)
                or (isinstance(n.func, ast.Name) and n.func.id in ("float", "int"))
            )
            for n in ast.walk(node)
        )

    lines = [
        node.lineno
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in FILLS
            and is_name(node.func.value)
            and all(plain(a) for a in node.args)
        )
        or (isinstance(node, ast.AugAssign) and is_name(node.target) and plain(node.value))
    ]
    return min(lines) if lines else None


@register
class GraphKeptAcrossSteps(Check):
    """At the end of the watch (the second step of the optimizer that ended it), every live non-leaf tensor
    whose graph reaches a node made before that optimizer's first step ended is reported once, naming the line
    that made the kept tensor."""

    name = "graph_kept_across_steps"

    def __init__(self) -> None:
        self.marks: dict[int, int] = {}  # id(optimizer) -> sequence number at the end of its first step
        self.since = 0  # the sequence number when the watch began: older graphs are not this loop's
        self.last: tuple[int, int] | None = None  # (id, step index) of the optimizer that stepped last
        self.anomaly: tuple[bool, bool] | None = None  # the program's anomaly-mode settings, to restore

    def start(self, probe: Probe) -> None:
        self.since = next_sequence_nr()
        self.anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled": ours, not the program's
            torch.autograd.set_detect_anomaly(True, check_nan=False)  # records where each node was made

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.last = (id(ev.optimizer), ev.index)
        if ev.index == 1:
            self.marks.setdefault(id(ev.optimizer), next_sequence_nr())

    def finish(self, probe: Probe) -> None:
        if self.anomaly is not None:
            torch.autograd.set_detect_anomaly(self.anomaly[0], check_nan=self.anomaly[1])
            self.anomaly = None
        # judged at the second (or later) step of the optimizer that ended the watch, against its first
        mark = self.marks.get(self.last[0]) if self.last is not None and self.last[1] >= 2 else None
        if mark is None or probe.step < probe.watch_steps:
            return
        kept: list[tuple[torch.Tensor, Any, int]] = []
        judged = 0
        live = gc.get_objects()
        for obj in live:
            if not issubclass(type(obj), torch.Tensor) or obj.grad_fn is None:  # type(), not __class__
                continue
            judged += 1
            if judged > MAX_TENSORS_JUDGED:
                break
            old = oldest_node(obj.grad_fn, mark, self.since)
            if old is not None and _grows(obj, mark, (live, kept)):
                kept.append((obj, old[0], old[1]))
        if not kept:
            return
        tensor, node, _ = kept[0]
        where = made_where(tensor.grad_fn)
        if where[0] is None:
            where = made_where(node)
        holder = _holder_name(tensor)  # kept in a list: the line that put it there, not the line that made it
        stored = filled_at(*holder) if holder is not None else None
        if holder is not None and stored is not None:
            where = (holder[0], stored)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{len(kept)} live tensor(s) still hold autograd graphs made before the previous optimizer step "
            f"(e.g. a {tuple(tensor.shape)} tensor from {type(tensor.grad_fn).__name__}): a loss or output kept as a "
            "tensor across steps keeps its graph, and a running sum links every step's graph to the next",
            evidence={
                "kept_tensors": len(kept),
                "kept_shape": list(tensor.shape),
                "kept_grad_fn": type(tensor.grad_fn).__name__,
                "oldest_node": type(node).__name__,
                "live_tensors_with_graph": judged,
            },
            fix="keep numbers, not graphs: loss.item() for logs and sums, output.detach() for metrics",
            where=where if where[0] is not None else None,
        )
