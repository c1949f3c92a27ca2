"""The numpy reference operators against torch's, at the stated float64 tolerance, and their edge cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from expkit.check import causal_attention, compare, cross_entropy, layer_norm, rms_norm, softmax
from expkit.errors import UsageError

RNG = np.random.default_rng(0)


def _t(a):
    return torch.from_numpy(a)


def test_softmax_matches_torch_and_survives_large_logits():
    x = RNG.standard_normal((4, 7)) * 300  # exp(300) overflows without the max subtracted
    r = compare(softmax(x), F.softmax(_t(x), dim=-1))
    assert r.ok, r.reason
    assert np.all(np.isfinite(softmax(x.astype(np.float32))))


def test_causal_attention_matches_sdpa_float64():
    q, k, v = (RNG.standard_normal((2, 3, 16, 8)) for _ in range(3))
    r = compare(causal_attention(q, k, v), F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True))
    assert r.ok, r.reason


def test_causal_attention_is_causal():
    q, k, v = (RNG.standard_normal((1, 6, 4)) for _ in range(3))
    out = causal_attention(q, k, v)
    v2 = v.copy()
    v2[:, 5] += 10.0  # changing the last value must not change earlier positions
    out2 = causal_attention(q, k, v2)
    np.testing.assert_array_equal(out[:, :5], out2[:, :5])
    assert causal_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)).dtype == np.float32


def test_layer_norm_and_rms_norm_match_torch():
    x = RNG.standard_normal((5, 16))
    w, b = RNG.standard_normal(16), RNG.standard_normal(16)
    assert compare(layer_norm(x, w, b), F.layer_norm(_t(x), (16,), _t(w), _t(b), eps=1e-5)).ok
    assert compare(rms_norm(x, w, eps=1e-6), F.rms_norm(_t(x), (16,), _t(w), eps=1e-6)).ok


def test_cross_entropy_with_ignore_index_matches_torch():
    logits = RNG.standard_normal((6, 5)) * 20
    targets = np.array([0, 4, -100, 2, -100, 1])
    ref = F.cross_entropy(_t(logits), _t(targets), ignore_index=-100)
    assert compare(np.asarray(cross_entropy(logits, targets)), ref).ok
    assert np.isnan(cross_entropy(logits, np.full(6, -100)))  # torch also returns nan when all are ignored


def test_cross_entropy_bad_target_and_shape():
    with pytest.raises(UsageError, match=r"targets\[1\] = 5 is not a class in \[0, 5\)"):
        cross_entropy(np.zeros((2, 5)), np.array([0, 5]))
    from expkit.check import ShapeError

    with pytest.raises(ShapeError, match=r"dimension N: targets has 3"):
        cross_entropy(np.zeros((2, 5)), np.array([0, 1, 2]))
