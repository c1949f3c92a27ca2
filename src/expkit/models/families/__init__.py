"""Model families, one module each, and which one a config belongs to.

Each module registers one ``Family`` (``registry.Family``): the model types and architectures it reads, the
config fields it models and how its layers are built. ``family_of(model_type)`` is the only place a model type
is looked at; any type no module registers is read as the Llama-like family. Adding a family is one module
here (imported below) and one test.

Which model a config describes is decided once, before anything is read: its ``model_type``, or, when
transformers does not know that name, the class named in ``architectures`` (renamed copies such as Kimi-K2's
``kimi_k2`` with ``DeepseekV3ForCausalLM``). The KV cache, the parameter count and the roofline all read the
one description built from that decision."""

from __future__ import annotations

import re
from typing import Any

from expkit.models.families import (  # noqa: F401  (each module registers its family)
    bamba,
    bart,
    dbrx,
    deepseek,
    ernie,
    falcon_h1,
    gemma3,
    gemma3n,
    gpt_oss,
    granite_hybrid,
    jamba,
    lfm2,
    llama4,
    mamba2,
    marian,
    mbart,
    pegasus,
    plain_mlp,
    qwen,
    qwen3_next,
    t5,
    whisper,
    zamba2,
)
from expkit.models.families.registry import (
    LLAMA_LIKE,
    Family,
    Stacks,
    family_of,
    model_type_of_architecture,
    modeled_fields,
    registered,
)

__all__ = [
    "LLAMA_LIKE",
    "Family",
    "Stacks",
    "family_of",
    "known_model_type",
    "modeled_fields",
    "registered",
    "resolve_model_type",
]


def _transformers_maps() -> tuple[set[str], dict[str, str]] | None:
    """(model_types transformers knows, architecture class name -> model_type), None without transformers."""
    try:
        from transformers.models.auto import configuration_auto, modeling_auto
    except ImportError:
        return None
    config_names = configuration_auto.CONFIG_MAPPING_NAMES
    by_config = {cfg: model_type for model_type, cfg in config_names.items()}
    by_class: dict[str, str] = {}
    for name in dir(modeling_auto):
        mapping = getattr(modeling_auto, name)
        if not (name.endswith("_MAPPING_NAMES") and isinstance(mapping, dict)):
            continue
        for model_type, classes in mapping.items():
            for cls in classes if isinstance(classes, (list, tuple)) else (classes,):
                if isinstance(cls, str):
                    by_class.setdefault(cls, model_type)
    for cls in by_class:  # several model_types share a class (LlamaForCausalLM): the one of its own config
        own = by_config.get(re.split(r"For[A-Z]|Model$", cls, maxsplit=1)[0] + "Config")
        if own is not None:
            by_class[cls] = own
    return set(config_names), by_class


def known_model_type(model_type: Any) -> bool:
    """Whether the installed transformers has a config class for ``model_type``."""
    maps = _transformers_maps()
    return maps is not None and isinstance(model_type, str) and model_type in maps[0]


def resolve_model_type(raw: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``raw`` with ``model_type`` set to the one transformers builds, and a note when it was changed.

    A ``model_type`` transformers knows is kept. Otherwise the first entry of ``architectures`` that is a
    transformers model class gives the model_type of that class (``DeepseekV3ForCausalLM`` -> ``deepseek_v3``),
    as the checkpoint's own ``architectures`` says how it is loaded. Without a match ``raw`` is returned as it is.

    Example:
        >>> r, note = resolve_model_type({"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"]})
        >>> r["model_type"]
        'deepseek_v3'
    """
    maps = _transformers_maps()
    model_type = raw.get("model_type")
    if maps is None or (isinstance(model_type, str) and model_type in maps[0]):
        return raw, None
    archs = raw.get("architectures")
    for arch in archs if isinstance(archs, list) else ():
        if not isinstance(arch, str):
            continue
        resolved = maps[1].get(arch) or model_type_of_architecture(arch)
        if resolved is not None and resolved in maps[0]:
            note = (
                f"model_type {model_type!r} is not a transformers model type; architectures {arch!r} is: "
                f"read as model_type {resolved!r}"
            )
            return {**raw, "model_type": resolved}, note
    return raw, None
