"""Granite-4.0-H (``granitemoehybrid``): Mamba-2 mixers on most layers, attention on a few; every layer has a
shared MLP of ``shared_intermediate_size`` and, when ``num_local_experts`` > 0, routed experts beside it
(0 experts: transformers builds no expert block, a dense hybrid such as Granite-4.0-H-Micro)."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.families.mamba2 import ssd_mixer
from expkit.models.families.registry import Family, register

_FIELDS = ("mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv")


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    return ssd_mixer(cfg, raw, hidden, _FIELDS)


GRANITE_HYBRID = register(
    Family(
        name="granite-hybrid",
        model_types=("granitemoehybrid",),
        architectures=("GraniteMoeHybridForCausalLM",),
        fields=(
            *_FIELDS,
            "shared_intermediate_size",
            "mamba_chunk_size",
            "mamba_conv_bias",
            "mamba_proj_bias",
            "time_step_limit",
            # scalar multipliers and the position scheme: they move no bytes and change no count
            "embedding_multiplier",
            "attention_multiplier",
            "residual_multiplier",
            "logits_scaling",
            "position_embedding_type",
            "normalization_function",
        ),
        shared_mlp_field="shared_intermediate_size",
        zero_experts_dense=True,
        mixer=_mixer,
    )
)
