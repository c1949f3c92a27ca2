"""A leaderboard of N models on one benchmark from their per-item scores: each score with its interval,
ranks with paired bootstrap rank intervals, rank upper bounds, tier letters, every pair tested (exact
McNemar for 0/1 scores, a paired t test for graded ones) with Holm or BH over all N(N-1)/2 pairs, the
unparsed-answer policy and what another policy would reorder, published figures checked, split-half
rank agreement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from expkit.errors import UsageError
from expkit.stats.intervals import wilson_interval
from expkit.stats.multiplicity import bh_adjust, holm_adjust
from expkit.stats.pairwise import PairTests, pair_tests
from expkit.stats.ranks import (
    bootstrap_ranks,
    competition_ranks,
    rank_upper_bounds,
    split_half_taus,
    tier_letters,
)
from expkit.stats.seeds import t_interval
from expkit.stats.tables import clustered_model_interval

__all__ = [
    "ADJUSTMENTS",
    "Leaderboard",
    "LeaderboardModel",
    "LeaderboardPair",
    "OrderChange",
    "PublishedCheck",
    "ScoreMatrix",
    "UnparsedPolicy",
    "build_leaderboard",
    "parse_unparsed_policy",
    "policy_scores",
]

ADJUSTMENTS = ("holm", "bh", "none")
N_SPLITS = 200
"""Random halvings of the items behind the split-half tau (its median moves < 0.01 past ~100)."""


@dataclass(frozen=True)
class UnparsedPolicy:
    """How an item whose answer could not be parsed counts: ``wrong`` (0), ``drop`` (left out: the
    model is scored on its answered items) or ``chance`` (the expected score of a guess, 1/k)."""

    kind: Literal["wrong", "drop", "chance"] = "wrong"
    k: int | None = None

    def __str__(self) -> str:
        return f"chance:{self.k}" if self.kind == "chance" else self.kind


def parse_unparsed_policy(text: str) -> UnparsedPolicy:
    """``wrong``, ``drop`` or ``chance:K`` (K >= 2 options per question).

    Raises:
        UsageError: any other text, naming it.

    Example:
        >>> parse_unparsed_policy("chance:10")
        UnparsedPolicy(kind='chance', k=10)
    """
    if text in ("wrong", "drop"):
        return UnparsedPolicy(text)  # type: ignore[arg-type]
    kind, _, k = text.partition(":")
    if kind == "chance" and k.isdigit() and int(k) >= 2:
        return UnparsedPolicy("chance", int(k))
    raise UsageError(f"--unparsed {text!r} is not known", hint="use wrong, drop or chance:K with K >= 2 options")


@dataclass(frozen=True, eq=False)
class ScoreMatrix:
    """Per-item scores of M models on the union of their items.

    ``scores`` (M, n): the item score, NaN where the model has no score (item absent, or unparsed);
    ``unparsed`` (M, n): the model answered but no answer could be parsed; ``clusters`` (n,) cluster ids
    or None; ``skipped``: entries per model's file that were not records; ``n_choices``: options per
    question when the files say (the distinct answers seen), the K of the ``chance`` alternative.
    """

    names: tuple[str, ...]
    scores: np.ndarray
    unparsed: np.ndarray
    clusters: np.ndarray | None = None
    skipped: tuple[int, ...] = ()
    n_choices: int | None = None
    notes: tuple[str, ...] = ()
    items: tuple[str, ...] = ()  # the item id of each column, when the reader knows them


def policy_scores(matrix: ScoreMatrix, policy: UnparsedPolicy) -> np.ndarray:
    """(M, n) scores with the unparsed items filled in as ``policy`` says (NaN: not scored)."""
    if policy.kind == "drop":
        return matrix.scores.copy()
    fill = 0.0 if policy.kind == "wrong" else 1.0 / float(policy.k or 1)
    return np.where(matrix.unparsed, fill, matrix.scores)


@dataclass(frozen=True)
class LeaderboardModel:
    """One model. ``score`` the mean over its ``n`` scored items with an interval (Wilson, or t for
    graded scores; on the effective size or cluster-robust with clusters); ``rank`` the competition
    rank of the score; ``rank_best``/``rank_worst`` the bootstrap rank interval; ``rank_upper_bound``
    1 + the models significantly better; ``tier`` its letters."""

    name: str
    n: int
    skipped: int
    unparsed: int
    score: float
    ci_low: float
    ci_high: float
    rank: int
    rank_best: int
    rank_worst: int
    rank_upper_bound: int
    tier: str
    interval: str


@dataclass(frozen=True)
class LeaderboardPair:
    """Model ``a`` (ahead in the table) against ``b`` on the ``n_common`` items both scored: ``delta`` the
    mean paired difference a - b, ``p`` from ``test``, ``p_adjusted`` over all pairs, ``items_for_power``
    the items a paired z test needs to separate the two at 80 % power (None: no difference to detect)."""

    a: str
    b: str
    n_common: int
    delta: float
    p: float
    p_adjusted: float
    distinguishable: bool
    test: str
    items_for_power: int | None


@dataclass(frozen=True)
class OrderChange:
    """A pair whose order differs under ``policy``: ``a`` is ahead under the leaderboard's policy."""

    a: str
    b: str
    policy: str
    score_a: float
    score_b: float
    score_a_other: float
    score_b_other: float


@dataclass(frozen=True)
class PublishedCheck:
    """A published figure beside the one computed from the model's outputs (both as fractions)."""

    model: str
    published: float
    computed: float
    ci_low: float
    ci_high: float
    within_ci: bool


@dataclass(frozen=True)
class Leaderboard:
    models: tuple[LeaderboardModel, ...]
    pairs: tuple[LeaderboardPair, ...]
    order_changes: tuple[OrderChange, ...]
    published: tuple[PublishedCheck, ...]
    policy: str
    adjust: str
    level: float
    seed: int
    n_boot: int
    n_items: int
    binary: bool
    clustered: bool
    split_half_tau: float
    split_half_low: float
    split_half_high: float
    n_splits: int
    notes: tuple[str, ...] = field(default=())


def _model_interval(values: np.ndarray, clusters: np.ndarray | None, level: float) -> tuple[float, float, str]:
    n = values.size
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    if clusters is not None and n > 1 and np.unique(clusters).size >= 2:
        _, low, high, g, _ = clustered_model_interval(values, clusters, level=level)
        return low, high, f"{'wilson' if binary else 'normal'}-clustered ({g} clusters)"
    if binary:
        iv = wilson_interval(int(values.sum()), n, level=level)
        return iv.low, iv.high, "wilson"
    if n < 2:
        return math.nan, math.nan, "none (1 item)"
    ti = t_interval(values, level=level)
    return ti.low, ti.high, "t"


def _pairs(names: tuple[str, ...], t: PairTests, adjust: str, alpha: float) -> tuple[list[LeaderboardPair], np.ndarray]:
    """Every pair i < j in table order, adjusted; and better[i, j]: j is significantly better than i."""
    m = len(names)
    ij = [(i, j) for i in range(m) for j in range(i + 1, m)]
    p_adj = _adjusted([float(t.p[i, j]) for i, j in ij], adjust)
    better = np.zeros((m, m), dtype=bool)
    pairs = []
    for (i, j), pa in zip(ij, p_adj, strict=True):
        n_common, delta = int(t.n_common[i, j]), float(t.delta[i, j])
        sig = bool(pa < alpha and n_common > 0 and delta != 0.0)
        if sig:
            better[(j, i) if delta > 0 else (i, j)] = True
        test = "mcnemar-exact" if t.mcnemar[i, j] else "paired-t"
        need = int(t.items_for_power[i, j]) or None
        pairs.append(LeaderboardPair(names[i], names[j], n_common, delta, float(t.p[i, j]), pa, sig, test, need))
    return pairs, better


def _adjusted(p: list[float], adjust: str) -> tuple[float, ...]:
    if adjust == "holm":
        return holm_adjust(p)
    if adjust == "bh":
        return bh_adjust(p)
    return tuple(p)


def _order_changes(matrix: ScoreMatrix, policy: UnparsedPolicy, means: np.ndarray) -> list[OrderChange]:
    """Pairs whose order (a ahead, tied, b ahead) differs under each other policy."""
    others = [UnparsedPolicy("wrong"), UnparsedPolicy("drop")]
    k = policy.k if policy.kind == "chance" else matrix.n_choices
    if k is not None and k >= 2:
        others.append(UnparsedPolicy("chance", k))
    out: list[OrderChange] = []
    if not matrix.unparsed.any():
        return out
    for other in others:
        if str(other) == str(policy):
            continue
        alt = np.nanmean(policy_scores(matrix, other), axis=1)
        for i in range(len(means)):
            for j in range(i + 1, len(means)):
                if np.sign(means[i] - means[j]) != np.sign(alt[i] - alt[j]):
                    a, b = (i, j) if means[i] >= means[j] else (j, i)
                    names = matrix.names
                    out.append(
                        OrderChange(
                            names[a],
                            names[b],
                            str(other),
                            float(means[a]),
                            float(means[b]),
                            float(alt[a]),
                            float(alt[b]),
                        )
                    )
    return out


def _check_published(
    published: Mapping[str, float], names: tuple[str, ...], means: np.ndarray, bounds: list[tuple[float, float]]
) -> list[PublishedCheck]:
    out = []
    for model, value in published.items():
        if model not in names:
            raise UsageError(f"published model {model!r} is not on the leaderboard", hint=f"models: {', '.join(names)}")
        i = names.index(model)
        low, high = bounds[i]
        out.append(PublishedCheck(model, value, float(means[i]), low, high, bool(low <= value <= high)))
    return out


def _validate(matrix: ScoreMatrix, adjust: str, level: float, n_boot: int) -> None:
    if adjust not in ADJUSTMENTS:
        raise UsageError(f"--adjust {adjust!r} is not known", hint=f"use one of {', '.join(ADJUSTMENTS)}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level={level} is not in (0, 1)")
    if n_boot < 1:
        raise UsageError(f"--boot {n_boot} must be at least 1")
    if len(matrix.names) < 2:
        raise UsageError(f"{len(matrix.names)} model: a leaderboard needs at least two", hint="pass one file per model")
    if matrix.scores.shape[1] < 2:
        raise UsageError(f"{matrix.scores.shape[1]} item: a leaderboard needs at least two items")


def build_leaderboard(
    matrix: ScoreMatrix,
    *,
    policy: UnparsedPolicy = UnparsedPolicy(),
    adjust: str = "holm",
    level: float = 0.95,
    seed: int = 0,
    n_boot: int = 1000,
    published: Mapping[str, float] | None = None,
) -> Leaderboard:
    """The leaderboard of ``matrix``'s models, best first.

    Args:
        matrix: the models' item scores.
        policy: how unparsed answers count.
        adjust: ``holm`` (default), ``bh`` or ``none`` over all N(N-1)/2 pairs.
        level: confidence level of the intervals; a pair is distinguishable at p_adjusted < 1 - level.
        seed: seed of the bootstrap and the split halves.
        n_boot: bootstrap resamples for the rank intervals, and random splits for the split-half tau.
        published: model -> published score as a fraction, checked against the computed interval.

    Raises:
        UsageError: an unknown adjustment, a level outside (0, 1), fewer than two models or items, a
            published model not on the board.
    """
    _validate(matrix, adjust, level, n_boot)
    alpha = 1.0 - level
    scores = policy_scores(matrix, policy)
    scored = ~np.isnan(scores)
    empty = [nm for nm, row in zip(matrix.names, scored, strict=True) if not row.any()]
    if empty:
        raise UsageError(f"model {empty[0]!r} has no scored item under --unparsed {policy}", hint="use wrong or chance")
    means = np.array([float(scores[i, scored[i]].mean()) for i in range(len(matrix.names))])
    order = [int(k) for k in np.argsort(-means, kind="stable")]
    names = tuple(matrix.names[k] for k in order)
    scores, means, scored = scores[order], means[order], scored[order]
    unparsed = matrix.unparsed[order].sum(axis=1)
    skipped = [matrix.skipped[k] if matrix.skipped else 0 for k in order]
    m = len(names)
    bounds, kinds = [], []
    for i in range(m):
        cl = matrix.clusters[scored[i]] if matrix.clusters is not None else None
        low, high, kind = _model_interval(scores[i, scored[i]], cl, level)
        bounds.append((low, high))
        kinds.append(kind)
    pairs, better = _pairs(names, pair_tests(scores, alpha=alpha), adjust, alpha)
    ranks = competition_ranks(means)
    boot = bootstrap_ranks(scores, clusters=matrix.clusters, n_boot=n_boot, seed=seed)
    best = np.quantile(boot, alpha / 2.0, axis=0, method="lower")
    worst = np.quantile(boot, 1.0 - alpha / 2.0, axis=0, method="higher")
    upper = rank_upper_bounds(better)
    tiers = tier_letters(means, better | better.T)
    models = tuple(
        LeaderboardModel(
            names[i],
            int(scored[i].sum()),
            skipped[i],
            int(unparsed[i]),
            float(means[i]),
            bounds[i][0],
            bounds[i][1],
            int(ranks[i]),
            int(best[i]),
            int(worst[i]),
            int(upper[i]),
            tiers[i],
            kinds[i],
        )
        for i in range(m)
    )
    taus = split_half_taus(scores, n_splits=N_SPLITS, seed=seed + 1)
    pub = _check_published(published or {}, names, means, bounds)
    binary = bool(np.all((scores[scored] == 0.0) | (scores[scored] == 1.0)))
    reordered = _order_changes(_reordered(matrix, order), policy, means)
    return Leaderboard(
        models=models,
        pairs=tuple(pairs),
        order_changes=tuple(reordered),
        published=tuple(pub),
        policy=str(policy),
        adjust=adjust,
        level=level,
        seed=seed,
        n_boot=n_boot,
        n_items=int(scores.shape[1]),
        binary=binary,
        clustered=matrix.clusters is not None,
        split_half_tau=_quantile(taus, 0.5),
        split_half_low=_quantile(taus, alpha / 2.0),
        split_half_high=_quantile(taus, 1.0 - alpha / 2.0),
        n_splits=N_SPLITS,
        notes=matrix.notes,
    )


def _quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile of the defined values (NaN when none is: every split tied every pair)."""
    finite = values[~np.isnan(values)]
    return float(np.quantile(finite, q)) if finite.size else math.nan


def _reordered(matrix: ScoreMatrix, order: list[int]) -> ScoreMatrix:
    return ScoreMatrix(
        tuple(matrix.names[k] for k in order),
        matrix.scores[order],
        matrix.unparsed[order],
        matrix.clusters,
        tuple(matrix.skipped[k] for k in order) if matrix.skipped else (),
        matrix.n_choices,
        matrix.notes,
        matrix.items,
    )
