"""A custom ``torch.autograd.Function`` whose ``backward`` does not use its incoming gradient: it returns the
local derivative without multiplying it by ``grad_output`` (``return y * (1 - y)`` for a sigmoid), or ignores it,
so every gradient upstream of it is wrong and autograd never says so. Any correct backward is a vector-Jacobian
product, LINEAR in ``grad_output``: ``backward(0) == 0`` and ``backward(2 g) == 2 backward(g)``. While the probe
is armed, ``Function.apply`` is wrapped; the first call with grad of each Function class defined in the user's
files is replayed on detached clones of its tensor inputs (the program's random state kept) and differentiated
with ``torch.autograd.grad`` for the grad_outputs 0, g and 2g (g small and random). Straight-through estimators
(``return g``, ``g * mask``), gradient reversal, several outputs, non-tensor arguments and ``once_differentiable``
are linear and stay silent; a gradient clamp in the backward is linear at g's small scale. Named at the
``return`` of the backward that leaves ``grad_output`` out (else its last ``return``). A linear backward that is
not the forward's derivative (``x * c`` whose backward returns ``grad_output``, the factor ``c`` left out) fails
the adjoint test ``<g, J v> = <backward(g), v>``, ``J v`` by central differences of the forward in float64:
``backward_not_derivative``. Forwards with jumps or locally constant (quantisers, straight-through estimators) and
identity forwards (gradient reversal, gradient scaling) change gradients on purpose and are not tested."""

from __future__ import annotations

import ast
import contextlib
import inspect
import math
import textwrap
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe

G_SCALE = 1e-2  # the probe gradient's size: a gradient clamp in a backward (at 1, 0.1) is linear at this scale
ZERO_TOL = 1e-3  # backward(0) may be this fraction of backward(g) (it is exactly 0 for any linear backward)
LINEAR_TOL = 1e-2  # |backward(2g) - 2 backward(g)| / (|2 backward(g)| + |backward(2g)|): 1/3 when g is ignored
MAX_ELEMENTS = 1 << 26  # a Function on more input values than this is not replayed (memory)
STEPS = (1e-6, 1e-5)  # central-difference steps, relative to each input's scale, in float64
SMOOTH_TOL = 1e-2  # the two steps' directional derivatives agree this well on a smooth forward (a jump: not)
ADJOINT_TOL = 0.1  # |<g, J v> - <backward(g), v>| beyond this share of the larger: not the derivative
IDENTITY_TOL = 1e-3  # a forward whose J v is v this closely is the identity (a gradient reversal or scaling layer)


def _user_backward(cls: type) -> Any:
    """The function autograd calls as ``cls``'s backward (its ``backward``, or its ``vjp``), None when neither is
    overridden (``BackwardCFunction._get_user_fn``'s rule)."""
    base = torch.autograd.Function
    backward, vjp = getattr(cls, "backward", None), getattr(cls, "vjp", None)
    fn = vjp if vjp is not None and vjp is not base.vjp else backward
    return None if fn is None or fn is base.backward else fn


def _is_users(fn: Any) -> bool:
    from expkit.diagnose.tracebacks import classify_frame

    code = getattr(inspect.unwrap(fn), "__code__", None)
    path = code.co_filename if code is not None else ""
    return bool(path) and not path.startswith("<frozen") and classify_frame(path) == "yours"


def _tensors(value: Any) -> list[torch.Tensor]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [t for t in items if isinstance(t, torch.Tensor)]


def _differentiable(t: torch.Tensor) -> bool:
    return t.requires_grad and (t.is_floating_point() or t.is_complex())


def _norm(ts: Sequence[torch.Tensor | None]) -> float:
    return math.sqrt(sum(float(t.detach().abs().double().pow(2).sum()) for t in ts if t is not None))


def _finite(ts: Sequence[torch.Tensor | None]) -> bool:
    return all(bool(torch.isfinite(t.detach()).all()) for t in ts if t is not None)


def _tracing() -> bool:
    compiling = getattr(torch.compiler, "is_compiling", None)
    return bool(
        torch.jit.is_tracing()
        or torch.jit.is_scripting()
        or (compiling is not None and compiling())
        or torch._C._are_functorch_transforms_active()
    )


@contextlib.contextmanager
def _kept_rng(tensors: Sequence[torch.Tensor]) -> Iterator[list[Any]]:
    """The program's random state is the same after the block; yields the states to restore before each
    backward (a backward that draws random numbers draws the same ones for g and 2g)."""
    cuda = sorted({t.device.index or 0 for t in tensors if t.device.type == "cuda"})
    with torch.random.fork_rng(devices=cuda, device_type="cuda"):
        yield [torch.get_rng_state(), [(d, torch.cuda.get_rng_state(d)) for d in cuda]]


def _restore_rng(state: list[Any]) -> None:
    torch.set_rng_state(state[0])
    for d, s in state[1]:
        torch.cuda.set_rng_state(s, d)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _own_nodes(fdef: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or lambdas defined inside it."""
    todo = list(ast.iter_child_nodes(fdef))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _only_none(node: ast.expr | None) -> bool:
    if node is None:
        return True
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, (ast.Tuple, ast.List)) and all(_only_none(e) for e in node.elts)


def backward_return_line(fn: Any) -> tuple[str | None, int | None]:
    """``(file, line)`` of the ``return`` of a backward that uses none of the names holding its incoming
    gradients (its parameters after ``ctx`` and what is assigned from them), else its last ``return`` (a
    ``return`` of only ``None`` is no gradient, not one that leaves ``grad_output`` out), else its ``def``."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)
    file = code.co_filename if code is not None else inspect.getsourcefile(fn)
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None:
        return file, first
    args = fdef.args
    grads = {a.arg for a in [*args.posonlyargs, *args.args][1:]} | ({args.vararg.arg} if args.vararg else set())
    nodes = list(_own_nodes(fdef))
    grown = True
    while grown:  # the names assigned from the gradients, transitively
        grown = False
        for node in nodes:
            value: ast.AST | None = None
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                value, targets = node.value, list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                value, targets = node.value, [node.target]
            elif isinstance(node, (ast.For, ast.comprehension)):
                value, targets = node.iter, [node.target]
            if value is None or not _names(value) & grads:
                continue
            new = set().union(*(_names(t) for t in targets)) - grads
            if new:
                grads |= new
                grown = True
    returns = sorted((n for n in nodes if isinstance(n, ast.Return)), key=lambda n: n.lineno)
    blind = [r for r in returns if not _only_none(r.value) and r.value is not None and not _names(r.value) & grads]
    chosen: ast.stmt = blind[0] if blind else (returns[-1] if returns else fdef)
    return file, first + chosen.lineno - 1


def _adjoint(
    call: Any, args: tuple[Any, ...], kwargs: dict[str, Any], g: list[torch.Tensor], rng: list[Any]
) -> tuple[float, float] | None:
    """The adjoint test of a Function's backward: ``(<g, J v>, <backward(g), v>)`` for a random direction ``v``
    over its floating-point inputs, all in float64 with the random state restored before each call (a dropout
    mask drawn inside is the same mask each time): ``J v`` by central differences of the forward without grad,
    ``backward(g)`` by ``torch.autograd.grad`` of one more call. None where the test does not apply: a forward
    with jumps (the two steps disagree: a rounding quantiser), one locally constant (a straight-through
    estimator's: ``J v`` = 0), or the identity (a gradient reversal or scaling layer, whose backward differs
    from its derivative on purpose)."""
    gen = torch.Generator().manual_seed(1)
    values = [*args, *kwargs.values()]
    directions: dict[int, torch.Tensor] = {}
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor) and _differentiable(value) and value.is_floating_point():
            scale = float(value.detach().abs().max()) or 1.0
            directions[i] = torch.randn(value.shape, generator=gen, dtype=torch.float64).to(value.device) * scale
    if not directions:
        return None

    def at(step: float, shifted: list[Any] | None = None, only: int | None = None) -> list[torch.Tensor] | None:
        def moved(i: int, value: Any) -> Any:
            if not isinstance(value, torch.Tensor):
                return value
            base = value.detach().double() if value.is_floating_point() else value.detach()
            return base + step * directions[i] if i in directions and only in (None, i) else base

        shifted = [moved(i, v) for i, v in enumerate(values)] if shifted is None else shifted
        _restore_rng(rng)
        with torch.set_grad_enabled(any(isinstance(s, torch.Tensor) and s.requires_grad for s in shifted)):
            outs = [
                o
                for o in _tensors(call(*shifted[: len(args)], **dict(zip(kwargs, shifted[len(args) :], strict=True))))
                if o.is_floating_point()
            ]
        return outs if len(outs) == len(g) and all(o.shape == x.shape for o, x in zip(outs, g, strict=True)) else None

    derivatives = []
    for step in STEPS:
        plus, minus = at(step), at(-step)
        if plus is None or minus is None:
            return None
        derivatives.append([(p - m) / (2 * step) for p, m in zip(plus, minus, strict=True)])
    jv = derivatives[0]
    forward = [float((x.double() * d).sum()) for x, d in zip(g, jv, strict=True)]
    other = [float((x.double() * d).sum()) for x, d in zip(g, derivatives[1], strict=True)]
    if not all(math.isfinite(f) for f in [*forward, *other]):
        return None
    if abs(sum(forward) - sum(other)) > SMOOTH_TOL * max(abs(sum(forward)), abs(sum(other)), 1e-300):
        return None  # the forward jumps inside the steps: no derivative to compare with
    v = list(directions.values())
    if (
        len(v) == 1
        and len(jv) == 1
        and jv[0].shape == v[0].shape
        and float((jv[0] - v[0]).norm()) <= IDENTITY_TOL * float(v[0].norm())
    ):
        return None  # the identity forward of a layer that changes gradients on purpose
    if float(sum(d.norm() for d in jv)) <= 1e-9 * float(sum(x.norm() for x in v)):
        return None  # a locally constant forward: its backward is a surrogate (straight-through) on purpose
    inputs = [
        v.detach().double().requires_grad_(i in directions)
        if isinstance(v, torch.Tensor) and v.is_floating_point()
        else v
        for i, v in enumerate(values)
    ]
    outs = at(0.0, inputs)
    if outs is None:
        return None
    leaves = [inputs[i] for i in directions]
    grads = torch.autograd.grad(outs, leaves, [x.double() for x in g], allow_unused=True)
    if len(directions) > 1 and _straight_through_input(at, directions, grads):
        return None
    backward = sum(float((r * d).sum()) for r, d in zip(grads, directions.values(), strict=True) if r is not None)
    return sum(forward), backward


def _straight_through_input(at: Any, directions: dict[int, torch.Tensor], grads: Sequence[Any]) -> bool:
    """Whether the forward is locally constant in one of several inputs while the backward sends that input a
    gradient: a straight-through estimator over part of the inputs (a VQ-VAE quantiser whose output is the nearest
    codebook row: constant in the encoder's output, which gets the decoder's gradient as is, while it moves with
    the codebook), a surrogate on purpose, as :func:`_adjoint` says for a forward constant in all its inputs."""
    step = STEPS[0]
    for (i, v), grad in zip(directions.items(), grads, strict=True):
        if grad is None or not bool(grad.any()):
            continue
        plus, minus = at(step, only=i), at(-step, only=i)
        if plus is None or minus is None:
            return False
        moved = sum(float(((p - m) / (2 * step)).norm()) for p, m in zip(plus, minus, strict=True))
        if moved <= 1e-9 * float(v.norm()):
            return True
    return False


@register
class BackwardIgnoresGradOutput(Check):
    """A custom autograd Function defined in the user's code whose backward is not linear in its incoming
    gradient (given grad_output = 0 it returns a non-zero gradient, or doubling grad_output does not double
    its result): it returns the local derivative without multiplying it by grad_output, so every gradient
    upstream of it is wrong."""

    name = "backward_ignores_grad_output"
    reports: ClassVar[dict[str, str]] = {
        "backward_ignores_grad_output": "A custom Function's backward does not use its incoming gradient linearly.",
        "backward_not_derivative": "A custom Function's backward is not its forward's derivative (adjoint test).",
    }

    def __init__(self) -> None:
        self.judged: set[type] = set()
        self.busy = False
        self.apply: Any = None  # the original Function.apply (its function), for the replays

    def start(self, probe: Probe) -> None:
        check = self

        def make(original: Any) -> Any:
            func = check.apply = original.__func__  # Function.apply is a classmethod

            def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
                out = func(cls, *args, **kwargs)
                if probe.active and not probe._in_check and not check.busy and cls not in check.judged:
                    try:
                        check._judge(probe, cls, args, kwargs, out)
                    except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's training
                        probe.check_failed(check.name, exc)
                return out

            apply.__wrapped__ = func  # type: ignore[attr-defined]
            return classmethod(apply)

        probe.patch(torch.autograd.Function, "apply", make)

    def _judge(self, probe: Probe, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        if not torch.is_grad_enabled() or _tracing():
            return
        fn = _user_backward(cls)
        if fn is None or not _is_users(fn):
            self.judged.add(cls)
            return
        ins = [t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        if not any(_differentiable(t) for t in ins) or not any(_differentiable(t) for t in _tensors(out)):
            return  # not on the training graph (yet): a later call is
        self.judged.add(cls)
        if sum(t.numel() for t in ins) > MAX_ELEMENTS:
            return
        self.busy = True
        try:
            with probe.quiet():
                measured = self._measure(cls, args, kwargs, ins)
        finally:
            self.busy = False
        if measured is None:
            return
        zero, linear_error, norm, adjoint = measured
        if zero > ZERO_TOL * norm or linear_error > LINEAR_TOL:
            self._report(probe, cls, fn, zero, linear_error, norm)
        elif adjoint is not None and abs(adjoint[0] - adjoint[1]) > ADJOINT_TOL * max(map(abs, adjoint)):
            self._report_adjoint(probe, cls, fn, *adjoint)

    def _measure(
        self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], ins: list[torch.Tensor]
    ) -> tuple[float, float, float, tuple[float, float] | None] | None:
        """``(|backward(0)|, the linearity error, |backward(g)|, adjoint)`` of a replay of ``cls.apply`` on clones
        of the call's tensors, None when it cannot be judged (the replay fails, a gradient is not finite or is 0);
        ``adjoint`` is ``(<g, J v>, <backward(g), v>)`` (:func:`_adjoint`), None when not measured."""

        def clone(v: Any) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            c = v.detach().clone()
            return c.requires_grad_(True) if _differentiable(v) else c

        func = self.apply
        with _kept_rng(ins) as rng, torch.enable_grad():
            cargs, ckwargs = tuple(clone(a) for a in args), {k: clone(v) for k, v in kwargs.items()}
            leaves = [t for t in (*cargs, *ckwargs.values()) if isinstance(t, torch.Tensor) and t.requires_grad]
            try:
                outs = [o for o in _tensors(func(cls, *cargs, **ckwargs)) if _differentiable(o)]
                if not outs:
                    return None
                gen = torch.Generator().manual_seed(0)
                g = [(torch.randn(o.shape, generator=gen) * G_SCALE).to(o.device, o.dtype) for o in outs]
                results = []
                for i, gs in enumerate(([torch.zeros_like(x) for x in g], g, [2 * x for x in g])):
                    _restore_rng(rng)
                    results.append(torch.autograd.grad(outs, leaves, gs, retain_graph=i < 2, allow_unused=True))
            except (RuntimeError, TypeError, ValueError, NotImplementedError, IndexError, AttributeError):
                return None  # the replay of this Function is not possible here: nothing to judge
            try:
                adjoint = _adjoint(lambda *a, **k: func(cls, *a, **k), args, kwargs, g, rng)
            except Exception:  # noqa: BLE001 - a forward that will not run in float64 (its own float32 weights)
                adjoint = None
        r0, r1, r2 = results
        if not (_finite(r0) and _finite(r1) and _finite(r2)):
            return None
        norm = max(_norm(r1), _norm(r2) / 2)
        zero = _norm(r0)
        if norm == 0 and zero == 0:
            return None
        diff = _norm(
            [
                (b if b is not None else torch.zeros_like(a)) - 2 * (a if a is not None else torch.zeros_like(b))
                for a, b in zip(r1, r2, strict=True)
                if a is not None or b is not None
            ]
        )
        denominator = 2 * _norm(r1) + _norm(r2)
        return zero, (diff / denominator if denominator > 0 else 0.0), norm, adjoint

    def _report_adjoint(self, probe: Probe, cls: type, fn: Any, forward: float, backward: float) -> None:
        name = getattr(cls, "__qualname__", str(cls))
        ratio = backward / forward if forward else float("inf")
        probe.report(
            kind="bug",
            check="backward_not_derivative",
            message=f"the backward of the custom autograd Function {name} is not the derivative of its forward: "
            f"along a random direction v the forward changes by <g, J v> = {forward:.4g} and the backward gives "
            f"<backward(g), v> = {backward:.4g} ({ratio:.3g} times it); a factor of the local derivative is "
            "missing (a constant the forward multiplies by), so every gradient upstream of it is scaled wrongly",
            evidence={"function": name, "directional_derivative": forward, "backward_along_v": backward},
            fix="return grad_output times the forward's derivative (grad_output * ctx.constant for x * constant); "
            "check it with torch.autograd.gradcheck(Fn.apply, (x.double().requires_grad_(),))",
            where=backward_return_line(fn),
        )

    def _report(self, probe: Probe, cls: type, fn: Any, zero: float, linear_error: float, norm: float) -> None:
        name = getattr(cls, "__qualname__", str(cls))
        seen = []
        if zero > ZERO_TOL * norm:
            seen.append(f"given grad_output = 0 it returns a gradient of norm {zero:.3g} (it must be 0)")
        if linear_error > LINEAR_TOL:
            seen.append(f"doubling grad_output does not double its result (off by {linear_error:.0%} of it)")
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the backward of the custom autograd Function {name} does not use its incoming gradient as "
            f"the chain rule needs: {' and '.join(seen)}; it returns the local derivative without multiplying it "
            "by grad_output, so every gradient upstream of it is wrong",
            evidence={
                "function": name,
                "grad_norm_for_zero_grad_output": zero,
                "grad_norm_for_grad_output": norm,
                "linearity_error": linear_error,
            },
            fix="multiply the local derivative by grad_output (return grad_output * y * (1 - y)), and check the "
            "Function once with torch.autograd.gradcheck(Fn.apply, (x.double().requires_grad_(),))",
            where=backward_return_line(fn),
        )
