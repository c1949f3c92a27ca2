"""Marian (the opus-mt models): BART's field names and post-norm layout without BART's embedding LayerNorm,
fixed sinusoidal positions (counted by the meta build, never trained) and a head tied to the shared
embedding (``share_encoder_decoder_embeddings``)."""

from typing import Any

from expkit.models.families.pegasus import PEGASUS_FIELDS, sinusoidal_stacks
from expkit.models.families.registry import Family, Stacks, register


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    return sinusoidal_stacks(cfg, raw, source, final_norm=False)


MARIAN = register(
    Family(
        name="marian",
        model_types=("marian",),
        architectures=("MarianMTModel", "MarianModel"),
        fields=(*PEGASUS_FIELDS, "decoder_vocab_size", "share_encoder_decoder_embeddings"),
        stacks=_stacks,
    )
)
