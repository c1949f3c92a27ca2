"""Run an operator and its reference on the same seeded inputs, over several shapes and dtypes, and
compare outputs (and, optionally, input gradients through autograd)."""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from expkit.check.compare import CompareReport, compare
from expkit.errors import CheckFailed, InputError, UsageError

__all__ = ["AgainstQuery", "AgainstReport", "CaseReport", "against", "check_op", "load_callable"]

Backend = Literal["numpy", "torch"]
_DTYPES = ("float32", "float64", "float16", "bfloat16")
# Bounds on one input: 2**28 elements is 2 GiB in float64 before the casts and the reference's copy, far
# more than a numerical check needs; torch tensors take at most 25 dimensions (numpy 64).
MAX_ELEMENTS = 2**28
MAX_DIMS = 25


@dataclass(frozen=True)
class CaseReport:
    """One (shapes, dtype) case: the output comparison and one comparison per input gradient."""

    shapes: tuple[tuple[int, ...], ...]
    dtype: str
    output: CompareReport
    grads: tuple[CompareReport, ...]

    @property
    def ok(self) -> bool:
        return self.output.ok and all(g.ok for g in self.grads)


@dataclass(frozen=True)
class AgainstReport:
    """All cases; ``ok`` only when every output and gradient is within tolerance.
    ``max_abs_error`` is the largest over all cases' outputs."""

    fn: str
    reference: str
    seed: int
    cases: tuple[CaseReport, ...]
    ok: bool
    max_abs_error: float

    def raise_if_failed(self) -> None:
        """CheckFailed naming the first case over tolerance; nothing when every case is within it."""
        bad = next((c for c in self.cases if not c.ok), None)
        if bad is not None:
            raise CheckFailed(
                f"{self.fn} differs from {self.reference} at shapes {bad.shapes} {bad.dtype}: {bad.output.reason}"
            )


@dataclass(frozen=True)
class AgainstQuery:
    """What to run an operator and its reference on, and how to judge them.

    Args:
        shapes: cases; each case lists one shape per argument, e.g. ``(((2, 8, 16),) * 3,)`` for q, k, v.
        dtypes: dtypes the inputs are cast to (the same float64 draw for every dtype).
        seed: seed of ``numpy.random.default_rng`` for the inputs and the output cotangent.
        grad: also compare d(sum(out * g))/d(input) for a seeded random g; needs both backends torch.
        fn_backend, reference_backend: ``numpy`` arrays or ``torch`` tensors for each side.
        rtol, atol: override the dtype default tolerances (see ``expkit.check.compare``).
    """

    shapes: Sequence[Sequence[Sequence[int]]]
    dtypes: Sequence[str] = ("float32", "float64")
    seed: int = 0
    grad: bool = False
    fn_backend: Backend = "torch"
    reference_backend: Backend = "numpy"
    rtol: float | None = None
    atol: float | None = None
    names: tuple[str, str] | None = field(default=None, compare=False)
    """How the report names fn and reference (the user's ``pkg.mod:fn``); default: their qualified names."""


def load_callable(spec: str) -> Callable[..., Any]:
    """``"pkg.mod:fn"`` (or ``"pkg.mod:Class.method"``) -> the callable.

    Raises:
        UsageError: no colon, an empty name, a module that cannot be imported (or that raises or calls
            ``sys.exit``/``os._exit`` while importing), a missing attribute.
        InputError: the module has a syntax error (file and line).
    """
    if ":" not in spec:
        raise UsageError(f"{spec!r} is not PKG.MOD:FN", hint="e.g. torch.nn.functional:softmax")
    mod_name, attr = spec.split(":", 1)
    if not mod_name.strip() or not attr.strip():
        raise UsageError(
            f"{spec!r} is not PKG.MOD:FN: the module or the function name is empty",
            hint="e.g. torch.nn.functional:softmax",
        )
    try:
        with _exits_caught():
            obj: Any = importlib.import_module(mod_name)
    except _ProcessExit as exc:
        raise UsageError(
            f"importing module {mod_name!r} called os._exit({exc.code!r})",
            hint="guard the module's script code with `if __name__ == '__main__':`",
        ) from None
    except ImportError as exc:
        raise UsageError(f"cannot import module {mod_name!r} ({exc})", hint="check PYTHONPATH and the name") from None
    except SyntaxError as exc:  # the user's module does not parse: point at the line
        raise InputError(
            f"module {mod_name!r} has a syntax error: {exc.msg}", path=exc.filename, line=exc.lineno
        ) from None
    except SystemExit as exc:  # sys.exit() at import time would end expkit silently with the module's code
        raise UsageError(
            f"importing module {mod_name!r} called sys.exit({exc.code!r})",
            hint="guard the module's script code with `if __name__ == '__main__':`",
        ) from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while importing: say which and how
        raise UsageError(f"importing module {mod_name!r} raised {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not a callable")
    return obj


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def _to_backend(arrays: Sequence[np.ndarray], dtype: str, backend: Backend, requires_grad: bool) -> list[Any]:
    if backend == "numpy":
        if dtype == "bfloat16":
            raise UsageError("numpy has no bfloat16", hint="use float32, float64 or float16, or a torch backend")
        return [a.astype(dtype) for a in arrays]
    import torch

    return [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad) for a in arrays]


class _ProcessExit(BaseException):
    """``os._exit(code)`` called by the user's code while :func:`_exits_caught` holds: the process goes on."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@contextmanager
def _exits_caught() -> Iterator[None]:
    """``os._exit`` raises :class:`_ProcessExit` in this block instead of ending the process at once: an
    operator that called it ended ``expkit check op`` with exit 0 and no output (issue 36), a check that
    passed for a CI gate. ``sys.exit`` raises ``SystemExit`` already."""
    real = os._exit

    def refuse(code: int) -> None:
        raise _ProcessExit(code)

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def _call(f: Callable[..., Any], xs: list[Any], shapes: tuple[tuple[int, ...], ...], role: str) -> Any:
    try:
        with _exits_caught():
            return f(*xs)
    except (SystemExit, _ProcessExit) as exc:  # the operator ended the process: a failed check, never a pass
        how = "os._exit" if isinstance(exc, _ProcessExit) else "sys.exit"
        raise CheckFailed(
            f"{role} {_name(f)} ended the process: it called {how}({exc.code!r}) on inputs of shapes {shapes}",
            hint="an operator must return its result, not exit",
        ) from None
    except Exception as exc:  # the user's operator failed on our inputs: say which and how
        raise UsageError(
            f"{role} {_name(f)} raised {type(exc).__name__}: {exc} (inputs of shapes {shapes})",
            hint="it must take one array/tensor per shape and return one; wrap it to fix other "
            "arguments, e.g. lambda x: softmax(x, dim=-1)",
        ) from exc


def _check_shape(shape: tuple[int, ...]) -> None:
    text = ",".join(map(str, shape))
    if any(d <= 0 for d in shape):
        raise UsageError(f"shape {text} needs positive sizes", hint="e.g. 4,8")
    if len(shape) > MAX_DIMS:
        raise UsageError(f"shape {text[:60]}... has {len(shape)} dimensions, more than {MAX_DIMS}")
    if math.prod(shape) > MAX_ELEMENTS:
        raise UsageError(
            f"shape {text} has {math.prod(shape):,} elements, more than a numerical check needs "
            f"(at most {MAX_ELEMENTS:,})",
            hint="a few thousand elements per input find the same errors",
        )


def against(fn: Callable[..., Any], reference: Callable[..., Any], query: AgainstQuery) -> AgainstReport:
    """Check ``fn`` against ``reference`` on standard-normal inputs drawn from ``query.seed``.

    Args:
        fn, reference: take one array/tensor per input shape, return one array/tensor.
        query: the cases, dtypes, seed, backends and tolerances (:class:`AgainstQuery`).

    Raises:
        UsageError: no shapes, a shape with a size <= 0, more than ``MAX_DIMS`` dimensions or more than
            ``MAX_ELEMENTS`` elements, an unknown dtype or backend, grad with a numpy side, an operator that
            raises.
        CheckFailed: an operator that ends the process (``sys.exit``, ``os._exit``).

    Example:
        >>> import torch.nn.functional as F
        >>> from expkit.check.reference import softmax
        >>> against(lambda x: F.softmax(x, -1), softmax, AgainstQuery(shapes=[[(4, 8)]])).ok
        True
    """
    q = query
    if not q.shapes:
        raise UsageError("no shapes given", hint="pass at least one case, e.g. shapes=[[(4, 8)]]")
    for d in q.dtypes:
        if d not in _DTYPES:
            raise UsageError(f"dtype {d!r} is not known", hint=f"use one of {', '.join(_DTYPES)}")
    for side in (q.fn_backend, q.reference_backend):
        if side not in ("numpy", "torch"):
            raise UsageError(f"backend {side!r} is not known", hint="use numpy or torch")
    if q.grad and (q.fn_backend != "torch" or q.reference_backend != "torch"):
        raise UsageError("gradient comparison needs both sides on the torch backend (autograd)")
    cases = []
    for case in q.shapes:
        case_shapes = tuple(tuple(int(s) for s in shape) for shape in case)
        for shape in case_shapes:
            _check_shape(shape)
        rng = np.random.default_rng(q.seed)
        inputs = [rng.standard_normal(s) for s in case_shapes]
        for dtype in q.dtypes:
            xs_fn = _to_backend(inputs, dtype, q.fn_backend, q.grad)
            xs_ref = _to_backend(inputs, dtype, q.reference_backend, q.grad)
            out_fn = _call(fn, xs_fn, case_shapes, "fn")
            out_ref = _call(reference, xs_ref, case_shapes, "reference")
            out_report = compare(out_fn, out_ref, rtol=q.rtol, atol=q.atol)
            grads = _compare_grads(out_fn, out_ref, xs_fn, xs_ref, q) if q.grad else ()
            cases.append(CaseReport(case_shapes, dtype, out_report, grads))
    max_err = max(c.output.max_abs_error for c in cases)
    fn_name, ref_name = q.names or (_name(fn), _name(reference))
    return AgainstReport(fn_name, ref_name, q.seed, tuple(cases), all(c.ok for c in cases), max_err)


def _compare_grads(
    out_fn: Any, out_ref: Any, xs_fn: list[Any], xs_ref: list[Any], q: AgainstQuery
) -> tuple[CompareReport, ...]:
    """d(sum(out * g))/d(input) of both sides for one seeded cotangent g; an unused input's gradient is 0."""
    import torch

    g = torch.tensor(np.random.default_rng(q.seed + 1).standard_normal(tuple(out_ref.shape)), dtype=out_ref.dtype)
    gf = torch.autograd.grad(out_fn, xs_fn, grad_outputs=g, allow_unused=True)
    gr = torch.autograd.grad(out_ref, xs_ref, grad_outputs=g, allow_unused=True)
    grads = []
    for a, b, x in zip(gf, gr, xs_ref, strict=True):
        a = torch.zeros_like(x) if a is None else a
        b = torch.zeros_like(x) if b is None else b
        grads.append(compare(a, b, rtol=q.rtol, atol=q.atol))
    return tuple(grads)


def check_op(fn_spec: str, reference_spec: str, query: AgainstQuery) -> AgainstReport:
    """``expkit check op``: load ``pkg.mod:fn`` and its reference, run :func:`against`, and name both as
    the user wrote them.

    Raises:
        UsageError: see :func:`load_callable` and :func:`against`.
    """
    from dataclasses import replace

    fn, reference = load_callable(fn_spec), load_callable(reference_spec)
    return against(fn, reference, replace(query, names=(fn_spec, reference_spec)))
