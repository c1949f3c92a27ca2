"""Granite-4.0-H (``granitemoehybrid``): Mamba-2 mixers on most layers, attention on a few; every layer has a
shared MLP of ``shared_intermediate_size`` and, when ``num_local_experts`` > 0, routed experts beside it
(0 experts: transformers builds no expert block, a dense hybrid such as Granite-4.0-H-Micro)."""

from expkit.models.families.mamba2 import HYBRID_MAMBA_FIELDS, hybrid_ssd_mixer
from expkit.models.families.registry import Family, register

GRANITE_HYBRID = register(
    Family(
        name="granite-hybrid",
        model_types=("granitemoehybrid",),
        architectures=("GraniteMoeHybridForCausalLM",),
        fields=(
            *HYBRID_MAMBA_FIELDS,
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
        mixer=hybrid_ssd_mixer,
    )
)
