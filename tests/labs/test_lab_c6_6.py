"""Lab C6.6 runs quick: one char-LM training step profiled, shares sum to 100%, GEMM present. The seed's buckets
include device idle and launch overhead, gaps on a device timeline: without CUDA the verdict is 'not measured here'."""

from __future__ import annotations

import pytest
from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.lab_c6_6_profile import NAMED_RULE
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_6_quick(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (lab,) = select_labs(["C6.6"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    shares = [x.value for k, x in m.items() if k.startswith("share_")]
    assert len(shares) == 7 and sum(shares) == pytest.approx(100)
    assert m["share_gemm"].value > 10 and m["share_attention"].value > 0  # the char LM uses SDPA
    assert m["profiling_overhead"].value > 0
    assert m["named_share"].verdict.kind == "not measured here" and "CUDA" in m["named_share"].verdict.reason
    assert m["named_share_cpu"].verdict is None and 0 < m["named_share_cpu"].value <= 100
    assert "%" in m["verdict"].value


def test_named_share_rule_flips():
    # on a CUDA trace the verdict comes from this rule: 80% in the five buckets holds, 77% does not
    assert NAMED_RULE.judge(85.0).kind == "reproduced"
    assert NAMED_RULE.judge(77.0).kind == "not reproduced"
    assert_flips(type("M", (), {"key": "named_share", "rule": NAMED_RULE, "value": 85.0})(), 77.0)
