"""Nested configs: the text model of a multimodal config (``text_config``, transformers' defaults filled in),
the towers (``vision_config`` ...), encoder-decoder configs no family reads (refused in one line), and the
fields at the top level or in ``text_config`` that are not modelled (each becomes a note)."""

from __future__ import annotations

from typing import Any

from expkit.errors import InputError
from expkit.models.config_fields import BOUNDS, REQUIRED, unmodelled

__all__ = ["TOWER_KEYS", "field_notes", "refuse_encoder_decoder", "text_part"]

TOWER_KEYS = ("vision_config", "audio_config", "speech_config")
_ENCODER_DECODER_KEYS = ("encoder_layers", "decoder_layers", "encoder", "decoder", "num_decoder_layers")


def refuse_encoder_decoder(raw: dict[str, Any], source: str) -> None:
    """An encoder-decoder model no family reads (T5, mT5, BART, mBART, Pegasus, Marian and Whisper have families):
    one line that says so."""
    keys = [k for k in _ENCODER_DECODER_KEYS if k in raw]
    if raw.get("is_encoder_decoder") or keys:
        why = "is_encoder_decoder" if raw.get("is_encoder_decoder") else ", ".join(keys)
        raise InputError(
            f"encoder-decoder model ({raw.get('model_type') or 'model_type not given'}, {why}): not modelled; "
            "of the encoder-decoders expkit reads T5, mT5, BART, mBART, Pegasus, Marian and Whisper "
            "(models/families/)",
            path=source,
            hint="a family module for this model_type adds it (docs/architecture.md, 'a model family')",
        )


def text_part(raw: dict[str, Any], cfg: Any, notes: list[str] | None = None) -> dict[str, Any]:
    """The text model's fields: ``text_config`` of a multimodal config, where transformers' text config
    class supplies the fields it leaves out (as transformers builds the model; each one noted). With ``cfg``,
    a common field the file spells otherwise is read under its common name: transformers' own aliases
    (``attribute_map``: DBRX's ``d_model`` is ``hidden_size``) and the family's ``standard_fields`` (DBRX's
    ``attn_config.kv_n_heads``, LFM2's adjusted MLP width)."""
    from expkit.models.families import family_of  # the families import this package's modules

    nested = isinstance(raw.get("text_config"), dict) and "hidden_size" not in raw
    if not nested and cfg is None:
        return raw
    text_raw = {**raw["text_config"], "architectures": raw.get("architectures")} if nested else dict(raw)
    if cfg is None:
        return text_raw
    aliases = getattr(type(cfg), "attribute_map", None) or {}
    for k in (*REQUIRED, *BOUNDS):
        if k in text_raw or not (nested or k in aliases):
            continue
        v = getattr(cfg, k, None)
        if isinstance(v, int) and not isinstance(v, bool):
            text_raw[k] = v
            if notes is not None and nested and k in REQUIRED:
                notes.append(f"text_config.{k} = {v} from transformers' {type(cfg).__name__} default")
    family = family_of(raw.get("model_type") if isinstance(raw.get("model_type"), str) else None)
    if family.standard_fields is not None:
        text_raw.update(family.standard_fields(cfg, text_raw))
    return text_raw


def field_notes(raw: dict[str, Any], towers: tuple[str, ...]) -> list[str]:
    """Unmodelled fields at the top level and in ``text_config``, and what the towers leave out."""
    notes = unmodelled(raw, "")
    if isinstance(raw.get("text_config"), dict):
        notes += unmodelled(raw["text_config"], "text_config.")
    for t in towers:
        notes.append(
            f"{t} tower: its parameters are counted (the transformers class builds it); its activations, "
            "cache and FLOPs are not in the ledger or the roofline"
        )
    mtp = raw.get("num_nextn_predict_layers") or raw.get("num_mtp_layers")
    if mtp:
        notes.append(
            f"num_nextn_predict_layers = {mtp}: the multi-token-prediction module is not built by "
            "transformers and is not counted (DeepSeek-V3: 671B without it, 685B with it)"
        )
    if "auto_map" in raw:
        notes.append("auto_map (remote code) is not run: the transformers class of the model_type is used")
    return notes
