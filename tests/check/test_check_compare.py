"""compare(): dtype tolerances stated once, NaN never ok, shapes never broadcast, torch tensors too."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from expkit.check import DEFAULT_TOLERANCES, Float64Copy, ShapeError, Tolerance, compare, default_tolerance, to_numpy
from expkit.errors import UsageError


def test_default_tolerances_are_the_stated_ones():
    # seed C2.4: ~1e-6 in float32, ~1e-12 in float64; fp16/bf16: torch.testing.assert_close's defaults
    assert DEFAULT_TOLERANCES["float32"] == (1e-6, 1e-6)
    assert DEFAULT_TOLERANCES["float64"] == (1e-12, 1e-12)
    assert DEFAULT_TOLERANCES["float16"] == (1e-3, 1e-5)
    assert DEFAULT_TOLERANCES["bfloat16"] == (1.6e-2, 1e-5)


def test_float32_rounding_passes_and_a_real_error_fails():
    x = np.linspace(-3, 3, 101)
    ok = compare(x.astype(np.float32), x)
    assert ok.ok and ok.tolerance_source == "float32 default" and ok.max_abs_error < 1.2e-7
    y = x.copy()
    y[17] += 1e-4
    bad = compare(y.astype(np.float32), x)
    assert not bad.ok and bad.worst_index == (17,) and bad.n_over == 1
    assert bad.max_abs_error == pytest.approx(1e-4, rel=1e-2)
    assert "1 of 101 elements over tolerance; worst at index (17,)" in bad.reason


def test_float64_uses_the_tight_tolerance():
    x = np.ones(4)
    assert not compare(x + 1e-9, x).ok
    assert compare(x + 1e-13, x).ok


def test_worst_index_is_a_full_index_for_nd_arrays():
    e = np.zeros((3, 4, 5))
    a = e.copy()
    a[2, 1, 3] = 0.5
    r = compare(a, e)
    assert r.worst_index == (2, 1, 3) and r.worst_actual == 0.5 and r.worst_expected == 0.0


def test_nan_is_reported_and_never_ok():
    r = compare(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert not r.ok and r.n_nan_actual == 1
    assert math.isnan(r.max_abs_error)  # unknown, not small
    assert "NaN: 1 in actual, 0 in expected (first at index (1,))" in r.reason
    both = compare(np.array([np.nan]), np.array([np.nan]))
    assert not both.ok and both.n_nan_expected == 1


def test_matching_infinities_pass_and_mismatched_fail():
    assert compare(np.array([np.inf, 1.0]), np.array([np.inf, 1.0])).ok
    assert not compare(np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])).ok


def test_shape_mismatch_names_both_shapes_never_broadcasts():
    with pytest.raises(ShapeError, match=r"actual has shape \(3,\) but expected has shape \(3, 1\)"):
        compare(np.zeros(3), np.zeros((3, 1)))


def test_torch_tensors_and_bfloat16():
    x = torch.randn(64, generator=torch.Generator().manual_seed(0))
    r = compare(x.to(torch.bfloat16), x.double())
    assert r.dtype == "bfloat16" and r.ok  # bf16 rounding (2^-8 relative) is inside rtol 1.6e-2
    assert not compare(x.to(torch.bfloat16), x.double(), rtol=1e-6, atol=1e-6).ok


def test_given_tolerance_overrides_and_is_labelled():
    r = compare(np.float64([1.0]), np.float64([1.1]), atol=0.2)
    assert r.ok and r.tolerance_source == "given" and r.rtol == 1e-12


def test_bad_tolerance_and_dtype():
    with pytest.raises(UsageError, match=r"must be non-negative"):
        compare(np.zeros(2), np.zeros(2), rtol=-1.0)
    with pytest.raises(UsageError, match=r"cannot compare values of dtype"):
        compare(np.array(["a"]), np.array(["a"]))


def test_tolerance_and_float64_copy_are_named_results():
    tol = default_tolerance("float16")
    assert isinstance(tol, Tolerance) and (tol.rtol, tol.atol) == (1e-3, 1e-5)
    copy = to_numpy(torch.tensor([1.5, 2.0], dtype=torch.bfloat16))
    assert isinstance(copy, Float64Copy) and copy.dtype == "bfloat16" and copy.values.dtype == np.float64
    assert copy.values.tolist() == [1.5, 2.0]
    with pytest.raises(UsageError, match="no default tolerance for dtype 'int8'"):
        default_tolerance("int8")
