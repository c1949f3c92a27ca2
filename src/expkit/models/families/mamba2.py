"""Mamba-2 (Mamba-Codestral): attention-free; every layer is an SSD mixer with one RMSNorm and no MLP."""

from typing import Any

from expkit.models.attention import AttentionSpec
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register
from expkit.models.recurrent import Mamba2Mixer

MAMBA2_FIELDS = ("expand", "num_heads", "head_dim", "state_size", "n_groups", "conv_kernel")
# the same fields as hybrids with a ``mamba_`` prefix name them (Bamba, Granite-4.0-H)
HYBRID_MAMBA_FIELDS = (
    "mamba_expand",
    "mamba_n_heads",
    "mamba_d_head",
    "mamba_d_state",
    "mamba_n_groups",
    "mamba_d_conv",
)


def ssd_mixer(cfg: Any, raw: dict[str, Any], hidden: int, names: tuple[str, ...] = MAMBA2_FIELDS) -> Mamba2Mixer:
    """The Mamba-2 mixer from the fields ``names`` (expand, heads, head dim, state, groups, conv kernel):
    Mamba-2's own, or a hybrid's ``mamba_*`` fields."""
    expand, heads, head_dim, d_state, groups, conv = (attr(cfg, raw, n) for n in names)
    inner, d_state, groups = int(float(expand) * hidden), int(d_state), int(groups)
    return Mamba2Mixer(
        num_heads=int(heads),
        num_kv_heads=int(heads),
        head_dim=int(head_dim),
        v_head_dim=int(head_dim),
        inner=inner,
        d_state=d_state,
        n_groups=groups,
        conv_channels=inner + 2 * groups * d_state,
        conv_kernel=int(conv),
    )


def hybrid_ssd_mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> Mamba2Mixer:
    """``ssd_mixer`` from a hybrid's ``mamba_*`` fields (``HYBRID_MAMBA_FIELDS``)."""
    return ssd_mixer(cfg, raw, hidden, HYBRID_MAMBA_FIELDS)


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    return ssd_mixer(cfg, raw, hidden)


MAMBA2 = register(
    Family(
        name="mamba2",
        model_types=("mamba2",),
        architectures=("Mamba2ForCausalLM",),
        fields=(
            *MAMBA2_FIELDS,
            "chunk_size",
            "time_step_rank",
            "time_step_limit",
            "time_step_min",
            "time_step_max",
            "time_step_floor",
            "use_bias",
            "use_conv_bias",
            "norm_before_gate",
            "rms_norm",
            "residual_in_fp32",
            "rescale_prenorm_residual",
            "layer_norm_epsilon",
        ),
        attention_free=True,
        mlp_free=True,
        mixer=_mixer,
    )
)
