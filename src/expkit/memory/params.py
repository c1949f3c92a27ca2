"""Exact parameter counts for the memory ledger and ``sft params``: ``expkit.models.counting`` (the real
transformers class on the meta device; LoRA by the installed peft per layer kind), with an analytic
Llama-style count for model types transformers does not know (flagged in ``counted_by``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from expkit.errors import UsageError
from expkit.models.counting import ALL_LINEAR, ParameterCount, count_model, training_fields
from expkit.models.description import ModelDescription, resolve_description

__all__ = ["count_parameters"]


def _check_targets(targets: tuple[str, ...], linear_names: Sequence[str], all_names: Sequence[str]) -> None:
    if targets == (ALL_LINEAR,):
        return
    for t in targets:
        if not any(n == t or n.endswith("." + t) for n in all_names):
            raise UsageError(
                f"LoRA target {t!r} matches no module of the model",
                hint=f"linear modules: {', '.join(linear_names)} (or {ALL_LINEAR})",
            )


def _normalize_targets(lora_targets: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(lora_targets, str):
        parts = tuple(p.strip() for p in lora_targets.split(",") if p.strip())
    else:
        parts = tuple(lora_targets)
    if not parts:
        raise UsageError("lora_targets is empty", hint=f"give module names like q_proj,v_proj or {ALL_LINEAR}")
    return parts


def _analytic_adapters(desc: ModelDescription, r: int, targets: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """LoRA adapter parameters of the analytic count, and the linear module names: every layer's attention
    projections and its dense MLP (gate, up, down), r * (in + out) each. A routed-expert layer is refused:
    which of its matmuls peft would adapt depends on the class transformers does not have."""
    if desc.is_moe:
        raise UsageError(
            f"LoRA on model_type {desc.model_type!r}: transformers does not know it and its experts' modules "
            "cannot be named, so peft's choice cannot be counted",
            hint="give architectures a transformers class (e.g. DeepseekV3ForCausalLM), or count --method full",
        )
    att_names = ("q_proj", "k_proj", "v_proj", "o_proj")
    names = (*att_names, "gate_proj", "up_proj", "down_proj")
    if targets != (ALL_LINEAR,):
        _check_targets(targets, list(names), list(names))
    adapters, h = 0, desc.hidden_size
    for layer in desc.layers:
        att = layer.attention.linear_shapes(h)
        named = dict(zip(att_names, att, strict=False)) if len(att) == 4 else {f"attn{i}": s for i, s in enumerate(att)}
        inter = layer.mlp.intermediate_size
        named |= {"gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h)}
        chosen = named.values() if targets == (ALL_LINEAR,) else [v for k, v in named.items() if k in targets]
        adapters += sum(r * (i + o) for i, o in chosen)
    return adapters, names


def _qkv_bias_params(desc: ModelDescription, attention: Any) -> int:
    """The q, k and v biases of one layer's attention when the config asks for them (its heads' widths)."""
    if not desc.qkv_bias:
        return 0
    return (attention.num_heads + 2 * attention.num_kv_heads) * attention.head_dim


def _analytic_count(
    desc: ModelDescription, r: int | None, alpha: float | None, targets: tuple[str, ...]
) -> ParameterCount:
    """The count of a model_type transformers lacks, from the one description every other figure reads:
    each layer's matmuls as its attention and MLP kinds give them (a Llama-style block unless the fields say
    MLA or experts), two RMSNorm weights per layer, each layer's q/k/v biases, the embedding, the head and the
    final norm."""
    h = desc.hidden_size
    own = [_qkv_bias_params(desc, layer.attention) + 2 * h + layer.attention.norm_params for layer in desc.layers]
    per_layer = [layer.linear_params(h) + o for layer, o in zip(desc.layers, own, strict=True)]
    active_layers = sum(layer.active_linear_params(h) + o for layer, o in zip(desc.layers, own, strict=True))
    embed = desc.vocab_size * h
    lm_head = 0 if desc.tied_embeddings else desc.vocab_size * h
    base = embed + sum(per_layer) + h + lm_head
    adapters, names = _analytic_adapters(desc, r, targets) if r is not None else (0, ())
    active = active_layers + h + desc.vocab_size * h
    return ParameterCount(
        model=desc.name,
        **training_fields(base, adapters, r, alpha, targets),
        embedding_params=embed,
        lm_head_params=lm_head,
        per_layer_params=per_layer[0],
        num_layers=desc.num_layers,
        tied_embeddings=desc.tied_embeddings,
        counted_by=(
            f"analytic from the config fields: transformers does not know model_type {desc.model_type!r} "
            f"(layers as described: {'; '.join(f'{n} x {layer.label}' for layer, n in desc.layer_groups())})"
        ),
        linear_module_names=tuple(sorted(names)),
        active_params=active,
        active_params_with_embedding=active + (0 if desc.tied_embeddings else embed),
        tower_params=0,
        head_matmul_params=desc.vocab_size * h,
        decoder_layer_params=sum(per_layer),
        other_params=h,  # the final norm
        model_class=None,
        approximations=desc.approximations,
    )


def count_parameters(
    config_or_path: ModelDescription | str | Path | dict[str, Any],
    *,
    lora_r: int | None = None,
    lora_alpha: float | None = None,
    lora_targets: str | Sequence[str] = ALL_LINEAR,
) -> ParameterCount:
    """Exact parameter counts, full fine-tune or LoRA, from a config alone.

    Args:
        config_or_path: catalog name (``qwen2.5-0.5b``), model directory, ``config.json`` path, dict or
            ModelDescription.
        lora_r: LoRA rank; None counts a full fine-tune (every parameter trainable).
        lora_alpha: LoRA alpha (does not change counts; recorded). Default 2 * r.
        lora_targets: ``all-linear`` (peft's: every nn.Linear but the output head) or module names
            (``"q_proj,v_proj"`` or a sequence).

    Returns:
        ParameterCount. The model is built on the meta device with transformers (no memory, no weights);
        adapters are counted by real peft on it. Unknown architectures fall back to an analytic count,
        flagged in ``counted_by``.

    Raises:
        UsageError: ``lora_r`` < 1, or a LoRA target that matches no module (the message lists the
            model's linear module names).
        InputError: the config is unreadable or lacks a required key.

    Example:
        >>> c = count_parameters("qwen2.5-0.5b", lora_r=16)
        >>> c.total_params, c.trainable_params, round(100 * c.trainable_fraction, 2)
        (494032768, 8798208, 1.78)

    Reference: LoRA, Hu et al. 2021 (r * (d_in + d_out) parameters per adapted matrix).
    """
    if lora_r is not None and (isinstance(lora_r, bool) or lora_r < 1):
        raise UsageError(f"lora_r must be >= 1, got {lora_r!r}")
    desc = resolve_description(config_or_path)
    targets = _normalize_targets(lora_targets)
    alpha = float(lora_alpha) if lora_alpha is not None else (2.0 * lora_r if lora_r is not None else None)
    counted = count_model(desc, lora_r=lora_r, lora_alpha=alpha, lora_targets=targets)
    return counted if counted is not None else _analytic_count(desc, lora_r, alpha, targets)
