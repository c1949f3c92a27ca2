"""mBART (mbart-large-50, mBART-cc25): BART's field names and layout, pre-norm, with both BART's LayerNorm on
each stack's embedding output and a final LayerNorm after each stack (``add_final_layer_norm``)."""

from dataclasses import replace
from typing import Any

from expkit.models.families.bart import BART_FIELDS, bart_like_stacks
from expkit.models.families.registry import Family, Stacks, register


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    return replace(bart_like_stacks(cfg, raw, source), final_norm=True)


MBART = register(
    Family(
        name="mbart",
        model_types=("mbart",),
        architectures=("MBartForConditionalGeneration", "MBartModel"),
        fields=(*BART_FIELDS, "max_position_embeddings", "add_bias_logits", "add_final_layer_norm", "normalize_before"),
        stacks=_stacks,
    )
)
