"""Ranks of N models scored on the same items: paired bootstrap rank intervals (items resampled within
clusters), rank upper bounds, tier letters and split-half rank agreement.

Everything works on a models x items score matrix (NaN where a model did not score an item): one bootstrap
resample is a row of item counts, so each model's resampled mean is one matrix product, never a loop.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from expkit.errors import UsageError

__all__ = [
    "bootstrap_ranks",
    "competition_ranks",
    "rank_upper_bounds",
    "resample_counts",
    "split_half_taus",
    "tier_letters",
]

CHUNK = 64
"""Resamples drawn at once: 64 x 12,032 items of float64 counts is 6 MB, so memory stays flat in B."""


def competition_ranks(means: np.ndarray) -> np.ndarray:
    """1 + the number of models with a strictly higher mean, along the last axis ("1224" ranking).

    ``means`` is (..., M); NaN counts as below every number. Returns ints of the same shape.

    Example:
        >>> competition_ranks(np.array([0.5, 0.7, 0.5])).tolist()
        [2, 1, 2]
    """
    m = np.where(np.isnan(means), -np.inf, means)
    return 1 + (m[..., None, :] > m[..., :, None]).sum(axis=-1)  # (..., M, M): [i, j] = mean_j > mean_i


def _cluster_layout(n: int, clusters: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items sorted by cluster, and for each position the start and size of its cluster's block."""
    if clusters is None:
        return np.arange(n), np.zeros(n, dtype=np.int64), np.full(n, n, dtype=np.int64)
    order = np.argsort(clusters, kind="stable")
    _, first, sizes = np.unique(clusters[order], return_index=True, return_counts=True)
    starts = np.repeat(first, sizes)
    return order, starts.astype(np.int64), np.repeat(sizes, sizes).astype(np.int64)


def resample_counts(n: int, clusters: np.ndarray | None, b: int, rng: np.random.Generator) -> np.ndarray:
    """(b, n) float32 counts: how often each item is drawn in each of ``b`` bootstrap resamples.

    Each cluster keeps its size: its items are drawn with replacement from its own items (a stratified
    bootstrap); without clusters all n items are drawn from all n.
    """
    order, starts, sizes = _cluster_layout(n, clusters)
    u = rng.random((b, n), dtype=np.float32)
    within = np.minimum((u * sizes.astype(np.float32)).astype(np.int64), sizes - 1)  # (b, n) offset in block
    draws = order[starts + within]  # (b, n) item indices
    flat = (np.arange(b)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float32)


def _resampled_means(counts: np.ndarray, filled: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """(b, M) means of each model over its scored items in each resample (NaN where it scored none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ filled.T).astype(np.float64) / (counts @ scored.T)


MAX_BOOT = 1_000_000
"""The most resamples: a rank interval's Monte Carlo error is already ~0.5 % at 10,000; 2**64 resamples was
numpy's "Maximum allowed dimension exceeded", exit 3."""


def bootstrap_ranks(
    scores: np.ndarray, *, clusters: np.ndarray | None = None, n_boot: int = 1000, seed: int = 0
) -> np.ndarray:
    """(n_boot, M) competition ranks of the M models in paired bootstrap resamples of the items.

    Args:
        scores: (M, n) item scores, NaN where a model did not score an item (its mean is over the items
            it scored in the resample).
        clusters: (n,) cluster ids; items are resampled within their cluster (None: all items together).
        n_boot: resamples.
        seed: seed of ``numpy.random.default_rng``.

    Raises:
        UsageError: n_boot outside [1, MAX_BOOT], or clusters not of length n.
    """
    if not 1 <= n_boot <= MAX_BOOT:
        raise UsageError(f"n_boot={n_boot} must be in [1, {MAX_BOOT:,}]")
    m, n = scores.shape
    if clusters is not None and clusters.shape != (n,):
        raise UsageError(f"clusters has {clusters.size} entries for {n} items")
    scored = (~np.isnan(scores)).astype(np.float32)
    filled = np.nan_to_num(scores, nan=0.0).astype(np.float32)
    rng = np.random.default_rng(seed)
    ranks = np.empty((n_boot, m), dtype=np.int32)
    for start in range(0, n_boot, CHUNK):
        b = min(CHUNK, n_boot - start)
        means = _resampled_means(resample_counts(n, clusters, b, rng), filled, scored)
        ranks[start : start + b] = competition_ranks(means)
    return ranks


def rank_upper_bounds(better: np.ndarray) -> np.ndarray:
    """Chatbot Arena's rank upper bound: 1 + the number of models significantly better than each one.

    ``better[i, j]`` is True when model j is significantly better than model i.
    """
    return 1 + better.sum(axis=1)


def _letter(k: int) -> str:
    """a, b, ..., z, aa, ab, ... for k = 0, 1, ..."""
    letters = string.ascii_lowercase
    return letters[k] if k < 26 else _letter(k // 26 - 1) + letters[k % 26]


def tier_letters(means: Sequence[float] | np.ndarray, separated: np.ndarray) -> tuple[str, ...]:
    """Compact letter display: models that no significant difference separates share a letter.

    Piepho's insert-and-absorb (2004, J Comput Graph Stat 13:456): start from one group of all models; for
    each separated pair split every group holding both into the group without one and the group without the
    other; drop groups inside another. Then every pair sharing a letter is unseparated, and every
    unseparated pair shares one. Letters go to the groups in the order of
    their best member's mean ("a" holds the top model).

    Args:
        means: the models' scores (orders the letters).
        separated: (M, M) symmetric bool, True where a pair is significantly different.
    """
    m = len(means)
    groups: list[frozenset[int]] = [frozenset(range(m))]
    for i in range(m):
        for j in range(i + 1, m):
            if not separated[i, j]:
                continue
            split: list[frozenset[int]] = []
            for g in groups:
                split.extend((g - {i}, g - {j}) if i in g and j in g else (g,))
            uniq = set(split)
            groups = [g for g in uniq if g and not any(g < h for h in uniq)]
    order = np.argsort(-np.asarray(means, dtype=np.float64), kind="stable")
    position = {int(k): r for r, k in enumerate(order)}
    groups.sort(key=lambda g: (min(position[k] for k in g), sorted(position[k] for k in g)))
    return tuple("".join(_letter(t) for t, g in enumerate(groups) if k in g) for k in range(m))


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b along the last axis of (S, M) arrays, as ``scipy.stats.kendalltau`` (variant b)."""
    dx = np.sign(x[:, :, None] - x[:, None, :])  # (S, M, M)
    dy = np.sign(y[:, :, None] - y[:, None, :])
    upper = np.triu(np.ones(x.shape[1], dtype=bool), k=1)
    concord = (dx * dy)[:, upper].sum(axis=1)
    nx, ny = (dx != 0)[:, upper].sum(axis=1), (dy != 0)[:, upper].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return concord / np.sqrt(nx.astype(np.float64) * ny)


def split_half_taus(scores: np.ndarray, *, n_splits: int = 200, seed: int = 0) -> np.ndarray:
    """(n_splits,) Kendall tau-b between the models' scores on two random halves of the items.

    Each split puts floor(n/2) items, drawn without replacement, in the first half and the rest in the
    second; a model's score in a half is its mean over the items it scored there.
    """
    if n_splits < 1:
        raise UsageError(f"n_splits={n_splits} must be at least 1")
    n = scores.shape[1]
    if n < 2:
        raise UsageError(f"{n} item: a split-half agreement needs at least 2 items")
    scored = (~np.isnan(scores)).astype(np.float32)
    filled = np.nan_to_num(scores, nan=0.0).astype(np.float32)
    rng = np.random.default_rng(seed)
    base = np.zeros(n, dtype=np.float32)
    base[: n // 2] = 1.0
    taus = np.empty(n_splits)
    for start in range(0, n_splits, CHUNK):
        b = min(CHUNK, n_splits - start)
        first = rng.permuted(np.tile(base, (b, 1)), axis=1)  # (b, n) 1 = first half
        x = _resampled_means(first, filled, scored)
        y = _resampled_means(1.0 - first, filled, scored)
        taus[start : start + b] = _kendall_tau_b(x, y)
    return taus
