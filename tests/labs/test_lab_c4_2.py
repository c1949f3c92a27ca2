from verdict_checks import assert_computed, assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab
from expkit.memory.replica import ReplicaQuery
from expkit.models.description import describe_config


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
    assert (
        m["ckpt_bytes"].verdict.kind == "differs"
        and "(the residual stream) is float32" in m["ckpt_bytes"].verdict.reason
    )
    # issue 36: the checkpointing cause is the dtype read off the layer's input, not the stored bytes per token per
    # layer that the judged figure is extrapolated from
    assert "float32: 4 B per hidden unit per token" in m["ckpt_bytes"].verdict.reason
    assert "bytes per element of a decoder layer's input" in m["ckpt_bytes"].verdict.reason
    assert res.figures
    # issue 36: the one computed term inside the measured figures (the real vocabulary's log-probs) is named
    assert "added by arithmetic" in m["act_7b"].detail and "0.47 GiB" in m["act_7b"].detail
    assert_computed(m, "ledger_7b", "korthikanti_7b", "ckpt_ledger")  # issue 36: formulas beside the replicas
    # issue 36: the cause is a second probe (saved-tensor hooks by op on the 1-layer replica), not the figure
    # restated: its text names the blocks and ops it measured and their shares, and no typed-in explanation
    why = m["act_7b"].verdict.reason
    assert "held by its largest block" in why and "saved-tensor hooks on one layer" in why
    assert "mlp" in why and "the largest ops: " in why and "are fp32" in why and "per token per layer" in why
    assert "RMSNorm keeps fp32 input and output" not in res.explanation


TINY_LLAMA = dict(
    model_type="llama",
    hidden_size=64,
    intermediate_size=176,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=4,
    vocab_size=256,
)


def test_saved_bytes_by_op_attributes_every_saved_byte():
    """The by-op probe accounts for exactly the bytes measure_saved_bytes counts, layer by layer, and names the
    ops and dtypes that hold them: under bf16 autocast the linears save 16-bit inputs, the RMSNorms fp32."""
    import torch

    from expkit.labs.lab_c4_2_activations import saved_bytes_by_op, saved_parts_text
    from expkit.memory.replica import build_replica, measure_saved_bytes

    totals = {}
    for n in (1, 2):
        spec = describe_config(dict(TINY_LLAMA, num_hidden_layers=n), name="tiny-llama", source="test")
        torch.manual_seed(0)
        model = build_replica(spec, ReplicaQuery(num_layers=n, precision="bf16-mixed", seed=0))
        parts = saved_bytes_by_op(model, seq=32, precision="bf16-mixed", seed=0)
        whole = measure_saved_bytes(model, batch=1, seq=32, precision="bf16-mixed").activation_bytes
        assert sum(p.nbytes for p in parts) == whole
        totals[n] = sum(p.nbytes for p in parts if p.in_layer)
        by = {(p.part, p.op): p.dtype for p in parts if p.in_layer}
        assert by[("mlp.down_proj", "MmBackward0")] == "bfloat16"
        assert {d for (part, _), d in by.items() if part.endswith("layernorm")} == {"float32"}
        assert not any(p.part.startswith("layers") for p in parts)  # the layer index is stripped
    # per-layer parts scale with depth; the one storage two layers share (RoPE's cos/sin, 2 x 32 x 16 fp32, saved
    # by the first layer that uses it) is counted once, and nothing outside the layers is counted in one
    assert 0 <= 2 * totals[1] - totals[2] <= 2 * 32 * 16 * 4
    share, block, text = saved_parts_text(parts, 32)
    assert block in text and 0 < share <= 100 and f"{block} {share:.0f}%" in text


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


def test_layer_input_dtype_reads_what_checkpointing_keeps():
    """The C4.2 checkpointing cause: under bf16 autocast an fp32 model's residual stream, the input each decoder
    layer keeps for its recomputation, stays float32 (4 B per hidden unit, twice the seed's 2 B); a model cast to
    bf16, the contrary input, keeps bfloat16, and the cause would not explain a figure over the seed's."""
    import torch

    from expkit.labs.lab_c4_2_activations import layer_input_dtype
    from expkit.memory.replica import build_replica

    spec = describe_config(TINY_LLAMA, name="tiny-llama", source="test")
    model = build_replica(spec, ReplicaQuery(num_layers=1, precision="bf16-mixed", seed=0))
    assert layer_input_dtype(model, seq=16, precision="bf16-mixed", seed=0) == "float32"
    assert layer_input_dtype(model.to(torch.bfloat16), seq=16, precision="fp32", seed=0) == "bfloat16"
