"""Earlier assistant turns that a chat template renders otherwise in history than as the last turn, and what
training does with them.

Qwen3 strips the reasoning of every assistant turn before the last user message and opens only the last turn
with a think block; Nemotron Nano v2 opens only the last one with ``<think>\\n``; QwQ and DeepSeek-R1 strip
``<think>`` blocks from every turn. At inference the model writes turn ``i`` as the last turn: after the
generation prompt ``render(messages[:i], add_generation_prompt=True)`` it generates what ``render(messages[:i + 1])``
adds there. Training the text the template renders for that turn in history teaches another output (Qwen3: an
answer with no think block) for a context the model never sees (earlier reasoning is gone from it too).

expkit trains such a turn the way Qwen's maintainers recommend for multi-turn reasoning data
(QwenLM/Qwen3 discussion #1398: split ``[Q1, T1, A1, Q2, T2, A2]`` into ``[Q1, T1, A1]`` and ``[Q1, A1, Q2, T2, A2]``):
in a row of its own, the conversation up to it rendered as inference renders it, that turn alone trained; the
row of the whole conversation leaves it masked. Training text and generation prompt then agree for every turn,
earlier ones included. TRL (``--match trl``) does otherwise: its training templates render the think block in
every turn (``qwen3_training.jinja``: "always include the thinking block regardless of message position", for
prefix preservation), so each turn is trained as generated, but later turns see earlier reasoning in their context,
which inference removes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from expkit.finetune.spans import DerivedSpans, Render

__all__ = ["HistoryTurn", "find_history_turns", "generated_text"]


@dataclass(frozen=True)
class HistoryTurn:
    """Assistant message ``turn``: ``in_history`` is the text of its span in the whole conversation's render,
    ``as_last`` what the model generates for it after the generation prompt; the two differ, or ``unprompted`` is
    the end of the generation prompt that the whole render lacks before the turn."""

    turn: int
    in_history: str
    as_last: str
    unprompted: str = ""


def generated_text(
    render: Render, messages: Sequence[Mapping[str, Any]], turn: int, end_of_turn_strings: Sequence[str]
) -> str | None:
    """What the model generates for assistant message ``turn`` as the last turn: the text
    ``render(messages[:turn + 1])`` adds after ``render(messages[:turn], add_generation_prompt=True)``, through the
    first end-of-turn string (None: that render does not continue the prompt, or renders no end of turn).

    Example:
        >>> chatml = lambda ms, add_generation_prompt=False: "".join(
        ...     f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in ms
        ... ) + ("<|im_start|>assistant\\n" if add_generation_prompt else "")
        >>> generated_text(chatml, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], 1,
        ...                ["<|im_end|>"])
        'ok<|im_end|>'
    """
    ask = render(messages[:turn], add_generation_prompt=True)
    last = render(messages[: turn + 1])
    if not last.startswith(ask):
        return None
    ends = [(p, e) for e in end_of_turn_strings if (p := last.find(e, len(ask))) >= 0]
    if not ends:
        return None
    p, e = min(ends)
    return last[len(ask) : p + len(e)]


def find_history_turns(
    render: Render,
    messages: Sequence[Mapping[str, Any]],
    derived: DerivedSpans,
    end_of_turn_strings: Sequence[str],
    *,
    as_last_messages: Any = None,
) -> list[HistoryTurn]:
    """The spans of ``derived`` before the last whose trained text is not what the model generates for that turn
    as the last turn (``generated_text``), or that do not follow the generation prompt in the whole render
    (``TurnSpan.unprompted``); turns whose render as the last turn does not continue the prompt either are left as
    they are (no render agrees with inference to train instead).

    Args:
        render: messages -> the rendered chat, as for ``derive_assistant_spans``.
        messages: the conversation ``derived`` was derived from.
        derived: its spans.
        end_of_turn_strings: as for ``derive_assistant_spans``.
        as_last_messages: turn -> the conversation up to that turn as it is rendered when that turn is the last
            (fields the template drops there already handled); default ``messages[:turn + 1]``.
    """
    out = []
    for s in derived.spans[:-1]:
        row = as_last_messages(s.turn) if as_last_messages is not None else list(messages[: s.turn + 1])
        try:
            as_last = generated_text(render, row, s.turn, end_of_turn_strings)
        except Exception:  # noqa: BLE001 - a template that cannot end a conversation on this turn: leave it in place
            continue
        in_history = derived.text[s.start : s.end]
        # a turn whose render does not continue the generation prompt (Nemotron Nano v2's history lacks the
        # prompt's "<think>\n") is trained after a context inference never shows, even when its text is the same
        if as_last is not None and (as_last != in_history or s.unprompted):
            out.append(HistoryTurn(s.turn, in_history, as_last, s.unprompted))
    return out
