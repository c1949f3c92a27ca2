"""Whisper: a BART-style encoder-decoder (pre-norm, LayerNorm with bias, GELU fc1/fc2, no bias on k_proj)
whose encoder reads ``max_source_positions`` audio positions (1500 for 30 s) from two convolutions over
``num_mel_bins`` log-mel channels (conv1: kernel 3 over 2 frames per position; conv2: kernel 3, stride 2),
and whose decoder generates at most ``max_target_positions`` tokens. The cross-attention cache is fixed by
the 1500 encoder positions, whatever the number of generated tokens."""

from dataclasses import replace
from typing import Any

from expkit.models.config_fields import attr
from expkit.models.families.bart import BART_FIELDS, bart_like_stacks
from expkit.models.families.registry import Family, Stacks, register
from expkit.models.families.t5 import read_ints


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    positions, mels = read_ints(cfg, raw, source, "max_source_positions", "num_mel_bins")
    stacks = bart_like_stacks(cfg, raw, source, source_tokens=positions, o_input_copy=True)
    h = stacks.hidden_size
    target = attr(cfg, raw, "max_target_positions")
    return replace(
        stacks,
        # per encoder position: conv1 (3 mel frames -> h) runs over 2 input frames, conv2 (3 h -> h) once
        encoder_extras=((3 * mels, h), (3 * mels, h), (3 * h, h)),
        encoder_extra_weights=((3 * mels, h), (3 * h, h)),  # conv1 and conv2, stored once each
        embedding_norm=False,
        final_norm=True,
        learned_positions=(False, True),  # the encoder adds its sinusoidal table whole, no ids
        mel_bins=mels,
        notes=(
            f"Whisper: the encoder always reads {positions:,} positions (30 s of audio); the decoder generates "
            f"at most max_target_positions = {target} tokens (context and seq are the decoder's tokens)",
        ),
    )


WHISPER = register(
    Family(
        name="whisper",
        model_types=("whisper",),
        architectures=("WhisperForConditionalGeneration", "WhisperModel"),
        fields=(
            *BART_FIELDS,
            "num_mel_bins",
            "max_source_positions",
            "max_target_positions",
            "apply_spec_augment",
            "mask_time_prob",
            "mask_time_length",
            "mask_time_min_masks",
            "mask_feature_prob",
            "mask_feature_length",
            "mask_feature_min_masks",
            "median_filter_width",
            "use_weighted_layer_sum",
            "classifier_proj_size",
        ),
        stacks=_stacks,
    )
)
