"""Lab C6.2 runs quick: 4-bit weights speed decode up (model), not a training step; the CPU probe ran."""

from __future__ import annotations

import pytest

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_2_quick(tmp_path):
    (lab,) = select_labs(["C6.2"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 3.0 < m["quant_decode_vs_train"].value < 4.0  # < 4x: the KV cache stays 16-bit
    assert m["decode_ai_4bit"].value == pytest.approx(4 * m["decode_ai_16bit"].value, rel=0.02)
    assert m["train_ai_16bit"].value > 295  # right of the H100 ridge
    assert m["cpu_int8_gemv"].value > 0
    assert (tmp_path / res.figures[0]).is_file()
