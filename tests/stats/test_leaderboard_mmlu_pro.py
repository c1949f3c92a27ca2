"""The leaderboard on three of MMLU-Pro's published output files, every figure recomputed here from the
raw JSON with gzip + json + scipy + statsmodels (no expkit code in the reference).

Data: /work/shared/data/mmlu-pro (TIGER-AI-Lab/MMLU-Pro, eval_results/, Apache-2.0; its README publishes
Qwen1.5-72B-Chat at 52.64). Three models keep the test fast; the 20-model run is bench_stats.py's and
docs/stats.md's.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from expkit.integrations.leaderboard_sources import LeaderboardRequest, build_leaderboard_from
from expkit.integrations.readers import parse_label

DATA = Path("/work/shared/data/mmlu-pro")
MODELS = ("Qwen1.5-72B-Chat", "DeepSeek-Coder-V2", "Llama-2-7b-hf")
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="the MMLU-Pro files are not on this machine")


def _path(model: str) -> Path:
    return DATA / f"model_outputs_{model}_5shots.json.gz"


def _reference(model: str) -> tuple[dict[int, int | None], int]:
    """question_id -> 1/0 (None: pred null), and the count of entries that are not records."""
    entries = json.loads(gzip.decompress(_path(model).read_bytes()))
    recs = [e for e in entries if isinstance(e, dict)]
    return {r["question_id"]: (None if r["pred"] is None else int(r["pred"] == r["answer"])) for r in recs}, len(
        entries
    ) - len(recs)


@pytest.fixture(scope="module")
def board():
    labels = tuple(parse_label(f"{m}={_path(m)}") for m in MODELS)
    return build_leaderboard_from(LeaderboardRequest(labels=labels, n_boot=200))


@pytest.fixture(scope="module")
def ref():
    return {m: _reference(m) for m in MODELS}


def test_scores_counts_skipped_unparsed(board, ref):
    by = {m.name: m for m in board.models}
    for model in MODELS:
        items, skipped = ref[model]
        row = by[model]
        assert row.n == len(items) and row.skipped == skipped
        assert row.unparsed == sum(v is None for v in items.values())
        assert row.score == pytest.approx(sum(v or 0 for v in items.values()) / len(items), abs=1e-15)
    assert (by["DeepSeek-Coder-V2"].n, by["DeepSeek-Coder-V2"].skipped) == (10_351, 43)  # the defects
    assert by["Qwen1.5-72B-Chat"].unparsed == 2211


def test_exact_mcnemar_on_common_items_and_holm(board, ref):
    raw = []
    for pair in board.pairs:
        a, b = ref[pair.a][0], ref[pair.b][0]
        common = sorted(set(a) & set(b))
        assert pair.n_common == len(common)
        x = np.array([a[k] or 0 for k in common])
        y = np.array([b[k] or 0 for k in common])
        n10, n01 = int(np.sum((x == 1) & (y == 0))), int(np.sum((x == 0) & (y == 1)))
        assert pair.delta == pytest.approx((n10 - n01) / len(common), abs=1e-15)
        want = stats.binomtest(n10, n10 + n01, 0.5).pvalue
        assert pair.p == pytest.approx(want, rel=1e-9, abs=1e-300)
        raw.append(want)
    reject, adj, _, _ = multipletests(raw, alpha=0.05, method="holm")
    assert [p.distinguishable for p in board.pairs] == list(reject)
    assert [p.p_adjusted for p in board.pairs] == pytest.approx(list(adj), rel=1e-9, abs=1e-300)
    n_ds = {p.n_common for p in board.pairs if "DeepSeek-Coder-V2" in (p.a, p.b)}
    assert n_ds == {10_351}


def test_rank_upper_bounds_by_hand_count(board):
    names = [m.name for m in board.models]
    for m in board.models:
        better = sum(
            1
            for p in board.pairs
            if p.distinguishable and ((p.b == m.name and p.delta > 0) or (p.a == m.name and p.delta < 0))
        )
        assert m.rank_upper_bound == 1 + better
    assert names == ["DeepSeek-Coder-V2", "Qwen1.5-72B-Chat", "Llama-2-7b-hf"]


def test_qwen_published_52_64_is_not_what_its_outputs_give(tmp_path, ref):
    """The README's 52.64 for Qwen1.5-72B-Chat against its own outputs: 47.15 with nulls wrong, 48.99 with
    nulls at 1/10 (the repository's scorer draws a random letter for them: about the same)."""
    pub = tmp_path / "published.csv"
    pub.write_text("model,score\nQwen1.5-72B-Chat,52.64\n")
    items, _ = ref["Qwen1.5-72B-Chat"]
    right, nulls = sum(v or 0 for v in items.values()), sum(v is None for v in items.values())
    for policy, want in (("wrong", right / len(items)), ("chance:10", (right + nulls / 10) / len(items))):
        req = LeaderboardRequest(
            paths=(str(_path("Qwen1.5-72B-Chat")), str(_path("Llama-2-7b-hf"))),
            unparsed=policy,
            n_boot=20,
            published=str(pub),
        )
        (check,) = build_leaderboard_from(req).published
        assert check.model == "model_outputs_Qwen1.5-72B-Chat_5shots"  # the published name, matched
        assert check.published == pytest.approx(0.5264) and check.computed == pytest.approx(want, abs=1e-15)
        assert not check.within_ci and check.ci_high < 0.5264
    assert round(100 * right / len(items), 2) == 47.15
