"""Falcon-H1: every layer (``layer_types`` ``hybrid``) runs attention and a Mamba-2 mixer side by side on the
same normed input and adds both outputs, then a gated MLP. The mixer's inner width is ``mamba_d_ssm`` (not
``mamba_expand`` x hidden), ``mamba_n_heads`` heads of ``mamba_d_head``. The muP multipliers scale
activations and move no bytes."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register
from expkit.models.recurrent import Mamba2Mixer


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    heads, head_dim = int(attr(cfg, raw, "mamba_n_heads")), int(attr(cfg, raw, "mamba_d_head"))
    inner = int(attr(cfg, raw, "mamba_d_ssm") or heads * head_dim)
    d_state, groups = int(attr(cfg, raw, "mamba_d_state")), int(attr(cfg, raw, "mamba_n_groups"))
    return Mamba2Mixer(
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        inner=inner,
        d_state=d_state,
        n_groups=groups,
        conv_channels=inner + 2 * groups * d_state,
        conv_kernel=int(attr(cfg, raw, "mamba_d_conv")),
    )


FALCON_H1 = register(
    Family(
        name="falcon-h1",
        model_types=("falcon_h1",),
        architectures=("FalconH1ForCausalLM",),
        fields=(
            "mamba_d_ssm",
            "mamba_n_heads",
            "mamba_d_head",
            "mamba_d_state",
            "mamba_n_groups",
            "mamba_d_conv",
            "mamba_expand",
            "mamba_chunk_size",
            "mamba_conv_bias",
            "mamba_proj_bias",
            "mamba_norm_before_gate",
            "mamba_rms_norm",
            "mamba_use_mlp",
            "projectors_bias",
            "num_logits_to_keep",
            "mlp_expansion_factor",
            # muP multipliers: they scale activations, move no bytes and change no count
            "embedding_multiplier",
            "lm_head_multiplier",
            "attention_in_multiplier",
            "attention_out_multiplier",
            "key_multiplier",
            "ssm_in_multiplier",
            "ssm_out_multiplier",
            "ssm_multipliers",
            "mlp_multipliers",
        ),
        mixer=_mixer,
        parallel_layer_types=("hybrid",),
    )
)
