"""Lab C6.2 runs quick: judged on the int8 weight-only kernels measured here (decode GEMV) and, for training, on
the most any weight-only quantization could save on an fp32 GEMM (weight-streaming time bound);
the roofline model's 4-bit figures are shown without a verdict."""

from __future__ import annotations

import pytest
from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_2_quick(tmp_path):
    (lab,) = select_labs(["C6.2"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert 3.0 < m["quant_decode_vs_train"].value < 4.0  # < 4x: the KV cache stays 16-bit
    assert m["quant_decode_vs_train"].verdict is None  # arithmetic that cannot come out otherwise: no verdict
    assert m["decode_ai_4bit"].value == pytest.approx(4 * m["decode_ai_16bit"].value, rel=0.02)
    assert m["train_ai_16bit"].value > 295  # right of the H100 ridge
    dec, train = m["int8_decode_speedup"], m["weight_free_train_bound"]
    assert dec.value > 0 and m["int8_train_speedup"].value > 0
    assert m["int8_train_speedup"].verdict is None  # the slow int8 kernel cannot judge 'hardly helps'
    assert train.value >= 1.0  # removing a cost never slows the GEMM down
    # the decode verdict follows from the measured speed-up: 'differs' only with the measured read-rate cause
    if dec.value >= 1.1:
        assert dec.verdict.kind == "reproduced"
    else:
        assert dec.verdict.kind == "differs" and "weight-read rate" in dec.verdict.reason
    assert_flips(dec, 3.0 if dec.value < 1.1 else 0.5)
    assert_flips(train, 2.0 if train.value <= 1.1 else 1.0)
