"""A model's architecture as its ``config.json`` numbers: loaded from a directory, a file, a Hugging Face
cache entry or the catalog, through ``expkit.models`` (one reader for mem, roofline and sft params).

The catalog (``expkit/models/catalog/*.json``) ships the public config values of well-known models (numbers
only, no weights) so ledgers for them need nothing downloaded. ``ModelSpec`` keeps the Llama-style numbers
the ledger's formulas use; ``ModelSpec.description`` holds every layer's kind (MoE, MLA, windows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expkit.errors import InputError
from expkit.models.description import (
    CATALOG_DIR,
    ModelDescription,
    catalog_names,
    describe_config,
    read_model_config,
)

__all__ = ["CATALOG_DIR", "ModelSpec", "catalog_names", "load_model_spec", "spec_from_dict"]

# Fields without which no count or ledger is possible (named in the error when absent).
_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


@dataclass(frozen=True)
class ModelSpec:
    """The architecture numbers a ledger needs, plus the raw config for transformers.

    ``intermediate_size`` defaults to 4 * hidden (GPT-2 convention) only when the config lacks it; that
    default is named in ``assumed``.
    """

    name: str
    source: str
    model_type: str | None
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool
    raw: dict[str, Any] = field(repr=False, compare=False)
    assumed: tuple[str, ...] = ()
    description: ModelDescription | None = field(default=None, repr=False, compare=False)

    @property
    def desc(self) -> ModelDescription:
        """The per-layer description (built from ``raw`` when the spec was made without one)."""
        if self.description is not None:
            return self.description
        return describe_config(self.raw, name=self.name, source=self.source)

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection output: kv heads * head_dim (GQA-aware)."""
        return self.num_kv_heads * self.head_dim

    def with_layers(self, num_layers: int) -> ModelSpec:
        """The same architecture at another depth (the scaled replicas of the activation fit)."""
        raw = dict(self.raw, num_hidden_layers=num_layers)
        if "layer_types" in raw:
            raw["layer_types"] = list(raw["layer_types"])[:1] * num_layers
        return spec_from_dict(raw, name=f"{self.name}[{num_layers} layers]", source=self.source)


def _int(raw: dict[str, Any], key: str, where: str) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(
            f"{key} must be a positive integer, got {value!r}", path=where, hint="fix the value in config.json"
        )
    return value


def spec_from_dict(raw: dict[str, Any], *, name: str, source: str) -> ModelSpec:
    """Read the architecture numbers from a config dict.

    Raises:
        InputError: a required key is missing or not a positive integer (names the file and the key).
    """
    if not isinstance(raw, dict):
        raise InputError("config is not a JSON object", path=source)
    desc = describe_config(raw, name=name, source=source)
    att = desc.layers[0].attention
    text_raw = raw
    if isinstance(raw.get("text_config"), dict) and "hidden_size" not in raw:
        text_raw = raw["text_config"]
    gqa_given = text_raw.get("num_key_value_heads") or desc.is_encoder_decoder  # T5, BART, Whisper: no GQA field
    assumed = [] if gqa_given else ["num_key_value_heads = num_attention_heads (no GQA)"]
    return ModelSpec(
        name=name,
        source=source,
        model_type=desc.model_type,
        hidden_size=desc.hidden_size,
        num_layers=desc.num_layers,
        num_heads=att.num_heads,
        num_kv_heads=att.num_kv_heads,
        head_dim=att.head_dim,
        intermediate_size=desc.layers[0].mlp.intermediate_size,
        vocab_size=desc.vocab_size,
        tied_embeddings=desc.tied_embeddings,
        qkv_bias=desc.qkv_bias,
        raw=desc.raw,
        assumed=tuple(dict.fromkeys([*assumed, *desc.approximations])),
        description=desc,
    )


def load_model_spec(model: str | Path) -> ModelSpec:
    """A ModelSpec from a catalog name, a model directory, a ``config.json`` path, or a Hub ID whose config
    sits in the local Hugging Face cache (read offline).

    Args:
        model: ``qwen2.5-0.5b`` (see ``catalog_names()``), ``path/to/model_dir``, ``path/to/config.json`` or
            ``org/name``.

    Returns:
        The ModelSpec; ``source`` says where the numbers came from.

    Raises:
        InputError: the file is not JSON or lacks a required key (names the file and the key).
        UsageError: none of these; for an uncached Hub ID the hint is the command that fetches config.json.

    Example:
        >>> load_model_spec("qwen2.5-0.5b").hidden_size
        896
    """
    raw, name, source = read_model_config(model)
    return spec_from_dict(raw, name=name, source=source)
