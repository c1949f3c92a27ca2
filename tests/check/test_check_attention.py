"""check_attention: the numpy attention meets SDPA at the dtype tolerance; bad dtypes and shapes refused."""

from __future__ import annotations

import pytest

from expkit.check import check_attention, default_tolerance
from expkit.errors import UsageError


@pytest.mark.parametrize("dtype,bound", [("float32", 1e-5), ("float64", 1e-12)])
def test_numpy_attention_matches_sdpa(dtype, bound):
    r = check_attention(shape=(2, 4, 32, 16), dtype=dtype, seed=1)
    assert r.ok and 0 < r.max_abs_error < bound  # rounding is never exactly zero across 32 positions
    assert (r.rtol, r.atol) == default_tolerance(dtype)
    assert r.shape == (2, 4, 32, 16) and r.dtype == dtype


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"shape": (8, 4)}, r"8,4 has 2 sizes; give B,T,D or B,H,T,D"),
        ({"shape": (2, 0, 4)}, r"positive sizes"),
        ({"shape": (2, 8, 4), "dtype": "float16"}, r"float16.*float32 or float64"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(UsageError, match=match):
        check_attention(**kwargs)
