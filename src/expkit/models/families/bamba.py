"""Bamba: Mamba-2 mixers on the layers transformers marks ``linear_attention`` (every layer but
``attn_layer_indices``), attention on the others, a gated MLP of ``intermediate_size`` in every layer."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.families.mamba2 import ssd_mixer
from expkit.models.families.registry import Family, register

_FIELDS = ("mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv")


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    return ssd_mixer(cfg, raw, hidden, _FIELDS)


BAMBA = register(
    Family(
        name="bamba",
        model_types=("bamba",),
        architectures=("BambaForCausalLM",),
        fields=(
            *_FIELDS,
            "attn_layer_indices",
            "attn_rotary_emb",
            "mamba_chunk_size",
            "mamba_conv_bias",
            "mamba_proj_bias",
            "mamba_dt_rank",
            "num_logits_to_keep",
            "z_loss_coefficient",
        ),
        mixer=_mixer,
    )
)
