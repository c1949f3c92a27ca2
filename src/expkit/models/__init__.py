"""A model as its config.json describes it, below every stage that needs one (memory, perf, finetune).

``description`` reads a config (a file, a model directory, a Hugging Face cache entry or the shipped catalog;
``config_file``, ``config_fields``, ``nested`` and ``layer_specs`` are its steps)
into one frozen ``ModelDescription``, built once per config content (``config_digest``): per layer its
attention (MHA/GQA/MQA/MLA, sliding window) and MLP (dense or
mixture-of-experts), the towers of a multimodal model, the weight bits of a quantized checkpoint, and
``approximations``: what was assumed or left out. ``counting`` counts parameters exactly on the meta device
(total, active per token, LoRA adapters through the installed peft).
"""

from __future__ import annotations

from expkit.models.attention import AttentionSpec, GroupedQueryAttention, LatentAttention
from expkit.models.description import (
    LayerSpec,
    ModelDescription,
    catalog_names,
    config_digest,
    describe_config,
    load_model_description,
    read_model_config,
    resolve_description,
)
from expkit.models.mlp import DenseMlp, MlpSpec, MoeMlp
from expkit.models.quantization import NF4, QuantizationSpec, WeightParams
from expkit.models.saved import LINEAR_GROUPS, ActivationTerm, SavedActivationContext

__all__ = [
    "LINEAR_GROUPS",
    "NF4",
    "ActivationTerm",
    "AttentionSpec",
    "DenseMlp",
    "GroupedQueryAttention",
    "LatentAttention",
    "LayerSpec",
    "MlpSpec",
    "ModelDescription",
    "MoeMlp",
    "QuantizationSpec",
    "SavedActivationContext",
    "WeightParams",
    "catalog_names",
    "config_digest",
    "describe_config",
    "load_model_description",
    "read_model_config",
    "resolve_description",
]
