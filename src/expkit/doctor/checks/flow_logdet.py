"""A normalizing flow whose log-determinant has the wrong sign (issue 32): a coupling layer maps ``x`` to ``z`` and
returns ``(z, logdet)``, the log-likelihood is ``log p(z) + logdet``. When the returned ``logdet`` is
``-log|det dz/dx|`` (the inverse map's, ``a.sum()`` where ``z = (x - m) * exp(-a)``), maximising the likelihood
rewards contracting volume: the loss falls, the density is wrong (nflows#26, RealNVP issue reports).

Measured, not read: at the first training forward of a top-level module that takes an (N, D) input and returns
an (N, D) output with an (N,) log-determinant, the module is replayed in eval mode (no dropout, batch norm on its
running statistics: the samples independent) on a few rows, the Jacobian dz/dx of each row is taken with autograd
(D backward passes) and its log|det| compared with the returned value. A value that matches the negated
log|det| and not the log|det| itself is reported, at the line that made the returned log-determinant (of the
first layer inside a flow container that shows the flip itself, when one does)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import replay_target

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe

MAX_DIM = 32  # wider inputs are images or sequences (a Jacobian per row would cost too many backward passes)
ROWS = 16  # rows replayed
MATCH = 1e-3  # agreement, as a share of the log-determinants' scale


@register
class FlowLogdetSign(Check):
    """The ``logdet`` a flow module returns beside its output is ``-log|det J|`` of the map it computes."""

    name = "flow_logdet_sign"

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.reported = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if self.reported or id(ev.module) in self.seen or not (ev.training and ev.grad_enabled):
            return
        x = ev.inputs[0] if ev.inputs else None
        out = ev.output
        if not (isinstance(x, torch.Tensor) and isinstance(out, (tuple, list)) and len(out) == 2):
            return
        z, logdet = out
        if not (isinstance(z, torch.Tensor) and isinstance(logdet, torch.Tensor)):
            return
        if not (x.is_floating_point() and x.dim() == 2 and 2 <= x.shape[1] <= MAX_DIM and z.shape == x.shape):
            return
        if logdet.numel() != x.shape[0] or x.shape[0] < 2:
            return
        self.seen.add(id(ev.module))
        measured = _measure(probe, ev.module, x)
        if measured is None:
            return
        got, true = measured
        scale = max(float(true.abs().max()), 1e-6)
        if scale < 1e-3:  # a volume-preserving map at its start (log|det| ~ 0): the sign cannot be told
            return
        flipped = float((got + true).abs().max()) <= MATCH * max(scale, 1.0)
        right = float((got - true).abs().max()) <= 0.1 * scale
        if not flipped or right:
            return
        self.reported = True
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(ev.module).__name__} returns a log-determinant that is minus log|det dz/dx| of the map "
            f"it computes (returned {float(got[0]):.4g}, measured {float(true[0]):.4g} on its first row): the "
            "likelihood log p(z) + logdet then rewards shrinking volume, so the loss falls while the density is wrong",
            evidence={"returned": [float(v) for v in got[:4]], "measured_log_abs_det": [float(v) for v in true[:4]]},
            fix="return log|det dz/dx| of the forward map: for z = (x - m) * exp(-a) that is -a.sum(1); for "
            "z = x * exp(s) + t it is s.sum(1)",
            where=_logdet_line(_culprit(probe, ev.module, x)),
        )


def _culprit(probe: Probe, module: Any, x: torch.Tensor) -> Any:
    """The innermost layer that shows the flipped sign itself (a coupling inside a flow container), replayed on the
    same rows (a flow keeps the dimension); the module itself when none does."""
    seen: set[type] = {type(module)}
    for child in module.modules():
        if type(child) in seen or not any(True for _ in child.parameters()):
            continue
        seen.add(type(child))
        measured = _measure(probe, child, x)
        if measured is None:
            continue
        got, true = measured
        scale = max(float(true.abs().max()), 1e-6)
        if scale >= 1e-3 and float((got + true).abs().max()) <= MATCH * max(scale, 1.0):
            return child
    return module


def _measure(probe: Probe, module: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(returned logdet, log|det dz/dx|)`` of ``ROWS`` rows, the module replayed in eval mode; None when the
    replay does not give the same kind of output or a Jacobian cannot be taken."""
    rows = x[:ROWS].detach().clone().requires_grad_(True)
    modes = [(m, m.training) for m in module.modules()]
    rng = torch.get_rng_state()
    try:
        with probe.quiet(), torch.enable_grad():
            module.eval()
            out = replay_target(module)(rows)
            z, logdet = out if isinstance(out, (tuple, list)) and len(out) == 2 else (None, None)
            if not (isinstance(z, torch.Tensor) and isinstance(logdet, torch.Tensor)) or z.shape != rows.shape:
                return None
            if not z.requires_grad:
                return None
            cols = [
                torch.autograd.grad(z[:, j].sum(), rows, retain_graph=True, allow_unused=True)[0]
                for j in range(z.shape[1])
            ]
    except RuntimeError:  # a module that cannot be replayed on a slice (a fixed batch size)
        return None
    finally:
        torch.set_rng_state(rng)
        for m, was in modes:
            m.training = was
    if any(c is None for c in cols):
        return None
    jac = torch.stack(cols, dim=1).double()  # (rows, D out, D in)
    true = torch.linalg.slogdet(jac).logabsdet
    got = logdet.detach().reshape(-1).double()
    if got.shape != true.shape or not bool(torch.isfinite(true).all()) or not bool(torch.isfinite(got).all()):
        return None
    return got, true


def _logdet_line(module: Any) -> tuple[str | None, int | None] | None:
    """The line that made the log-determinant ``forward`` returns: the last assignment of the name returned
    second, else the ``return`` itself."""
    fn = inspect.unwrap(type(module).forward)
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    returns = [
        n for n in ast.walk(tree) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) and n.value.elts
    ]
    if not returns or file is None:
        return None
    ret = max(returns, key=lambda n: n.lineno)
    second = ret.value.elts[1] if isinstance(ret.value, ast.Tuple) and len(ret.value.elts) > 1 else None
    line = ret.lineno
    if isinstance(second, ast.Name):
        assigned = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and n.lineno < ret.lineno
            and any(
                isinstance(t, ast.Name) and t.id == second.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        line = max(assigned, default=line)
    return file, first + line - 1
