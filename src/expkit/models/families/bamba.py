"""Bamba: Mamba-2 mixers on the layers transformers marks ``linear_attention`` (every layer but
``attn_layer_indices``), attention on the others, a gated MLP of ``intermediate_size`` in every layer."""

from expkit.models.families.mamba2 import HYBRID_MAMBA_FIELDS, hybrid_ssd_mixer
from expkit.models.families.registry import Family, register

BAMBA = register(
    Family(
        name="bamba",
        model_types=("bamba",),
        architectures=("BambaForCausalLM",),
        fields=(
            *HYBRID_MAMBA_FIELDS,
            "attn_layer_indices",
            "attn_rotary_emb",
            "mamba_chunk_size",
            "mamba_conv_bias",
            "mamba_proj_bias",
            "mamba_dt_rank",
            "num_logits_to_keep",
            "z_loss_coefficient",
        ),
        mixer=hybrid_ssd_mixer,
    )
)
