"""DBRX: a Llama-style block under other names. ``d_model``, ``n_heads``, ``n_layers`` are transformers'
aliases of the common fields; the K/V heads live in ``attn_config.kv_n_heads`` and the experts in
``ffn_config`` (``moe_num_experts`` gated experts of ``ffn_hidden_size``, ``moe_top_k`` per token). Fused
``Wqkv``, LayerNorms without bias, no dense MLP: every layer is MoE."""

from typing import Any

from expkit.models.families.registry import Family, register


def _sub(cfg: Any, raw: dict[str, Any], name: str) -> Any:
    """``attn_config`` / ``ffn_config`` as transformers holds it (an object), else the file's dict."""
    sub = getattr(cfg, name, None)
    return sub if sub is not None else raw.get(name) or {}


def _get(sub: Any, key: str) -> Any:
    return sub.get(key) if isinstance(sub, dict) else getattr(sub, key, None)


def _standard_fields(cfg: Any, raw: dict[str, Any]) -> dict[str, Any]:
    attn, ffn = _sub(cfg, raw, "attn_config"), _sub(cfg, raw, "ffn_config")
    found = {
        "num_key_value_heads": _get(attn, "kv_n_heads"),
        "intermediate_size": _get(ffn, "ffn_hidden_size"),
        "num_local_experts": _get(ffn, "moe_num_experts"),
        "num_experts_per_tok": _get(ffn, "moe_top_k"),
    }
    return {k: v for k, v in found.items() if v is not None}


DBRX = register(
    Family(
        name="dbrx",
        model_types=("dbrx",),
        architectures=("DbrxForCausalLM",),
        fields=("d_model", "n_heads", "n_layers", "max_seq_len", "attn_config", "ffn_config", "emb_pdrop"),
        standard_fields=_standard_fields,
    )
)
