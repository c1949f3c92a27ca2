"""A loss target that carries gradient into a model trained in the same step (issue 32): the target of a loss
(``kl_div``'s, a soft ``cross_entropy``'s, ``mse_loss``'s, ``binary_cross_entropy``'s; or the probabilities ``p``
of a hand-written soft cross-entropy ``-(p * log_softmax(s)).sum()``) requires grad, and its graph reaches
trainable parameters of its own that the same optimizer which trains the input's side steps: the loss pulls
the teacher towards the student. Measured on the autograd graph (the target's leaves against the input's) and
on the optimizer that steps next. The finding names the line that made the target (anomaly mode's record of its
node), else the loss call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.graph_kept import made_where
from expkit.doctor.findings import raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, LossEvent, Probe, StepEvent

MAX_NODES = 200_000  # a bound on one graph walk
MAX_PENDING = 64  # candidates remembered between two steps
SKIP = {  # nodes that only move or reshape values: looked through to the node that made a tensor
    "ViewBackward0",
    "UnsafeViewBackward0",
    "ReshapeAliasBackward0",
    "UnsqueezeBackward0",
    "SqueezeBackward0",
    "SqueezeBackward1",
    "ExpandBackward0",
    "CloneBackward0",
    "ToCopyBackward0",
    "PermuteBackward0",
    "TransposeBackward0",
    "TBackward0",
    "SliceBackward0",
    "SelectBackward0",
    "NegBackward0",
    "ContiguousBackward0",
    "GatherBackward0",  # the log-probability of the chosen action (Categorical.log_prob)
}
PROBS = {"SoftmaxBackward0", "SigmoidBackward0"}
LOGS = {"LogSoftmaxBackward0", "LogBackward0", "LogSigmoidBackward0", "LogsumexpBackward0"}
POLICY_GRADIENT = "weight * log-probability (a policy gradient)"  # the evidence's "loss" of a policy-gradient case


def _leaves(node: Any, blocked: frozenset[Any] = frozenset()) -> dict[int, torch.Tensor]:
    """Leaf tensors (AccumulateGrad variables) reached from ``node``, not walking through ``blocked`` nodes."""
    out: dict[int, torch.Tensor] = {}
    if node is None or node in blocked:
        return out
    seen = {node}
    todo = [node]
    while todo and len(seen) < MAX_NODES:
        n = todo.pop()
        var = getattr(n, "variable", None)
        if isinstance(var, torch.Tensor):
            out[id(var)] = var
        for nxt, _ in n.next_functions:
            if nxt is not None and nxt not in seen and nxt not in blocked:
                seen.add(nxt)
                todo.append(nxt)
    return out


def _through(node: Any, hops: int = 6) -> Any:
    """The first node behind ``node`` that is not a view or copy."""
    while node is not None and hops > 0 and type(node).__name__ in SKIP:
        nxt = [n for n, _ in node.next_functions if n is not None]
        if len(nxt) != 1:
            break
        node = nxt[0]
        hops -= 1
    return node


def _logish(node: Any, depth: int = 3) -> bool:
    """``node`` computes a log-probability (a log_softmax, a log, a difference of logs)."""
    node = _through(node)
    if node is None:
        return False
    name = type(node).__name__
    if name in LOGS:
        return True
    if depth > 0 and name in ("SubBackward0", "AddBackward0", "RsubBackward1"):
        return any(_logish(n, depth - 1) for n, _ in node.next_functions if n is not None)
    return False


class _Candidate:
    __slots__ = ("evidence", "input_ids", "target_ids", "where")

    def __init__(self, target_ids: set[int], input_ids: set[int], where: Any, evidence: dict[str, Any]) -> None:
        self.target_ids = target_ids
        self.input_ids = input_ids
        self.where = where
        self.evidence = evidence


@register
class LossTargetCarriesGradient(Check):
    """A loss's target (a ``kl_div``/soft ``cross_entropy``/``mse_loss`` target, or the probabilities of a
    hand-written soft cross-entropy) requires grad and reaches parameters of its own that the optimizer training
    the input also steps: the distillation gradient pulls the teacher towards the student (detach the target)."""

    name = "loss_target_carries_gradient"

    def __init__(self) -> None:
        self.pending: list[_Candidate] = []
        self.walked: set[Any] = set()

    # ---- candidates ------------------------------------------------------------------------------
    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        target = ev.target
        if not isinstance(target, torch.Tensor) or not target.is_floating_point():
            return
        if ev.function in ("cross_entropy",) and target.shape != ev.input.shape:
            return  # class indices (or an ill-shaped target): not a distribution
        if ev.function == "nll_loss":
            return
        self._judge_loss(ev.function, ev.input, target, raw_stack(3))

    def _judge_loss(self, fname: str, inp: Any, target: Any, stack: Any) -> None:
        if not isinstance(inp, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        if target.grad_fn is None or inp.grad_fn is None or len(self.pending) >= MAX_PENDING:
            return
        t_leaves = _leaves(target.grad_fn)
        i_leaves = _leaves(inp.grad_fn)
        self._add(t_leaves, i_leaves, target.grad_fn, stack, {"loss": fname})

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        """A hand-written soft cross-entropy or KL: ``p * log q`` with ``p`` a softmax/sigmoid output."""
        root = ev.tensor.grad_fn
        if root is None or not ev.tensor.requires_grad:
            return
        seen = {root}
        todo = [root]
        while todo and len(seen) < MAX_NODES and len(self.pending) < MAX_PENDING:
            node = todo.pop()
            if type(node).__name__ == "MulBackward0" and node not in self.walked:
                self.walked.add(node)
                self._judge_mul(node, raw_stack(3))
            for nxt, _ in node.next_functions:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)

    def _judge_mul(self, node: Any, stack: Any) -> None:
        ops = [n for n, _ in node.next_functions]
        if len(ops) != 2 or any(o is None for o in ops):
            return
        for p_op, q_op in (ops, ops[::-1]):
            prob = _through(p_op)
            if prob is None or type(prob).__name__ not in PROBS or not _logish(q_op):
                continue
            try:  # p and log q over the same classes (not gates weighting experts' log-probabilities)
                if tuple(node._saved_self.shape) != tuple(node._saved_other.shape):
                    return
            except (AttributeError, RuntimeError):
                pass
            t_leaves = _leaves(prob)
            i_leaves = _leaves(q_op, frozenset({prob}))
            self._add(t_leaves, i_leaves, prob, stack, {"loss": "p * log q (hand-written)"})
            return
        for w_op, q_op in (ops, ops[::-1]):  # a policy gradient: advantage * log pi(action)
            if _logish(q_op) and not _logish(w_op) and type(_through(w_op)).__name__ not in PROBS:
                self._add(_leaves(w_op), _leaves(q_op), w_op, stack, {"loss": POLICY_GRADIENT})
                return

    def _add(
        self, t_leaves: dict[int, torch.Tensor], i_leaves: dict[int, torch.Tensor], node: Any, stack: Any, ev: dict
    ) -> None:
        t_own = {i for i, t in t_leaves.items() if i not in i_leaves and t.requires_grad}
        i_own = {i for i, t in i_leaves.items() if i not in t_leaves and t.requires_grad}
        if not t_own or not i_own:
            return
        file, line = made_where(node)
        loss_file, loss_line = user_line_of(stack)
        where = (file, line) if file is not None else ((loss_file, loss_line) if loss_file is not None else None)
        evidence = {
            **ev,
            "target_only_params": len(t_own),
            "loss_line": f"{loss_file}:{loss_line}" if loss_file else None,
        }
        self.pending.append(_Candidate(t_own, i_own, where, evidence))

    # ---- judged when an optimizer steps ----------------------------------------------------------
    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if not self.pending:
            return
        held = {id(p) for p in ev.params}
        grads = {id(p) for p in ev.params if p.grad is not None}
        for c in self.pending:
            stepped = c.target_ids & held & grads
            if not stepped or not (c.input_ids & held):
                continue  # the target's parameters are another optimizer's (a GAN's D), or none steps them
            if c.evidence.get("loss") == POLICY_GRADIENT:
                message = (
                    "a log-probability is weighted by a value that requires grad (an advantage or return built from "
                    f"a critic's output): the policy-gradient loss also trains the {len(stepped)} parameter "
                    "tensor(s) behind the weight, pushing the critic to make the advantage of likely actions small"
                )
                fix = "detach the weight: advantage = (returns - values).detach()"
            else:
                message = (
                    f"a loss target requires grad and its graph reaches {len(stepped)} parameter tensor(s) of its "
                    "own that the optimizer training the input also steps: the loss's gradient flows into "
                    "whatever made the target (a jointly trained teacher is pulled towards the student)"
                )
                fix = "detach the target (teacher_probs.detach(), or compute it under torch.no_grad())"
            probe.report(
                kind="bug",
                check=self.name,
                message=message,
                evidence={**c.evidence, "target_params_stepped": len(stepped)},
                fix=fix,
                where=c.where,
            )
        self.pending = []

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        self.pending = []
        self.walked = set()
