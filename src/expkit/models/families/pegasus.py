"""Pegasus: BART's field names, pre-norm with a final LayerNorm after each stack, no LayerNorm on the
embedding, and fixed sinusoidal positions (``PegasusSinusoidalPositionalEmbedding``: an embedding table of
``max_position_embeddings`` rows that the meta build counts and never trains)."""

from dataclasses import replace
from typing import Any

from expkit.models.families.bart import BART_FIELDS, bart_like_stacks
from expkit.models.families.registry import Family, Stacks, register

PEGASUS_FIELDS = (
    *BART_FIELDS,
    "max_position_embeddings",
    "static_position_embeddings",
    "add_bias_logits",
    "add_final_layer_norm",
    "normalize_before",
    "normalize_embedding",
    "extra_pos_embeddings",
)


FROZEN_POSITIONS_NOTE = (
    "sinusoidal position tables (max_position_embeddings x d_model per stack) are counted as trainable in a "
    "full fine-tune; transformers builds them frozen (requires_grad False), so the trainable count and its "
    "gradient and optimizer lines are that much high"
)


def sinusoidal_stacks(cfg: Any, raw: dict[str, Any], source: str, *, final_norm: bool) -> Stacks:
    """BART's stacks with fixed sinusoidal positions and no embedding LayerNorm (Pegasus, Marian); a final
    LayerNorm after each stack when ``final_norm`` (Pegasus's pre-norm; Marian is post-norm)."""
    st = bart_like_stacks(cfg, raw, source)
    return replace(
        st,
        notes=(*st.notes, FROZEN_POSITIONS_NOTE),
        embedding_norm=False,
        final_norm=final_norm,
        learned_positions=(False, False),
    )


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    return sinusoidal_stacks(cfg, raw, source, final_norm=True)


PEGASUS = register(
    Family(
        name="pegasus",
        model_types=("pegasus",),
        architectures=("PegasusForConditionalGeneration", "PegasusModel"),
        fields=PEGASUS_FIELDS,
        stacks=_stacks,
    )
)
