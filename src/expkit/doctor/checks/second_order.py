"""A second-order graph asked for and then dropped (issue 32): MAML's inner loop takes
``torch.autograd.grad(loss, params, create_graph=True)`` so that the outer loss can differentiate through the
update, then writes the update with ``p.data -= lr * g``. A write through ``.data`` keeps the values and drops the
graph, so the meta-gradient never reaches the base parameters and the outer step trains nothing. Measured:
``torch.autograd.grad`` calls with ``create_graph=True`` are recorded while armed, and each ``tensor.data = value``
whose value carries a graph (the probe's ``graph_data_writes``) is walked up its autograd graph; a write whose
value was computed from such a gradient is named at its line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.findings import RawStack
    from expkit.doctor.probe import Probe, StepEvent

MAX_NODES = 20_000  # one graph walk
MAX_GRADIENTS = 4096  # second-order gradients remembered in one watch


def _reaches(node: Any, targets: set[int]) -> bool:
    seen, todo = {id(node)}, [node]
    while todo and len(seen) < MAX_NODES:
        n = todo.pop()
        if id(n) in targets:
            return True
        for nxt, _ in getattr(n, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                todo.append(nxt)
    return False


@register
class SecondOrderDropped(Check):
    """A value computed from a ``create_graph=True`` gradient written into a tensor through ``.data``: the
    higher-order graph the program asked for is dropped, and the outer loss never reaches what it should train."""

    name = "second_order_dropped"

    def __init__(self) -> None:
        self.nodes: list[Any] = []  # grad_fn of each create_graph gradient (kept: their ids stay theirs)
        self.made: RawStack | None = None  # where the first create_graph gradient was taken
        self.reported = False

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            def grad(outputs: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
                result = original(outputs, inputs, *args, **kwargs)
                create = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
                if create and probe.active and not probe._in_check and len(check.nodes) < MAX_GRADIENTS:
                    for g in result if isinstance(result, (tuple, list)) else (result,):
                        if isinstance(g, torch.Tensor) and g.grad_fn is not None:
                            check.nodes.append(g.grad_fn)
                    check.made = check.made or raw_stack(2)
                return result

            grad.__wrapped__ = original  # type: ignore[attr-defined]
            return grad

        probe.patch(torch.autograd, "grad", make)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.reported or not self.nodes or not probe.graph_data_writes:
            return
        targets = {id(n) for n in self.nodes}
        for node, stack in probe.graph_data_writes:
            if not _reaches(node, targets):
                continue
            self.reported = True
            made_line = user_line_of(self.made)[1] if self.made is not None else None
            probe.report(
                kind="bug",
                check=self.name,
                message="a value computed from a gradient taken with create_graph=True"
                + (f" (line {made_line})" if made_line is not None else "")
                + " was written into a tensor through .data: the write keeps the values and drops the graph, so "
                "the outer loss does not differentiate through this update and the parameters it should train "
                "(MAML's base weights) get no meta-gradient",
                evidence={"create_graph_line": made_line, "data_writes": len(probe.graph_data_writes)},
                fix="keep the update on the graph: fast = {n: p - lr * g for ...} and run the model with "
                "torch.func.functional_call(model, fast, x) (or use learn2learn / higher), not p.data -= lr * g",
                where=user_line_of(stack),
            )
            return
