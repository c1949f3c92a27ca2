"""Encoder-decoder training memory (issue 31 item 3) against tiny T5, BART and Whisper replicas on the CPU.

The saved-for-backward terms (encoder layers over the source tokens, decoder layers with cross-attention,
the terms outside the layers) against ``saved_tensors_hooks`` measurements, layer by layer (a stack one layer
deeper, the difference); the ledger's peak against the allocator's peak of a real training step. Dropout is
left at each config class's default (T5 0.1 everywhere; BART 0.1 after each sublayer, and on the attention
probabilities where set; Whisper none), as fine-tuning runs in training mode.
"""

from __future__ import annotations

from typing import Any

import pytest

from expkit.memory.activations import ActivationQuery, estimate_activations
from expkit.memory.ledger import TrainingQuery, estimate_training_memory
from expkit.memory.replica import ReplicaQuery, build_replica, measure_saved_bytes, measure_step_peak
from expkit.models.description import ModelDescription, describe_config

SEQ = 64


def _t5(enc: int, dec: int) -> dict[str, Any]:
    return dict(
        model_type="t5",
        d_model=128,
        d_ff=256,
        d_kv=32,
        num_heads=4,
        num_layers=enc,
        num_decoder_layers=dec,
        vocab_size=1000,
        feed_forward_proj="gated-gelu",
        decoder_start_token_id=0,
    )


def _bart(enc: int, dec: int) -> dict[str, Any]:
    return dict(
        model_type="bart",
        d_model=128,
        encoder_layers=enc,
        decoder_layers=dec,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=256,
        decoder_ffn_dim=256,
        vocab_size=1000,
        max_position_embeddings=256,
        attention_dropout=0.1,  # bart-large's: SDPA with dropout takes the CPU math path
    )


def _whisper(enc: int, dec: int) -> dict[str, Any]:
    return dict(
        model_type="whisper",
        d_model=128,
        encoder_layers=enc,
        decoder_layers=dec,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=256,
        decoder_ffn_dim=256,
        vocab_size=1000,
        num_mel_bins=16,
        max_source_positions=48,  # the encoder's fixed length: 48 positions, 96 mel frames
        max_target_positions=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        begin_suppress_tokens=None,
        suppress_tokens=None,
    )


FAMILIES = {"t5": _t5, "bart": _bart, "whisper": _whisper}


def _spec(family: str, enc: int, dec: int) -> ModelDescription:
    return describe_config(FAMILIES[family](enc, dec), name=f"tiny-{family}", source="test")


def _measured(family: str, enc: int, dec: int, method: str, precision: str) -> int:
    model = build_replica(_spec(family, enc, dec), ReplicaQuery(method=method, precision=precision))
    return measure_saved_bytes(model, batch=1, seq=SEQ, precision=precision).activation_bytes


def _per_layer(family: str, method: str, precision: str) -> tuple[dict[str, int], dict[str, int]]:
    """(measured, estimated) bytes of one encoder layer, one decoder layer, and the rest."""
    base, deeper_enc, deeper_dec = (_measured(family, e, d, method, precision) for e, d in ((1, 1), (2, 1), (1, 2)))
    query = ActivationQuery(batch=1, seq=SEQ, method=method, precision=precision, device="cpu")
    est = estimate_activations(_spec(family, 1, 1), query)
    kinds = {label.startswith("encoder"): b for label, _, b in est.layer_kinds}
    measured = {"encoder": deeper_enc - base, "decoder": deeper_dec - base}
    measured["rest"] = base - measured["encoder"] - measured["decoder"]
    estimated = {"encoder": kinds[True], "decoder": kinds[False], "rest": est.fixed_bytes + est.loss_bytes}
    return measured, estimated


EXACT = [
    ("bart", "full", "fp32"),
    ("bart", "lora", "bf16-mixed"),
    ("whisper", "full", "fp32"),
    ("whisper", "full", "bf16-mixed"),
    ("t5", "full", "fp32"),
    ("t5", "full", "bf16-mixed"),
]


@pytest.mark.parametrize(("family", "method", "precision"), EXACT)
def test_encoder_and_decoder_layer_terms_equal_the_saved_tensors(family, method, precision):
    measured, estimated = _per_layer(family, method, precision)
    assert (estimated["encoder"], estimated["decoder"]) == (measured["encoder"], measured["decoder"])
    # outside the layers: ids, norms, convolutions, log-probs; 8 B per token of int64 ids left to spare
    assert estimated["rest"] == pytest.approx(measured["rest"], abs=8 * 2 * SEQ)


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_t5_lora_layers_within_5_percent(precision):
    # under LoRA, T5's layers keep a little less than modelled in places not identified (measured: decoder
    # +0.3 % in fp32; encoder -4.1 %, decoder -2.3 % under CPU autocast)
    measured, estimated = _per_layer("t5", "lora", precision)
    for stack in ("encoder", "decoder"):
        assert estimated[stack] == pytest.approx(measured[stack], rel=0.05)


@pytest.mark.parametrize(
    ("family", "method", "precision"),
    [("t5", "full", "fp32"), ("bart", "lora", "fp32"), ("whisper", "full", "bf16-mixed")],
)
def test_ledger_peak_within_5_percent_of_the_allocator(family, method, precision):
    spec = _spec(family, 2, 2)
    query = TrainingQuery(model=spec, batch=2, seq=128, method=method, precision=precision, device="cpu", lora_r=8)
    led = estimate_training_memory(query)
    peak = measure_step_peak(
        build_replica(spec, ReplicaQuery(method=method, precision=precision, lora_r=8)),
        batch=2,
        seq=128,
        precision=precision,
    )
    assert led.peak_bytes == pytest.approx(peak.peak_bytes, rel=0.05)
    # the activations line holds both stacks: the encoder's and the decoder's layer kinds
    assert "encoder" in led.line("activations").formula and "cross-attention" in led.line("activations").formula
