"""The stop-token contract: the end-of-turn token the model was trained to emit must be one of
``generation_config.eos_token_id``, or ``generate()`` runs past the answer even when the model stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.finetune.labels import EndOfTurn

__all__ = ["StopContract", "enforce_stop_contract", "read_stop_contract"]


@dataclass(frozen=True)
class StopContract:
    """``eos_ids_before``: ``generation_config.eos_token_id`` as found; ``eos_ids_after``: as saved.

    ``ok`` is True when the end-of-turn id is among the saved eos ids.
    """

    end_of_turn: EndOfTurn
    eos_ids_before: tuple[int, ...]
    eos_ids_after: tuple[int, ...]
    fixed: bool
    ok: bool


def _as_ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def enforce_stop_contract(generation_config: Any, *, end_of_turn: EndOfTurn, fix: bool = True) -> StopContract:
    """Check (and with ``fix`` repair, in place) ``generation_config.eos_token_id``.

    The end-of-turn id is put first and the old ids kept, so a base model's ``<|endoftext|>`` still stops.

    Example:
        >>> enforce_stop_contract(model.generation_config, end_of_turn=EndOfTurn("<|im_end|>", 2)).eos_ids_after
        (2, 0)
    """
    before = _as_ids(generation_config.eos_token_id)
    after = before
    fixed = False
    if end_of_turn.id not in before and fix:
        after = (end_of_turn.id, *before)
        generation_config.eos_token_id = list(after)
        fixed = True
    return StopContract(
        end_of_turn=end_of_turn, eos_ids_before=before, eos_ids_after=after, fixed=fixed, ok=end_of_turn.id in after
    )


def read_stop_contract(directory: str | Path, *, end_of_turn: EndOfTurn) -> StopContract:
    """The contract as saved in ``directory/generation_config.json`` (a model or an adapter directory).

    A directory without ``generation_config.json`` has no eos ids: ``ok`` is False.
    """
    from transformers import GenerationConfig

    p = Path(directory)
    ids: tuple[int, ...] = ()
    if (p / "generation_config.json").is_file():
        ids = _as_ids(GenerationConfig.from_pretrained(p).eos_token_id)
    return StopContract(
        end_of_turn=end_of_turn, eos_ids_before=ids, eos_ids_after=ids, fixed=False, ok=end_of_turn.id in ids
    )
