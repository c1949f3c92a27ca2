"""Qwen3-Next: gated DeltaNet on the ``linear_attention`` layers, gated full attention with q/k norms on the
others, routed + shared experts."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register
from expkit.models.recurrent import GatedDeltaNet


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    heads, kheads = int(attr(cfg, raw, "linear_num_value_heads")), int(attr(cfg, raw, "linear_num_key_heads"))
    dk, dv = int(attr(cfg, raw, "linear_key_head_dim")), int(attr(cfg, raw, "linear_value_head_dim"))
    return GatedDeltaNet(
        num_heads=heads,
        num_kv_heads=kheads,
        head_dim=dk,
        v_head_dim=dv,
        conv_channels=2 * kheads * dk + heads * dv,  # the conv runs over q, k and v
        conv_kernel=int(attr(cfg, raw, "linear_conv_kernel_dim")),
    )


QWEN3_NEXT = register(
    Family(
        name="qwen3-next",
        model_types=("qwen3_next",),
        fields=(
            "linear_num_value_heads",
            "linear_num_key_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
        ),
        qk_norm=True,
        output_gate=True,
        mixer=_mixer,
    )
)
