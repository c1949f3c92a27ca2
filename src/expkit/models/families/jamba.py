"""Jamba: Mamba (v1) mixers on the layers transformers marks ``linear_attention``, attention elsewhere."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register
from expkit.models.recurrent import MambaMixer


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    inner = int(attr(cfg, raw, "mamba_expand")) * hidden
    return MambaMixer(
        num_heads=1,
        num_kv_heads=1,
        head_dim=inner,
        v_head_dim=inner,
        inner=inner,
        d_state=int(attr(cfg, raw, "mamba_d_state")),
        dt_rank=int(attr(cfg, raw, "mamba_dt_rank")),
        conv_channels=inner,
        conv_kernel=int(attr(cfg, raw, "mamba_d_conv")),
    )


JAMBA = register(
    Family(
        name="jamba",
        model_types=("jamba",),
        architectures=("JambaForCausalLM",),
        fields=("mamba_expand", "mamba_d_state", "mamba_dt_rank", "mamba_d_conv"),
        mixer=_mixer,
    )
)
