"""Marian (the opus-mt models): BART's field names and post-norm layout without BART's embedding LayerNorm,
fixed sinusoidal positions (counted by the meta build, never trained) and a head tied to the shared
embedding (``share_encoder_decoder_embeddings``)."""

from dataclasses import replace
from typing import Any

from expkit.models.families.bart import bart_like_stacks
from expkit.models.families.pegasus import FROZEN_POSITIONS_NOTE, PEGASUS_FIELDS
from expkit.models.families.registry import Family, Stacks, register


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    st = bart_like_stacks(cfg, raw, source)
    return replace(
        st,
        notes=(*st.notes, FROZEN_POSITIONS_NOTE),
        embedding_norm=False,
        final_norm=False,
        learned_positions=(False, False),
    )


MARIAN = register(
    Family(
        name="marian",
        model_types=("marian",),
        architectures=("MarianMTModel", "MarianModel"),
        fields=(*PEGASUS_FIELDS, "decoder_vocab_size", "share_encoder_decoder_embeddings"),
        stacks=_stacks,
    )
)
