"""expect_shape: binds names across calls, names the dimension that disagrees, catches the broadcast."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from expkit.check import Dims, ShapeError, expect_shape
from expkit.errors import CheckFailed


def test_the_seeds_broadcast_is_caught():
    a, b = np.zeros(3), np.zeros((3, 1))
    assert (a + b).shape == (3, 3)  # numpy allows it silently (the seed's C2.1)
    with pytest.raises(ShapeError, match=r"shape \(3, 3\) but spec 'N' expects 1 dimension\(s\), got 2"):
        expect_shape(a + b, "N")


def test_names_bind_across_calls_and_the_disagreeing_one_is_named():
    dims = Dims()
    x = expect_shape(torch.zeros(2, 8, 16), "B T D", dims, name="x")
    assert x.shape == (2, 8, 16) and dims.as_dict() == {"B": 2, "T": 8, "D": 16}
    expect_shape(np.zeros((2, 8)), "B T", dims)
    with pytest.raises(
        ShapeError, match=r"dimension T: mask has 9 at axis 1 \(shape \(2, 9\)\) but T = 8 was bound by x"
    ):
        expect_shape(np.zeros((2, 9)), "B T", dims, name="mask")


def test_literals_wildcards_and_ellipsis():
    expect_shape(np.zeros((4, 3)), "N 3")
    expect_shape(np.zeros((4, 3)), "_ 3")
    expect_shape(np.zeros((7, 2, 4, 3)), "... 4 3")
    with pytest.raises(ShapeError, match=r"axis 1 is 2, spec 'N 3' requires 3"):
        expect_shape(np.zeros((4, 2)), "N 3")
    with pytest.raises(ShapeError, match=r"needs at least 3"):
        expect_shape(np.zeros(3), "... A B C")


def test_preset_dims_and_errors_are_check_failures():
    dims = Dims(D=64)
    with pytest.raises(CheckFailed, match=r"D = 64 was bound by given"):
        expect_shape(np.zeros((2, 32)), "B D", dims)
    with pytest.raises(ShapeError, match=r"has no shape"):
        expect_shape([1, 2, 3], "N")
