"""Exact parameter counts for the memory ledger and ``sft params``: ``expkit.models.counting`` (the real
transformers class on the meta device; LoRA by the installed peft per layer kind), with an analytic
Llama-style count for model types transformers does not know (flagged in ``counted_by``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from expkit.errors import UsageError
from expkit.memory.architecture import ModelSpec, load_model_spec
from expkit.models.counting import ALL_LINEAR, ParameterCount, count_model, training_fields

__all__ = ["build_meta_model", "count_parameters", "resolve_spec"]


def resolve_spec(model: ModelSpec | str | Path | dict[str, Any]) -> ModelSpec:
    """A ModelSpec from a spec, a catalog name, a path, or a config dict."""
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, dict):
        from expkit.memory.architecture import spec_from_dict

        return spec_from_dict(model, name=str(model.get("_name_or_path") or model.get("model_type")), source="dict")
    return load_model_spec(model)


def build_meta_model(spec: ModelSpec) -> Any | None:
    """The model for ``spec`` on the meta device (shapes only), or None if transformers lacks it: the class
    its ``architectures`` names (any Auto class, not only causal LM; ``expkit.models.counting``)."""
    from expkit.models.counting import build_meta_model as _build

    return _build(spec.desc)


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


def _analytic_adapters(spec: ModelSpec, r: int, targets: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """LoRA adapter parameters of the analytic count, and the linear module names: every layer's attention
    projections and its dense MLP (gate, up, down), r * (in + out) each. A routed-expert layer is refused:
    which of its matmuls peft would adapt depends on the class transformers does not have."""
    desc = spec.desc
    if any(layer.mlp.num_experts for layer in desc.layers):
        raise UsageError(
            f"LoRA on model_type {spec.model_type!r}: transformers does not know it and its experts' modules "
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


def _analytic_count(spec: ModelSpec, r: int | None, alpha: float | None, targets: tuple[str, ...]) -> ParameterCount:
    """The count of a model_type transformers lacks, from the one description every other figure reads:
    each layer's matmuls as its attention and MLP kinds give them (a Llama-style block unless the fields say
    MLA or experts), two RMSNorm weights per layer, the q/k/v biases, the embedding, the head and the final
    norm."""
    desc, h = spec.desc, spec.hidden_size
    d_q, d_kv = spec.num_heads * spec.head_dim, spec.kv_dim
    bias = (d_q + 2 * d_kv) if spec.qkv_bias else 0
    per_layer = [layer.linear_params(h) + bias + 2 * h + layer.attention.norm_params for layer in desc.layers]
    active_layers = sum(
        layer.active_linear_params(h) + bias + 2 * h + layer.attention.norm_params for layer in desc.layers
    )
    embed = spec.vocab_size * h
    lm_head = 0 if spec.tied_embeddings else spec.vocab_size * h
    base = embed + sum(per_layer) + h + lm_head
    adapters, names = _analytic_adapters(spec, r, targets) if r is not None else (0, ())
    active = active_layers + h + spec.vocab_size * h
    return ParameterCount(
        model=spec.name,
        **training_fields(base, adapters, r, alpha, targets),
        embedding_params=embed,
        lm_head_params=lm_head,
        per_layer_params=per_layer[0],
        num_layers=spec.num_layers,
        tied_embeddings=spec.tied_embeddings,
        counted_by=(
            f"analytic from the config fields: transformers does not know model_type {spec.model_type!r} "
            f"(layers as described: {'; '.join(f'{n} x {layer.label}' for layer, n in desc.layer_groups())})"
        ),
        linear_module_names=tuple(sorted(names)),
        active_params=active,
        active_params_with_embedding=active + (0 if spec.tied_embeddings else embed),
        tower_params=0,
        head_matmul_params=spec.vocab_size * h,
        decoder_layer_params=sum(per_layer),
        other_params=h,  # the final norm
        model_class=None,
        approximations=spec.desc.approximations,
    )


def count_parameters(
    config_or_path: ModelSpec | str | Path | dict[str, Any],
    *,
    lora_r: int | None = None,
    lora_alpha: float | None = None,
    lora_targets: str | Sequence[str] = ALL_LINEAR,
) -> ParameterCount:
    """Exact parameter counts, full fine-tune or LoRA, from a config alone.

    Args:
        config_or_path: catalog name (``qwen2.5-0.5b``), model directory, ``config.json`` path, dict or ModelSpec.
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
    spec = resolve_spec(config_or_path)
    targets = _normalize_targets(lora_targets)
    alpha = float(lora_alpha) if lora_alpha is not None else (2.0 * lora_r if lora_r is not None else None)
    counted = count_model(spec.desc, lora_r=lora_r, lora_alpha=alpha, lora_targets=targets)
    return counted if counted is not None else _analytic_count(spec, lora_r, alpha, targets)
