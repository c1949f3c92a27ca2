"""A sequence model with no usable position information (issue 32): the first training forward of a model that
returns one output per position is replayed with the positions shuffled (the same permutation in every row). When
the outputs come back exactly shuffled the same way, although an output depends on the other positions (changing
one token moves the others), the model cannot tell order: the positional encoding was indexed with an integer
instead of a slice (one row broadcast to every position), or left out. Causal models and recurrent models are not
equivariant, per-token models do not mix positions: neither is judged. Float inputs (a set of points is
legitimately order-free) are judged only when the model holds a position table (a tensor of its own with an
axis as long as the sequence or longer); the line is the user op that first read that table, else the call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import _changed, _first, _Replay
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe

MIN_POSITIONS = 4


def _tables(module: nn.Module, length: int) -> list[torch.Tensor]:
    """Tensors the user's own modules hold directly (not torch's layers) with an axis other than the last as long
    as the sequence or longer: position tables."""
    out = []
    for m in module.modules():
        if type(m).__module__.startswith("torch."):
            continue
        for t in [*m._parameters.values(), *m._buffers.values()]:
            if isinstance(t, torch.Tensor) and t.dim() >= 2 and any(n >= length for n in t.shape[:-1]):
                out.append(t)
    return out


@register
class NoPositionInformation(Check):
    """A model with one output per position whose outputs, replayed with the positions shuffled, come back
    shuffled the same way although they depend on other positions: it has no position information."""

    name = "no_position_information"

    def __init__(self) -> None:
        self.tested: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not ev.first_training(self.tested):
            return
        x, out = (ev.inputs[0] if ev.inputs else None), _first(ev.output)
        if not isinstance(x, torch.Tensor) or out is None or x.dim() < 2 or out.dim() < 2:
            return
        B, T = x.shape[:2]
        if T < MIN_POSITIONS or B < 1 or tuple(out.shape[:2]) != (B, T) or x.dtype == torch.bool:
            return
        ids = not x.is_floating_point()
        if ids and x.dim() != 2:
            return
        tables = [] if ids else _tables(ev.module, T)
        if not ids and not tables:
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            perm = torch.randperm(T, device=x.device)
            if bool((perm == torch.arange(T, device=x.device)).all()):
                perm = perm.roll(1)
            changed = x.clone()
            changed[:, 0] = x[:, -1] if ids else torch.randn_like(x[:, 0]) * (x.std() + 1) + x.mean()
        if ids and bool((changed == x).all()):
            return

        def shuffle(v: Any, p: torch.Tensor) -> Any:
            if isinstance(v, torch.Tensor) and v.dim() >= 2 and tuple(v.shape[:2]) == (B, T):
                v = v[:, p]
                return v[:, :, p] if v.dim() >= 3 and v.shape[2] == T and v is not x and v.dtype == torch.bool else v
            return v

        replay = _Replay(ev.module, ev.kwargs)
        try:
            oa, _ = replay(ev.inputs, record_ops=bool(tables))
            events = replay.events
            oc, _ = replay((changed, *ev.inputs[1:]))
            if oa is None or oc is None or oa.shape != oc.shape or not _changed(oa[:, 1:], oc[:, 1:]):
                return  # the outputs at other positions do not depend on the first: no mixing to judge
            replay.kwargs = {k: shuffle(v, perm) for k, v in ev.kwargs.items()}
            ob, _ = replay(tuple(shuffle(v, perm) for v in ev.inputs))
        except (RuntimeError, IndexError, ValueError, NotImplementedError):
            return
        if ob is None or ob.shape != oa.shape or _changed(oa[:, perm], ob):
            return
        where = user_frame(2)
        ptrs = {t.untyped_storage().data_ptr() for t in tables}
        for kind, line, ins, _, _ in events:
            if kind == "op" and any(t.untyped_storage().data_ptr() in ptrs for t in ins):
                where = line
                break
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the outputs at the {T} positions, replayed with the positions shuffled, come back shuffled "
            "the same way, though each depends on the other positions: the model cannot tell order (a positional "
            "encoding indexed with one position instead of a slice, or none)",
            evidence={"positions": int(T), "output_shape": list(oa.shape), "position_table": bool(tables)},
            fix="add a positional encoding for every position: pe[:, : x.shape[1]] (a slice, not pe[:, x.shape[1]]),"
            " or a learned nn.Embedding(max_len, d) indexed with torch.arange(T)",
            where=where,
        )
