"""A model's architecture as its ``config.json`` numbers: loaded from a directory, a file or the catalog.

The catalog (``expkit/memory/catalog/*.json``) ships the public config values of a few well-known
models (numbers only, no weights) so ledgers for them need nothing downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expkit.errors import InputError, UsageError

__all__ = ["ModelSpec", "catalog_names", "load_model_spec", "spec_from_dict"]

CATALOG_DIR = Path(__file__).with_name("catalog")

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


def catalog_names() -> list[str]:
    """Names of the shipped configs, e.g. ``qwen2.5-0.5b``."""
    return sorted(p.stem for p in CATALOG_DIR.glob("*.json"))


def _int(raw: dict[str, Any], key: str, where: str) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"{key} must be a positive integer, got {value!r}", path=where,
                         hint="fix the value in config.json")
    return value


def spec_from_dict(raw: dict[str, Any], *, name: str, source: str) -> ModelSpec:
    """Read the architecture numbers from a config dict.

    Raises:
        InputError: a required key is missing or not a positive integer (names the file and the key).
    """
    if not isinstance(raw, dict):
        raise InputError("config is not a JSON object", path=source)
    if "text_config" in raw and "hidden_size" not in raw and isinstance(raw["text_config"], dict):
        raw = {**raw["text_config"], "architectures": raw.get("architectures")}
    for key in _REQUIRED:
        if key not in raw:
            raise InputError(f"missing key {key!r}", path=source,
                             hint=f"a causal LM config.json needs {', '.join(_REQUIRED)}")
    hidden = _int(raw, "hidden_size", source)
    heads = _int(raw, "num_attention_heads", source)
    assumed: list[str] = []
    kv_heads = _int(raw, "num_key_value_heads", source) if raw.get("num_key_value_heads") else heads
    if not raw.get("num_key_value_heads"):
        assumed.append("num_key_value_heads = num_attention_heads (no GQA)")
    head_dim = raw.get("head_dim") or hidden // heads
    if raw.get("intermediate_size"):
        inter = _int(raw, "intermediate_size", source)
    else:
        inter = 4 * hidden
        assumed.append("intermediate_size = 4 * hidden_size (absent from config)")
    model_type = raw.get("model_type")
    # Qwen2 always has a bias on q, k, v (transformers' Qwen2Attention); Llama has attention_bias.
    qkv_bias = bool(raw.get("attention_bias", False)) or model_type == "qwen2"
    return ModelSpec(
        name=name, source=source, model_type=model_type, hidden_size=hidden,
        num_layers=_int(raw, "num_hidden_layers", source), num_heads=heads, num_kv_heads=kv_heads,
        head_dim=int(head_dim), intermediate_size=inter, vocab_size=_int(raw, "vocab_size", source),
        tied_embeddings=bool(raw.get("tie_word_embeddings", False)), qkv_bias=qkv_bias,
        raw={k: v for k, v in raw.items() if not k.startswith("_")}, assumed=tuple(assumed),
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno,
                         hint="config.json must be a JSON object") from exc


def load_model_spec(model: str | Path) -> ModelSpec:
    """A ModelSpec from a catalog name, a model directory, or a ``config.json`` path.

    Args:
        model: ``qwen2.5-0.5b`` (see ``catalog_names()``), ``path/to/model_dir`` or ``path/to/config.json``.

    Returns:
        The ModelSpec; ``source`` says where the numbers came from.

    Raises:
        InputError: the file is not JSON or lacks a required key (names the file and the key).
        UsageError: neither a path nor a catalog name.

    Example:
        >>> load_model_spec("qwen2.5-0.5b").hidden_size
        896
    """
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise InputError("directory has no config.json", path=path.parent,
                             hint="point at a Hugging Face model directory or a config.json")
    if path.is_file():
        return spec_from_dict(_read_json(path), name=path.parent.name or str(path), source=str(path))
    key = str(model).lower().split("/")[-1].removeprefix("meta-")
    key = key.removesuffix("-hf").removesuffix("-instruct")
    cat = CATALOG_DIR / f"{key}.json"
    if cat.is_file():
        raw = _read_json(cat)
        return spec_from_dict(raw, name=key, source=f"catalog:{key} ({raw.get('_source', '')})")
    raise UsageError(f"{model!r} is neither a file, a directory nor a catalog name",
                     hint=f"catalog: {', '.join(catalog_names())}")
