"""A policy-gradient weight that carries the critic's gradient (issue 32): in actor-critic training the policy
term is ``-(log_prob * advantage)`` with ``advantage = returns - values``; left undetached, the advantage passes
the policy term's gradient into the value head, which then learns to make the advantage of likely actions large
instead of predicting the returns (PyTorch forum and A2C issue reports). The loss falls, nothing warns.

Measured on the backpropagated graph: a product whose one factor comes from a log-probability (a
``log_softmax``/``logsumexp`` node below it) and whose other factor, with no log-probability below it, reaches
the prediction that a regression loss (``mse_loss``, ``smooth_l1_loss``, ``huber_loss``, ``l1_loss``) of the same
step fits: the critic's value. An entropy term (``p * log p``) has a log-probability on both sides and is not
judged. Named at the user's line that made that factor (``advantage = returns - values``), from anomaly mode's
creation stack of its autograd node."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.graph_kept import graph_nodes, made_where

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, LossEvent, Probe, StepEvent

VALUE_LOSSES = ("mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss")
LOG_PROB_NODES = ("LogSoftmaxBackward0", "LogsumexpBackward0")
MAX_NODES = 50_000  # a graph bigger than this is not walked


@register
class AdvantageTrainsCritic(Check):
    """A policy-gradient product whose non-log-probability factor reaches the value a regression loss fits."""

    name = "advantage_trains_critic"

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}  # id(grad_fn of a regression loss's prediction) -> the node
        self.reported = False

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        node = ev.input.grad_fn
        if ev.function in VALUE_LOSSES and node is not None and not self.reported:
            self.values[id(node)] = node

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        values, self.values = self.values, {}
        if self.reported or not values or ev.tensor.grad_fn is None:
            return
        found = _policy_weight_on_value(ev.tensor.grad_fn, values)
        if found is None:
            return
        self.reported = True
        where = _line_of(found)
        probe.report(
            kind="bug",
            check=self.name,
            message="the policy-gradient term multiplies a log-probability by a factor that carries the critic's "
            "gradient (the advantage reaches the value the value loss fits, with no detach): the policy term trains "
            "the value head to make the advantage of likely actions large, not to predict the returns",
            evidence={"factor_node": type(found).__name__},
            fix="detach the advantage: advantage = (returns - values).detach() (or values.detach() in it)",
            where=where,
        )

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.values = {}


def _marks(root: Any, values: dict[int, Any]) -> dict[int, tuple[bool, bool]] | None:
    """For every node under ``root``: (a log-probability node is at or below it, a value node is at or below it),
    children settled before parents; None when the graph is too big to walk."""
    marks: dict[int, tuple[bool, bool]] = {}
    started: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            logp, value = type(node).__name__ in LOG_PROB_NODES, key in values
            for child, _ in node.next_functions:
                c_logp, c_value = marks.get(id(child), (False, False)) if child is not None else (False, False)
                logp, value = logp or c_logp, value or c_value
            marks[key] = (logp, value)
            continue
        if key in started:
            continue
        started.add(key)
        if len(started) > MAX_NODES:
            return None
        stack.append((node, True))
        stack.extend((c, False) for c, _ in node.next_functions if c is not None and id(c) not in started)
    return marks


def _policy_weight_on_value(root: Any, values: dict[int, Any]) -> Any:
    """The factor node of a product (log-probability x factor) whose factor reaches a value node and has no
    log-probability below it; None when there is none."""
    marks = _marks(root, values)
    if marks is None:
        return None
    for node in graph_nodes(root, MAX_NODES):
        kids = [c for c, _ in node.next_functions if c is not None]
        if type(node).__name__ == "MulBackward0" and len(kids) == 2:
            for a, b in ((kids[0], kids[1]), (kids[1], kids[0])):
                if marks.get(id(a)) == (True, False) and marks.get(id(b)) == (False, True):
                    return b
    return None


def _line_of(node: Any) -> tuple[str, int] | None:
    """The user's line that made ``node`` (anomaly mode's creation stack, which ``graph_kept_across_steps`` keeps on
    during the watch), else of the nearest node below it (through shape ops) that has one."""
    for _ in range(8):
        if node is None:
            return None
        file, line = made_where(node)
        if file is not None and line is not None:
            return file, line
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return None
