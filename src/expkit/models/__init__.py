"""A model as its config.json describes it, below every stage that needs one (memory, perf, finetune).

``description`` reads a config (a file, a model directory, a Hugging Face cache entry or the shipped catalog)
into a ``ModelDescription``: per layer its attention (MHA/GQA/MQA/MLA, sliding window) and MLP (dense or
mixture-of-experts), the towers of a multimodal model, the weight bits of a quantized checkpoint, and
``approximations``: what was assumed or left out. ``counting`` counts parameters exactly on the meta device
(total, active per token, LoRA adapters through the installed peft).
"""

from __future__ import annotations

from expkit.models.description import (
    AttentionSpec,
    LayerSpec,
    MlpSpec,
    ModelDescription,
    catalog_names,
    describe_config,
    load_model_description,
    read_model_config,
)

__all__ = [
    "AttentionSpec",
    "LayerSpec",
    "MlpSpec",
    "ModelDescription",
    "catalog_names",
    "describe_config",
    "load_model_description",
    "read_model_config",
]
