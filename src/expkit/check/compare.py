"""Numerical comparison of an operator's output with a reference, with tolerances from the dtype.

Default tolerances, stated once here (element passes when |actual - expected| <= atol + rtol |expected|):
float64 1e-12 / 1e-12 and float32 1e-6 / 1e-6 (the seed, claim C2.4: "correct" means ~1e-12 and ~1e-6);
float16 rtol 1e-3 atol 1e-5 and bfloat16 rtol 1.6e-2 atol 1e-5 (the values of ``torch.testing.assert_close``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from expkit.check.shapes import ShapeError
from expkit.errors import UsageError

__all__ = [
    "DEFAULT_TOLERANCES",
    "CompareReport",
    "Float64Copy",
    "Tolerance",
    "compare",
    "default_tolerance",
    "to_numpy",
]


class Tolerance(NamedTuple):
    """An element passes when |actual - expected| <= atol + rtol |expected|."""

    rtol: float
    atol: float


class Float64Copy(NamedTuple):
    """A value widened to float64 for comparison, and the dtype name it had."""

    values: np.ndarray
    dtype: str


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-12, atol=1e-12),
    "float32": Tolerance(rtol=1e-6, atol=1e-6),
    "float16": Tolerance(rtol=1e-3, atol=1e-5),
    "bfloat16": Tolerance(rtol=1.6e-2, atol=1e-5),
}
# the least precise dtype decides when two differ (float32 actual vs float64 reference -> float32)
_PRECISION_ORDER = ("bfloat16", "float16", "float32", "float64")


def to_numpy(x: Any) -> Float64Copy:
    """A float64 numpy copy and the original dtype name, for a numpy array, a torch tensor or a number.

    bfloat16 tensors are widened to float32 first (numpy has no bfloat16); integer and bool inputs
    are compared as float64 with the float64 tolerance unless one is given.
    """
    if type(x).__module__.startswith("torch"):
        name = str(x.dtype).removeprefix("torch.")
        t = x.detach().cpu()
        if name in ("bfloat16", "float16"):
            t = t.float()
        return Float64Copy(t.numpy().astype(np.float64), name)
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        raise UsageError(f"complex dtype {arr.dtype} is not supported; compare real and imaginary parts apart")
    if arr.dtype.kind not in "fiub":
        raise UsageError(f"cannot compare values of dtype {arr.dtype}; pass numbers")
    name = arr.dtype.name if arr.dtype.kind == "f" else "float64"
    return Float64Copy(arr.astype(np.float64), name)


def default_tolerance(dtype: str) -> Tolerance:
    """The rtol and atol for a dtype name; unknown float dtypes raise with the known names."""
    if dtype not in DEFAULT_TOLERANCES:
        raise UsageError(
            f"no default tolerance for dtype {dtype!r}",
            hint=f"pass rtol and atol, or use one of {', '.join(DEFAULT_TOLERANCES)}",
        )
    return DEFAULT_TOLERANCES[dtype]


@dataclass(frozen=True)
class CompareReport:
    """Actual vs expected. ``max_abs_error`` and ``max_rel_error`` (|a - e| / |e|, over elements with
    e != 0) are over finite elements; ``worst_index`` is the element furthest over its tolerance
    (or the largest error when all pass). ``ok`` is False whenever a NaN or inf appears where the
    reference has a different value: NaN is never "ok". ``tolerance`` = atol + rtol * max|expected|,
    one number for people to read; the check itself is per element."""

    ok: bool
    shape: tuple[int, ...]
    dtype: str
    n_elements: int
    n_over: int
    max_abs_error: float
    max_rel_error: float
    worst_index: tuple[int, ...] | None
    worst_actual: float | None
    worst_expected: float | None
    rtol: float
    atol: float
    tolerance: float
    tolerance_source: str
    n_nan_actual: int
    n_nan_expected: int
    reason: str


def compare(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None) -> CompareReport:
    """Compare ``actual`` with ``expected`` element by element, shapes equal (no broadcasting).

    Args:
        actual: the output under test (numpy array, torch tensor, number).
        expected: the reference output.
        rtol, atol: override the dtype defaults (``DEFAULT_TOLERANCES``); give one or both.

    Returns:
        CompareReport with ``ok``, errors, the worst element and the tolerance used.

    Raises:
        ShapeError: the shapes differ (both named); numpy would broadcast (3,) against (3, 1).
        UsageError: a negative tolerance or a dtype with no default.

    Example:
        >>> r = compare(np.float32([1.0, 2.0]), np.float64([1.0, 2.0000001])); r.ok, r.tolerance_source
        (True, 'float32 default')
    """
    actual_64, expected_64 = to_numpy(actual), to_numpy(expected)
    a, e, a_dtype, e_dtype = actual_64.values, expected_64.values, actual_64.dtype, expected_64.dtype
    if a.shape != e.shape:
        raise ShapeError(
            f"actual has shape {tuple(a.shape)} but expected has shape {tuple(e.shape)}",
            hint="compare never broadcasts; fix the operator's output shape",
        )
    dtype = min(a_dtype, e_dtype, key=lambda d: _PRECISION_ORDER.index(d) if d in _PRECISION_ORDER else 99)
    if rtol is None and atol is None:
        rtol, atol = default_tolerance(dtype)
        source = f"{dtype} default"
    else:
        fallback = DEFAULT_TOLERANCES.get(dtype, Tolerance(rtol=0.0, atol=0.0))
        rtol = fallback.rtol if rtol is None else rtol
        atol = fallback.atol if atol is None else atol
        source = "given"
    if rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol):
        raise UsageError(f"rtol={rtol} and atol={atol} must be non-negative numbers")
    n = a.size
    nan_a, nan_e = int(np.isnan(a).sum()), int(np.isnan(e).sum())
    both_finite = np.isfinite(a) & np.isfinite(e)
    same_inf = np.isinf(a) & np.isinf(e) & (a == e)
    err = np.zeros_like(a)
    err[both_finite] = np.abs(a[both_finite] - e[both_finite])
    limit = atol + rtol * np.abs(np.where(both_finite, e, 0.0))
    bad = ~(both_finite | same_inf) | (err > limit)  # NaN anywhere is bad, mismatched inf is bad
    n_over = int(bad.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(both_finite & (e != 0), err / np.abs(e), 0.0)
    nonfinite_mismatch = bool(np.any(~(both_finite | same_inf)))
    # a NaN or mismatched inf makes the error unknown, not small: report NaN, never 0
    max_abs = math.nan if nonfinite_mismatch else (float(err.max()) if n else 0.0)
    max_rel = math.nan if nonfinite_mismatch else (float(rel.max()) if n else 0.0)
    worst = None
    if n:
        # the element furthest over its limit; non-finite mismatches first
        score = np.where(bad & ~both_finite, np.inf, err - limit)
        flat = int(np.argmax(score))
        worst = tuple(int(i) for i in np.unravel_index(flat, a.shape))
    if nan_a or nan_e:
        first = tuple(int(i) for i in np.argwhere(np.isnan(a) | np.isnan(e))[0])
        reason = f"NaN: {nan_a} in actual, {nan_e} in expected (first at index {first})"
    elif n_over:
        reason = f"{n_over} of {n} elements over tolerance; worst at index {worst}"
    else:
        reason = "all elements within tolerance"
    return CompareReport(
        ok=n_over == 0,
        shape=tuple(int(s) for s in a.shape),
        dtype=dtype,
        n_elements=n,
        n_over=n_over,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        worst_index=worst,
        worst_actual=None if worst is None else float(a[worst]),
        worst_expected=None if worst is None else float(e[worst]),
        rtol=float(rtol),
        atol=float(atol),
        tolerance=float(atol + rtol * (float(np.max(np.abs(e[np.isfinite(e)]))) if np.isfinite(e).any() else 0.0)),
        tolerance_source=source,
        n_nan_actual=nan_a,
        n_nan_expected=nan_e,
        reason=reason,
    )
