"""LFM2: gated short convolutions on the layers ``layer_types`` marks ``conv``, attention with q/k norms on
``full_attention``; a gated MLP whose width transformers derives from ``block_ff_dim`` (``Lfm2MLP``: 2/3 of
it when ``block_auto_adjust_ff_dim``, times ``block_ffn_dim_multiplier``, rounded up to
``block_multiple_of``)."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register
from expkit.models.recurrent import ShortConvMixer


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    kernel = int(attr(cfg, raw, "conv_L_cache"))
    return ShortConvMixer(
        num_heads=1, num_kv_heads=1, head_dim=hidden, v_head_dim=hidden, conv_channels=hidden, conv_kernel=kernel
    )


def _standard_fields(cfg: Any, raw: dict[str, Any]) -> dict[str, Any]:
    width = attr(cfg, raw, "intermediate_size", "block_ff_dim")
    if not isinstance(width, int):
        return {}
    if attr(cfg, raw, "block_auto_adjust_ff_dim"):
        width = int(2 * width / 3)
        multiplier = attr(cfg, raw, "block_ffn_dim_multiplier")
        if multiplier is not None:
            of = int(attr(cfg, raw, "block_multiple_of") or 1)
            width = of * ((int(multiplier * width) + of - 1) // of)
    return {"intermediate_size": width}


LFM2 = register(
    Family(
        name="lfm2",
        model_types=("lfm2",),
        architectures=("Lfm2ForCausalLM",),
        fields=(
            "conv_L_cache",
            "conv_bias",
            "conv_dim",
            "conv_dim_out",
            "conv_use_xavier_init",
            "block_ff_dim",
            "block_auto_adjust_ff_dim",
            "block_ffn_dim_multiplier",
            "block_multiple_of",
            "block_dim",
            "block_norm_eps",
            "block_use_swiglu",
            "block_mlp_init_scale",
            "block_out_init_scale",
            "block_use_xavier_init",
            "num_heads",
            "use_pos_enc",
        ),
        qk_norm=True,
        mixer=_mixer,
        mixer_layer_types=("conv",),
        standard_fields=_standard_fields,
    )
)
