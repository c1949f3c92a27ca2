"""ERNIE-4.5 MoE (``ernie4_5_moe``): a Llama-style block whose experts are spelled ``moe_*``. transformers'
Ernie4_5_MoeDecoderLayer routes layer i when ``(i + 1) % moe_layer_interval == 0`` and
``moe_layer_start_index <= i <= moe_layer_end_index`` (-1: the last layer); the others are dense MLPs of
``intermediate_size``. A MoE layer has ``moe_num_experts`` gated experts of ``moe_intermediate_size``,
``moe_k`` per token, and one shared MLP ``moe_num_shared_experts`` x ``moe_intermediate_size`` wide."""

from typing import Any

from expkit.models.families.registry import Family, register


def _get(cfg: Any, raw: dict[str, Any], key: str, default: Any) -> Any:
    value = getattr(cfg, key, None) if cfg is not None else None
    value = raw.get(key) if value is None else value
    return default if value is None else value


def _standard_fields(cfg: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """The ``moe_*`` fields under the names ``layer_specs`` reads (Ernie4_5_MoeConfig's defaults when absent):
    the start index is DeepSeek's ``first_k_dense_replace``, the interval Qwen's ``decoder_sparse_step`` (the
    same ``(i + 1) % step`` rule), the layers after the end index ``mlp_only_layers``."""
    layers = int(raw["num_hidden_layers"])
    end = int(_get(cfg, raw, "moe_layer_end_index", -1))
    end = layers - 1 if end == -1 else end
    shared = int(_get(cfg, raw, "moe_num_shared_experts", 2))
    width = int(_get(cfg, raw, "moe_intermediate_size", 1536))
    return {
        "num_local_experts": int(_get(cfg, raw, "moe_num_experts", 64)),
        "num_experts_per_tok": int(_get(cfg, raw, "moe_k", 6)),
        "moe_intermediate_size": width,
        "first_k_dense_replace": int(_get(cfg, raw, "moe_layer_start_index", 1)),
        "decoder_sparse_step": int(_get(cfg, raw, "moe_layer_interval", 1)),
        "mlp_only_layers": list(range(end + 1, layers)),
        **({"shared_expert_intermediate_size": shared * width} if shared > 0 else {}),
    }


ERNIE45_MOE = register(
    Family(
        name="ernie4.5-moe",
        model_types=("ernie4_5_moe",),
        architectures=("Ernie4_5_MoeForCausalLM",),
        fields=(
            "moe_num_experts",
            "moe_k",
            "moe_num_shared_experts",
            "moe_layer_start_index",
            "moe_layer_end_index",
            "moe_layer_interval",
            "moe_intermediate_size",
            # routing details: capacity, the gate's kind, the aux-free bias (a per-expert vector), the norm's floor
            "moe_capacity",
            "moe_gate",
            "moe_use_aux_free",
            "moe_norm_min",
            "use_bias",
        ),
        standard_fields=_standard_fields,
    )
)
