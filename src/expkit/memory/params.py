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


def _analytic_count(spec: ModelSpec, r: int | None, alpha: float | None, targets: tuple[str, ...]) -> ParameterCount:
    """The count from the standard config fields, Llama-style block, for a model_type transformers lacks."""
    h, d_q, d_kv, inter = spec.hidden_size, spec.num_heads * spec.head_dim, spec.kv_dim, spec.intermediate_size
    shapes = {
        "q_proj": (h, d_q),
        "k_proj": (h, d_kv),
        "v_proj": (h, d_kv),
        "o_proj": (d_q, h),
        "gate_proj": (h, inter),
        "up_proj": (h, inter),
        "down_proj": (inter, h),
    }
    bias = (d_q + 2 * d_kv) if spec.qkv_bias else 0
    per_layer = sum(i * o for i, o in shapes.values()) + bias + 2 * h  # + two RMSNorm weights
    embed = spec.vocab_size * h
    lm_head = 0 if spec.tied_embeddings else spec.vocab_size * h
    base = embed + spec.num_layers * per_layer + h + lm_head
    adapters = 0
    if r is not None:
        chosen = shapes if targets == (ALL_LINEAR,) else {k: v for k, v in shapes.items() if k in targets}
        if targets != (ALL_LINEAR,):
            _check_targets(targets, list(shapes), list(shapes))
        adapters = spec.num_layers * sum(r * (i + o) for i, o in chosen.values())
    active = base - embed + (embed if spec.tied_embeddings else 0)
    return ParameterCount(
        model=spec.name,
        **training_fields(base, adapters, r, alpha, targets),
        embedding_params=embed,
        lm_head_params=lm_head,
        per_layer_params=per_layer,
        num_layers=spec.num_layers,
        tied_embeddings=spec.tied_embeddings,
        counted_by=(
            f"analytic from the standard config fields: transformers does not know "
            f"model_type {spec.model_type!r} (Llama-style block assumed)"
        ),
        linear_module_names=tuple(sorted(shapes)),
        active_params=active,
        active_params_with_embedding=base,
        tower_params=0,
        head_matmul_params=spec.vocab_size * h,
        decoder_layer_params=spec.num_layers * per_layer,
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
