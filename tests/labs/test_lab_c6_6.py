"""Lab C6.6 runs quick: one char-LM training step profiled, shares sum to 100%, GEMM present."""

from __future__ import annotations

import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_6_quick(tmp_path):
    (lab,) = select_labs(["C6.6"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    shares = [x.value for k, x in m.items() if k.startswith("share_")]
    assert len(shares) == 7 and sum(shares) == pytest.approx(100)
    assert m["share_gemm"].value > 10 and m["share_attention"].value > 0  # the char LM uses SDPA
    assert m["profiling_overhead"].value > 0
    # the verdict follows from the measured share: >= 80% in the seed's five buckets reproduces it
    assert m["named_share"].verdict.kind == ("reproduced" if m["named_share"].value >= 80 else "differs")
    assert "%" in m["verdict"].value
