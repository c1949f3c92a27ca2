"""Gemma-3n: a per-layer ``intermediate_size`` list, q/k norms, the last ``num_kv_shared_layers`` layers
attending to an earlier layer's cache (transformers gives them no cache layer), and matmuls besides attention
and MLP: per layer LAuReL (hidden -> laurel_rank -> hidden), the per-layer-input gate and projection (hidden
<-> hidden_size_per_layer_input) and AltUp's router (hidden -> altup_num_inputs); outside the layers the
per-layer-input projection (hidden -> layers x per-layer width) and the 2 x (altup_num_inputs - 1) AltUp
projections (hidden x hidden). The per-layer-input embedding (vocab_size_per_layer_input x layers x width) is
a lookup, counted by the meta build. Gemma-3n's vision tower needs the optional package timm."""

from typing import Any

from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, register


def _layer_extras(cfg: Any, raw: dict[str, Any], hidden: int) -> tuple[tuple[int, int], ...]:
    rank, per_layer = int(attr(cfg, raw, "laurel_rank")), int(attr(cfg, raw, "hidden_size_per_layer_input"))
    altup = int(attr(cfg, raw, "altup_num_inputs"))
    return ((hidden, rank), (rank, hidden), (hidden, per_layer), (per_layer, hidden), (hidden, altup))


def _model_extras(cfg: Any, raw: dict[str, Any], hidden: int) -> tuple[tuple[int, int], ...]:
    per_layer, layers = int(attr(cfg, raw, "hidden_size_per_layer_input")), int(raw["num_hidden_layers"])
    altup = int(attr(cfg, raw, "altup_num_inputs"))
    return ((hidden, layers * per_layer), *(((hidden, hidden),) * (2 * (altup - 1))))


GEMMA3N = register(
    Family(
        name="gemma3n",
        model_types=("gemma3n", "gemma3n_text"),
        architectures=("Gemma3nForConditionalGeneration", "Gemma3nForCausalLM"),
        fields=(
            "num_kv_shared_layers",
            "laurel_rank",
            "hidden_size_per_layer_input",
            "vocab_size_per_layer_input",
            "altup_num_inputs",
            "altup_active_idx",
            "altup_coef_clip",
            "altup_correct_scale",
            "altup_lr_multiplier",
            "activation_sparsity_pattern",  # a top-k of the gate's activations: the matmuls stay dense
            "rope_local_base_freq",
        ),
        qk_norm=True,
        kv_shared_field="num_kv_shared_layers",
        layer_extras=_layer_extras,
        model_extras=_model_extras,
    )
)
