"""Reference operators in plain numpy, written for clarity and numerical safety, to check fast or
handwritten operators against: softmax, causal attention, layernorm, rmsnorm, cross-entropy.

Every function computes in the dtype of its input (float32 stays float32), as a handwritten kernel would.
"""

from __future__ import annotations

import math

import numpy as np

from expkit.check.shapes import Dims, expect_shape
from expkit.errors import UsageError

__all__ = ["causal_attention", "cross_entropy", "layer_norm", "rms_norm", "softmax"]


def softmax(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) along ``axis``; subtracting the max keeps exp from overflowing
    (exp(89) is inf in float32) and does not change the result."""
    x = np.asarray(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float | None = None) -> np.ndarray:
    """softmax(q k^T * scale + causal mask) v, as ``F.scaled_dot_product_attention(q, k, v, is_causal=True)``.

    Args:
        q, k, v: (..., T, D) with the same leading dims; scale defaults to 1/sqrt(D)
            (Vaswani et al. 2017, eq. 1).

    Returns:
        (..., T, D) in the input dtype.

    Example:
        >>> q = np.ones((1, 2, 4), np.float32); causal_attention(q, q, q).shape
        (1, 2, 4)
    """
    dims = Dims()
    expect_shape(q, "... T D", dims, name="q")
    expect_shape(k, "... T D", dims, name="k")
    expect_shape(v, "... T D", dims, name="v")
    if q.shape[:-2] != k.shape[:-2] or q.shape[:-2] != v.shape[:-2]:
        raise UsageError(f"q, k, v leading shapes differ: {q.shape}, {k.shape}, {v.shape}")
    t, d = q.shape[-2], q.shape[-1]
    s = q.dtype.type(1.0 / math.sqrt(d) if scale is None else scale)
    scores = (q @ np.swapaxes(k, -1, -2)) * s  # (..., T, T)
    future = np.triu(np.ones((t, t), dtype=bool), k=1)  # True above the diagonal: keys after the query
    scores = np.where(future, -np.inf, scores).astype(q.dtype)
    return softmax(scores, axis=-1) @ v  # (..., T, D)


def layer_norm(
    x: np.ndarray, weight: np.ndarray | None = None, bias: np.ndarray | None = None, *, eps: float = 1e-5
) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, biased variance
    (Ba et al. 2016; ``torch.nn.functional.layer_norm`` with normalized_shape = (D,), eps 1e-5)."""
    x = np.asarray(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + x.dtype.type(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x: np.ndarray, weight: np.ndarray | None = None, *, eps: float = 1e-6) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (Zhang & Sennrich 2019;
    ``torch.nn.functional.rms_norm`` with the same eps)."""
    x = np.asarray(x)
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + x.dtype.type(eps))
    return y if weight is None else y * weight


def cross_entropy(logits: np.ndarray, targets: np.ndarray, *, ignore_index: int = -100) -> float | np.floating:
    """Mean over non-ignored rows of -log softmax(logits)[target], by log-sum-exp with the max
    subtracted; ``torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100)``.

    Args:
        logits: (N, C).
        targets: (N,) class indices; rows equal to ``ignore_index`` do not count.

    Returns:
        The mean loss (NaN when every row is ignored, as torch returns).

    Raises:
        UsageError: a target outside [0, C) that is not ignore_index.
    """
    dims = Dims()
    expect_shape(logits, "N C", dims, name="logits")
    expect_shape(targets, "N", dims, name="targets")
    targets = np.asarray(targets).astype(np.int64)
    keep = targets != ignore_index
    c = logits.shape[1]
    bad = np.flatnonzero(keep & ((targets < 0) | (targets >= c)))
    if bad.size:
        raise UsageError(f"targets[{bad[0]}] = {targets[bad[0]]} is not a class in [0, {c}) nor ignore_index")
    m = logits.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]  # (N,)
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return logits.dtype.type(np.nan)
    nll = lse[rows] - logits[rows, targets[rows]]
    return nll.mean()
