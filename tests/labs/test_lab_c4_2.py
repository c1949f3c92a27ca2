from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def _lab(lab_id):
    return next(entry for entry in select_labs([lab_id]) if entry.id == lab_id)


def test_lab_c4_2_activations(tmp_path):
    res = run_lab(_lab("C4.2"), out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert 20 < m["act_7b"].value < 40  # measured HF blocks: 1.3-1.9x the 17.0 GiB formula
    assert abs(m["korthikanti_7b"].value - 17.0) < 0.01
    # issue 12: the judged checkpointing figure is the measured one (~3.5 GiB), not the ledger's 2.64
    assert 3.0 < m["ckpt_bytes"].value < 4.0 and m["ckpt_bytes"].value > m["ckpt_ledger"].value
    assert m["ckpt_bytes"].value < m["act_7b"].value / 5
    assert 1.5 < m["act_qwen"].value < 20 and m["ckpt_time"].value > 0.8
    # the seed's own figures would be reproduced, ours are not (differs names a measured figure)
    assert_flips(m["act_7b"], 16.5)
    assert_flips(m["ckpt_bytes"], 1.05)
    assert_flips(m["ckpt_time"], 1.30 if m["ckpt_time"].verdict.kind != "reproduced" else 1.05)
    assert m["act_7b"].verdict.kind == "differs" and "per token per layer" in m["act_7b"].verdict.reason
    assert m["ckpt_bytes"].verdict.kind == "differs" and "fp32 residual" in m["ckpt_bytes"].verdict.reason
    assert res.figures


def test_lab_c4_2_validation(tmp_path):
    res = run_lab(_lab("C4.2v"), out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    cases = [x for k, x in m.items() if k.startswith("case") and k[4:].isdigit()]
    assert len(cases) >= 2 and f"{len(cases)} of {len(cases)} cases" in m["cases_within"].label
    # validations of the ledger, not seed figures: no case is a 'reproduced' verdict in the report's counts
    assert all(c.verdict is None and c.seed is None for c in cases)
    assert all(c.detail.endswith(": yes") for c in cases)
    assert m["cases_within"].verdict.kind == "demonstrated" and m["max_error"].value < 10
    assert not any(x.verdict is not None and x.verdict.kind == "reproduced" for x in res.measurements)
    # the lab measures AdamW's three step peaks itself and judges them against the ledger's prediction for each
    impls = [m[f"adamw_{k}"] for k in ("foreach", "for_loop", "fused")]
    assert all(x.provenance == "measured" and "ledger (optimizer_impl=" in x.detail for x in impls)
    assert impls[0].value > impls[1].value > impls[2].value  # foreach's sqrt(v) copy > the for-loop's > fused
    assert m["adamw_impls"].verdict.kind == "demonstrated" and "3 of 3" in m["adamw_impls"].label
    assert 3.5 < m["foreach_extra"].value < 4.5
    # its run-based flip (a prediction for another implementation misses the band) is in
    # tests/memory/test_optimizer_temporaries.py::test_a_wrong_implementation_is_told_apart
