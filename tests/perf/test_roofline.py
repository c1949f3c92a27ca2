"""The roofline of a step: hand-derived counts, the seed's H100 figures, identities, bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import InputError, UsageError
from expkit.models import describe_config, load_model_description
from expkit.perf.roofline import Roof, estimate_roofline, roof_for_gpu

# Qwen/Qwen2.5-0.5B config.json values (also in the memory catalog)
QWEN05 = {
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
QWEN = describe_config(QWEN05, name="qwen", source="test")


def test_qwen05_matmul_weights_by_hand():
    m = QWEN
    # per layer: q 896*896 + k,v 2*896*128 + o 896*896 + gate/up/down 3*896*4864 = 14,909,440; x24 + head 151936*896
    assert m.linear_params() == 24 * 14_909_440 + 151_936 * 896 == 493_961_216
    # + q/k/v biases 24*(896+256) + norms 24*2*896 + 896 = the published 494,032,768 parameters (tied head once)
    assert m.linear_params() + 24 * (896 + 256) + 24 * 2 * 896 + 896 == 494_032_768


def test_catalog_name_goes_through_the_memory_loader():
    catalog = load_model_description("qwen2.5-0.5b")
    assert catalog.layers == QWEN.layers and catalog.linear_params() == QWEN.linear_params()
    assert catalog.matmul_io_per_token() == QWEN.matmul_io_per_token()


def test_h100_decode_at_batch_1_is_memory_bound_with_intensity_near_1():
    # seed C6.1: ridge 295 FLOP/byte on an H100, decode intensity ~1
    e = estimate_roofline(model=QWEN, roof=roof_for_gpu("H100"), phase="decode", batch=1)
    assert e.ridge_flop_per_byte == pytest.approx(295, abs=1)
    weights, kv = e.parts
    assert weights.intensity_flop_per_byte == pytest.approx(1.0, abs=0.01)  # 2 FLOP / 2 bytes per weight
    assert kv.intensity_flop_per_byte == pytest.approx(14 / 2)  # heads / kv_heads at 2 bytes per KV element
    assert e.bound == "memory" and weights.bound == "memory"


def test_critical_batch_is_where_the_weight_matmuls_reach_the_ridge():
    m, roof = QWEN, roof_for_gpu("A100 80GB SXM")
    e = estimate_roofline(model=m, roof=roof, phase="decode", batch=1)
    at = estimate_roofline(model=m, roof=roof, phase="decode", batch=round(e.critical_batch))
    assert at.parts[0].intensity_flop_per_byte == pytest.approx(roof.ridge_flop_per_byte, rel=0.01)
    # weights alone would give ridge * 2 bytes / 2 FLOP; activations' traffic can only push it up
    assert e.critical_batch > roof.ridge_flop_per_byte


def test_weight_only_quantization_moves_decode_right_and_training_is_compute_bound():
    m, roof = QWEN, roof_for_gpu("H100")
    ai = {
        b: estimate_roofline(model=m, roof=roof, batch=1, weight_bits=b).parts[0].intensity_flop_per_byte
        for b in (16, 8, 4)
    }
    assert ai[4] > ai[8] > ai[16]
    assert ai[4] == pytest.approx(4 * ai[16], rel=0.02)
    speed = {b: estimate_roofline(model=m, roof=roof, batch=1, weight_bits=b).tokens_per_s for b in (16, 4)}
    assert speed[4] > 2.5 * speed[16]  # weights dominate the bytes at batch 1
    train = estimate_roofline(model=m, roof=roof, phase="train", batch=8, context=2048)
    assert train.parts[0].bound == "compute" and train.bound == "compute"


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 4096), context=st.integers(1, 32768), bits=st.sampled_from([16, 8, 4]))
def test_decode_identities(batch, context, bits):
    e = estimate_roofline(
        model=QWEN,
        roof=roof_for_gpu("L4"),
        phase="decode",
        batch=batch,
        context=context,
        weight_bits=bits,
    )
    assert e.flops == pytest.approx(sum(p.flops for p in e.parts))
    assert e.step_time_s == pytest.approx(sum(p.time_s for p in e.parts))
    assert e.tokens_per_s == pytest.approx(batch / e.step_time_s)
    assert e.parts[1].intensity_flop_per_byte == pytest.approx(7.0)  # KV part: independent of batch and context
    assert e.parts[1].bound == "memory"
    for p in e.parts:  # nothing beats its roof
        assert p.flops / p.time_s <= roof_for_gpu("L4").peak_flop_s * (1 + 1e-9)


def test_cpu_like_roof_is_accepted():
    roof = Roof(name="cpu", peak_flop_s=5e10, bandwidth_bytes_s=1e10, source="measured")
    e = estimate_roofline(model=QWEN, roof=roof, phase="prefill", batch=1, context=512)
    assert e.ridge_flop_per_byte == 5.0 and e.bound == "compute" and e.critical_batch is None


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"phase": "serve"}, r"^phase 'serve'"),
        ({"weight_bits": 3}, r"^weight_bits 3"),
        ({"batch": 0}, r"^batch 0"),
        ({"context": 0}, r"^context 0"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, msg):
    with pytest.raises(UsageError, match=msg):
        estimate_roofline(model=QWEN, roof=roof_for_gpu("H100"), **kwargs)


def test_config_file_and_its_errors(tmp_path):
    good = tmp_path / "config.json"
    good.write_text(json.dumps(QWEN05))
    assert load_model_description(tmp_path).linear_params() == 493_961_216
    bad = tmp_path / "bad" / "config.json"
    bad.parent.mkdir()
    bad.write_text('{"hidden_size": 8,\n oops}')
    with pytest.raises(InputError, match=r"config.json:2"):
        load_model_description(bad)
    with pytest.raises(UsageError, match=r"'no-such-model'"):
        load_model_description("no-such-model")


def test_group_quantized_checkpoint_reads_its_head_at_16_bit_as_the_ledger_stores_it():
    """Issue 19: the roofline read an AWQ checkpoint's output head at 4 bits while `mem --mode infer` (and the
    checkpoint) keep it 16-bit. Both now ask the description's storage scheme."""
    from expkit.memory import count_parameters, estimate_inference_memory

    base = load_model_description("qwen2.5-7b").raw
    raw = {**base, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    shape = describe_config(raw, name="qwen2.5-7b-awq", source="test")
    e = estimate_roofline(model=shape, roof=roof_for_gpu("H100"), phase="decode", batch=1)
    head = 152064 * 3584  # vocab x hidden, untied
    bits = 4 + (16 + 4) / 128  # 4-bit values + fp16 scale and zero per 128
    assert e.weight_bytes == pytest.approx((shape.linear_params() - head) * bits / 8 + 2 * head, rel=1e-12)
    assert e.weight_bits == 4
    led = estimate_inference_memory(raw, context=1024, device="cpu")
    c = count_parameters(raw)
    matmul = sum(k.layers * k.matmul_params_per_layer for k in c.layer_kinds)
    assert matmul == shape.linear_params() - head  # the same quantized weights in both tools
    assert led.line("weights").bytes == int(matmul * bits / 8 + 2 * (c.total_params - matmul))
    # a what-if width still applies to every matmul weight
    w4 = estimate_roofline(model=shape, roof=roof_for_gpu("H100"), phase="decode", batch=1, weight_bits=4)
    assert w4.weight_bytes == pytest.approx(shape.linear_params() / 2)


def test_whisper_weight_total_counts_each_convolution_once():
    """Whisper's conv1 runs over 2 mel frames per encoder position, so its FLOPs count it twice; its weights are
    stored (and read, and updated by the optimizer) once. Truth: transformers' WhisperForConditionalGeneration on
    the meta device, every nn.Linear and nn.Conv1d weight (the tied head once, as a matmul)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pathlib import Path

    from expkit.perf.roofline import RooflineQuery, estimate_roofline_for

    path = Path(__file__).parents[1] / "models" / "published" / "configs" / "whisper-large-v3"
    raw = json.loads((path / "config.json").read_text())
    cfg = transformers.WhisperConfig(**{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})
    with torch.device("meta"):
        model = transformers.WhisperForConditionalGeneration(cfg)
    kinds = (torch.nn.Linear, torch.nn.Conv1d)
    truth = sum(m.weight.numel() for m in model.modules() if isinstance(m, kinds))
    assert truth == 1_539_801_600  # meta-device count above, transformers 5
    result = estimate_roofline_for(RooflineQuery(model=path, gpu="H100", phase="train", batch=1, context=448))
    train = result.estimate
    assert train.linear_params == truth
    optimizer = next(p for p in train.parts if p.name.startswith("optimizer"))
    assert optimizer.bytes == 30 * truth  # AdamW: 30 B per parameter
    # every matmul weight is read once per step at 16 bits (the encoder's pass reads its layers, both convolutions
    # and every cross-attention's k and v); conv1's FLOPs still count its two frames per encoder position
    prefill = next(e for e in result.phases if e.phase == "prefill")
    assert prefill.weight_bytes == 2 * truth
    encoder_side = sum(m.weight.numel() for m in model.model.encoder.modules() if isinstance(m, kinds)) + sum(
        m.weight.numel()
        for n, m in model.model.decoder.named_modules()
        if n.endswith(("encoder_attn.k_proj", "encoder_attn.v_proj"))
    )
    conv1 = model.model.encoder.conv1.weight.numel()
    encoder = next(p for p in train.parts if p.name == "encoder matmuls")
    assert encoder.flops == 3 * 2 * 1500 * (encoder_side + conv1)  # forward + backward, 1500 positions
