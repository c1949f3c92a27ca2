"""against(): same seeded inputs through both, several shapes and dtypes, gradients through autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from expkit.check import AgainstQuery, against, causal_attention, load_callable, softmax
from expkit.errors import UsageError


def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_sdpa_against_numpy_reference_in_both_dtypes():
    rep = against(_sdpa, causal_attention, AgainstQuery(shapes=[[(2, 16, 8)] * 3, [(1, 2, 32, 16)] * 3]))
    assert rep.ok and len(rep.cases) == 4
    by_dtype = {c.dtype: c.output.max_abs_error for c in rep.cases}
    assert by_dtype["float64"] < 1e-13 < by_dtype["float32"] < 1e-6


def test_a_wrong_operator_fails():
    rep = against(lambda x: F.softmax(x, dim=0), softmax, AgainstQuery(shapes=[[(4, 8)]]))
    assert not rep.ok and rep.max_abs_error > 0.01


def test_gradients_are_compared():
    def handwritten_gelu(x):
        return 0.5 * x * (1 + torch.erf(x / 2**0.5))

    rep = against(handwritten_gelu, F.gelu, AgainstQuery(shapes=[[(8, 4)]], grad=True, reference_backend="torch"))
    assert rep.ok and len(rep.cases[0].grads) == 1
    bad = against(
        lambda x: x * torch.sigmoid(x), F.gelu, AgainstQuery(shapes=[[(8, 4)]], grad=True, reference_backend="torch")
    )
    assert not bad.ok and not bad.cases[0].grads[0].ok


def test_inputs_are_the_same_seeded_draws():
    seen = []
    against(
        lambda x: seen.append(x.detach().clone()) or x,
        lambda x: x,
        AgainstQuery(shapes=[[(3,)]], dtypes=["float64"], seed=5, reference_backend="torch"),
    )
    against(
        lambda x: seen.append(x.detach().clone()) or x,
        lambda x: x,
        AgainstQuery(shapes=[[(3,)]], dtypes=["float64"], seed=5, reference_backend="torch"),
    )
    assert torch.equal(seen[0], seen[1])


def test_bad_usage():
    with pytest.raises(UsageError, match=r"both sides on the torch backend"):
        against(F.gelu, softmax, AgainstQuery(shapes=[[(2,)]], grad=True))
    with pytest.raises(UsageError, match=r"dtype 'float8'"):
        against(F.gelu, F.gelu, AgainstQuery(shapes=[[(2,)]], dtypes=["float8"]))
    with pytest.raises(UsageError, match=r"fn .*softmax raised TypeError"):
        against(torch.softmax, softmax, AgainstQuery(shapes=[[(2, 3)]]))
    with pytest.raises(UsageError, match=r"is not PKG.MOD:FN"):
        load_callable("torch.softmax")
    with pytest.raises(UsageError, match=r"cannot import module 'no_such_pkg_xyz'"):
        load_callable("no_such_pkg_xyz:f")
    assert load_callable("expkit.check.reference:softmax") is softmax
