"""A local model directory (``config.json``, ``*.safetensors``, tokenizer) read with errors that name the
file: a broken directory is the user's input, so it is an ``InputError`` (exit 2), never a traceback from
deep inside transformers or safetensors."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

from expkit.errors import InputError

__all__ = [
    "check_model_dir",
    "estimated_parameters",
    "load_causal_lm",
    "safetensors_header",
]

# A config describing 10x more parameters than its safetensors files hold does not belong to them (4-bit
# weights pack 2 values per stored byte: a factor of 2, not 10).
_SIZE_MISMATCH = 10
# The safetensors header is JSON behind an 8-byte little-endian length; the format caps it at 100 MB.
_MAX_HEADER_BYTES = 100 * 10**6


def _read_local_config(model_dir: str | Path) -> dict[str, Any]:
    """``model_dir/config.json`` as a dict, read by ``expkit.models.read_model_config`` (the one reader),
    after checking that ``model_dir`` is a local directory holding one, and that its heads divide its width.

    Raises:
        InputError: no directory, no config.json, what ``read_model_config`` refuses (too large, not UTF-8,
            not JSON, not an object), or a hidden size that its attention heads do not divide.
    """
    from expkit.models import read_model_config

    d = Path(model_dir)
    if not d.is_dir():
        raise InputError(
            "model directory not found",
            path=d,
            hint="give a local checkpoint directory (`expkit sft demo-model --out DIR` builds one)",
        )
    p = d / "config.json"
    if not p.is_file():
        raise InputError(
            "no config.json in the model directory", path=d, hint="save the model with model.save_pretrained(DIR)"
        )
    cfg, _name, _source = read_model_config(p)
    hidden, heads = cfg.get("hidden_size"), cfg.get("num_attention_heads")
    if (
        isinstance(hidden, int)
        and isinstance(heads, int)
        and not isinstance(hidden, bool)
        and (heads <= 0 or hidden <= 0 or hidden % heads)
    ):
        raise InputError(
            f"hidden_size={hidden} is not divisible by num_attention_heads={heads}",
            path=p,
            hint="each attention head takes hidden_size / num_attention_heads dimensions",
        )
    return cfg


def safetensors_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of a ``.safetensors`` file (tensor name -> dtype, shape, offsets), read without torch.

    Raises:
        InputError: a file too short, a header length past the file's end, or a header that is not JSON.
    """
    p = Path(path)
    size = p.stat().st_size
    with p.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise InputError(f"{p.name} is {size} bytes: too short for a safetensors file", path=p)
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, _MAX_HEADER_BYTES):
            raise InputError(
                f"{p.name} is not a safetensors file (its header length {n:,} is past the end of "
                f"the {size:,}-byte file)",
                path=p,
                hint="the file is truncated or not model weights",
            )
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise InputError(
            f"{p.name} is not a safetensors file (its header is not JSON)",
            path=p,
            hint="the file is corrupt or not model weights",
        ) from None
    if not isinstance(header, dict):
        raise InputError(f"{p.name} is not a safetensors file (its header is not an object)", path=p)
    return header


def check_model_dir(model_dir: str | Path) -> dict[str, Any]:
    """Read config.json and every safetensors header before transformers touches the directory.

    Returns:
        the config dict.

    Raises:
        InputError: as ``expkit.models.read_model_config`` and ``safetensors_header``; a config that describes far more
            parameters than the weights hold; a config transformers refuses.
    """
    cfg = _read_local_config(model_dir)
    stored = 0
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        header = safetensors_header(f)
        stored += sum(
            math.prod(t["shape"])
            for name, t in header.items()
            if name != "__metadata__"
            and isinstance(t, dict)
            and isinstance(t.get("shape"), list)
            and all(isinstance(n, int) for n in t["shape"])
        )
    described = estimated_parameters(cfg)
    if stored and described is not None and described > _SIZE_MISMATCH * stored + 10**6:
        raise InputError(
            f"config.json describes a model of ~{described:,} parameters but the weights hold {stored:,} values",
            path=Path(model_dir) / "config.json",
            hint="the config does not belong to these weights (or its sizes were edited)",
        )
    _check_with_transformers(Path(model_dir))
    return cfg


def estimated_parameters(cfg: dict[str, Any]) -> int | None:
    """A rough dense-decoder count from config.json: embeddings + per layer 4 h^2 (attention) + 3 h i
    (gated MLP). None when a size is missing. Only used to catch a config that does not match its
    weights by an order of magnitude, so GQA, biases and MoE routing are left out on purpose.
    """

    def size(key: str) -> int | None:
        v = cfg.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    h, layers, vocab = size("hidden_size"), size("num_hidden_layers"), size("vocab_size")
    if h is None or layers is None or vocab is None:
        return None
    inter = size("intermediate_size") or 4 * h
    return vocab * h + layers * (4 * h * h + 3 * h * inter)


def _check_with_transformers(d: Path) -> None:
    """transformers' own validation of config.json (layer types, rope parameters ...), named."""
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(d)
    except Exception as exc:  # noqa: BLE001 - any refusal here is about the user's config.json
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise InputError(
            f"transformers refuses config.json ({type(exc).__name__}: {first})", path=d / "config.json"
        ) from None


def load_causal_lm(model_dir: str | Path, *, dtype: str = "float32") -> Any:
    """``AutoModelForCausalLM.from_pretrained(model_dir)`` after ``check_model_dir``.

    Raises:
        InputError: as ``check_model_dir``, or whatever transformers refuses in the directory (named).
    """
    from transformers import AutoModelForCausalLM

    d = Path(model_dir)
    check_model_dir(d)
    try:
        return AutoModelForCausalLM.from_pretrained(d, dtype=dtype)
    except Exception as exc:  # noqa: BLE001 - any refusal inside from_pretrained is about the user's files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"transformers cannot load the model ({type(exc).__name__}: {first[:300]})",
            path=d,
            hint="check config.json and the weights; the directory must load with "
            "AutoModelForCausalLM.from_pretrained(DIR)",
        ) from None
