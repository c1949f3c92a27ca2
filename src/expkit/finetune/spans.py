"""Where each assistant turn sits in a rendered chat, found without ``{% generation %}`` markers and without
assuming the template renders turns as prefixes of each other.

For assistant turn ``i`` the conversation is rendered twice, once as is and once with that turn's content
replaced by a sentinel; the text before the sentinel is a prefix of the real render and the text after it a
suffix, so the real content lies between them (templates that drop reasoning from history, or render a
system prompt only when a later turn exists, still agree on the text around one turn). The trained span of
the turn is expkit's default convention: everything the model must generate after the generation prompt - what
the template renders between the end of ``render(messages[:i], add_generation_prompt=True)`` and the content
(GLM-4's newline after ``<|assistant|>``, gpt-oss' ``<|channel|>final<|message|>``, Qwen3's empty think block),
the content, what it renders between the content and the end of turn (tool calls), and the family's own
end-of-turn token; nothing after the token. Where the training render does not continue the generation prompt
(DeepSeek-V3's prompt opens ``<think>\n``, which its rendered turns never contain), the span starts at the
content and ``TurnSpan.unprompted`` names the prompt text the model is asked to continue at inference but is
never shown in training.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from expkit.errors import InputError

__all__ = [
    "END_OF_TURN_STRINGS",
    "DerivedSpans",
    "TurnSpan",
    "derive_assistant_spans",
    "strip_generation_markers",
]

Message = Mapping[str, Any]


class Render(Protocol):
    """messages -> the rendered chat (``tokenizer.apply_chat_template(m, tokenize=False, ...)``)."""

    def __call__(self, messages: Sequence[Message], *, add_generation_prompt: bool = False) -> str: ...


# The end-of-turn strings of the chat families, read from each family's chat template (TRL 1.16's
# trl/chat_templates/*.jinja and the fixtures in tests/finetune/families/): the first of them rendered after an
# assistant's content closes the turn. Order does not matter; the earliest occurrence wins.
END_OF_TURN_STRINGS: tuple[str, ...] = (
    "<|im_end|>",  # ChatML: Qwen2.5/3, SmolLM3, LFM2, Nemotron 3, Phi-4
    "<|eot_id|>",  # Llama 3.x
    "<|eot|>",  # Llama 4, Muse Glimmer
    "<end_of_turn>",  # Gemma 1-3
    "<turn|>",  # Gemma 4, DiffusionGemma
    "<|return|>",  # gpt-oss: the final message of a conversation
    "<|call|>",  # gpt-oss: a tool call
    "<|end|>",  # gpt-oss (a message in history), Phi-3/3.5
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek-V3, R1 and its distills (fullwidth bars)
    "<|END_OF_TURN_TOKEN|>",  # Cohere, Cohere2
    "<end_of_utterance>",  # Idefics3, SmolVLM
    "<|tool_response>",  # Gemma 4: a tool call ends the model's turn (<tool_call|> then the response opens)
    "<|end_of_text|>",  # Granite 3.x (ibm-granite/granite-3.3-2b-instruct)
    "</s>",  # Mistral (v3, tekken), Llama 2
    "<|user|>",  # GLM-4: generation stops at the next role header (its generation_config eos list)
    "<|observation|>",  # GLM-4: after a tool call
    "<seed:eos>",  # Seed-OSS (llama.cpp's ByteDance-Seed-OSS.jinja)
    "<SPECIAL_12>",  # Nemotron Nano v2 (llama.cpp's NVIDIA-Nemotron-Nano-v2.jinja): "\n<SPECIAL_12>\n" closes a turn
)

_MARKER = re.compile(r"\{%(-?)\s*(end)?generation\s*(-?)%\}")


def strip_generation_markers(template: str) -> str:
    """The template with ``{% generation %}``/``{% endgeneration %}`` turned into a no-op block (whitespace
    control kept), so it renders exactly the same text without telling anyone what to train."""
    return _MARKER.sub(lambda m: "{%" + m[1] + (" endif " if m[2] else " if true ") + m[3] + "%}", template)


@dataclass(frozen=True)
class TurnSpan:
    """One assistant turn in the rendered text (character offsets, end exclusive).

    ``start``: the start of the trained span (the end of the generation prompt when the render continues it, else
    ``content_start``). ``content_start``/``content_end``: the message content as rendered. ``end``: the end of the
    trained span (just after ``end_of_turn``). ``unprompted``: the text the generation prompt ends with that the
    training render does not have before this turn's content ("": it has it).
    ``appended``: the template renders no end of turn after this (final) turn, so
    ``end_of_turn`` - the one it renders after the same turn when a user turn follows - was appended to the text.
    """

    turn: int
    start: int
    content_start: int
    content_end: int
    end: int
    end_of_turn: str
    appended: bool = False
    unprompted: str = ""


@dataclass(frozen=True)
class DerivedSpans:
    """The text to train on (the render, plus an appended end of turn where the template renders none) and the
    assistant spans in it."""

    text: str
    spans: tuple[TurnSpan, ...]

    def trained_chars(self) -> list[bool]:
        """Per character of ``text``: inside a trained span."""
        mask = [False] * len(self.text)
        for s in self.spans:
            mask[s.start : s.end] = [True] * (s.end - s.start)
        return mask


def _with_content(messages: Sequence[Message], i: int, value: str) -> list[dict[str, Any]]:
    out = [dict(m) for m in messages]
    content = out[i].get("content")
    if isinstance(content, list):  # multimodal blocks: one text block carries the sentinel
        out[i]["content"] = [{"type": "text", "text": value}]
    else:
        out[i]["content"] = value
    return out


def _locate(render: Render, messages: Sequence[Message], full: str, i: int) -> tuple[int, int] | None:
    """(start, end) of message ``i``'s content in ``full``, or None when the template does not render it once."""
    sentinel = f"Zq{i}xQ7k"
    alt = render(_with_content(messages, i, sentinel))
    if alt.count(sentinel) != 1:
        return None
    pos = alt.index(sentinel)
    before, after = alt[:pos], alt[pos + len(sentinel) :]
    if not (full.startswith(before) and full.endswith(after)):
        return None
    start, end = len(before), len(full) - len(after)
    if end < start:  # empty content: the text around it overlaps (e.g. a newline rendered only with content)
        end = start
    return start, end


def _tool_call_start(render: Render, messages: Sequence[Message], full: str, i: int) -> tuple[int, int] | None:
    """Where a tool-call turn with empty content starts: right after the generation prompt rendered for the turns
    before it, when the full render starts with that prompt (a template may drop the empty content, or render it
    after the tool responses as Gemma 4 does, so the content is no anchor)."""
    if not messages[i].get("tool_calls") or messages[i].get("content"):
        return None
    try:
        ask = render(messages[:i], add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - a template that cannot end on this turn: the turn is not located
        return None
    if not full.startswith(ask):
        return None
    return len(ask), len(ask)


def _after_prompt(
    render: Render,
    messages: Sequence[Message],
    full: str,
    i: int,
    content: tuple[int, int],
    prev: tuple[int, int] | None,
) -> tuple[int, str]:
    """(start of turn ``i``'s trained span, the generation prompt's text the render lacks before the content).

    The render continues the generation prompt when ``render(messages[:i], add_generation_prompt=True)`` is a
    prefix of it; a template that renders the history differently (Mistral moves the system prompt) still
    continues it when the prompt's text after the previous message's content is what the render has there. A
    prompt that supplies the start of the content (QwQ's ``<think>\n``, which the content opens with) is continued:
    the span starts after it, so what the prompt gives is not trained."""
    content_start, content_end = content
    try:
        ask = render(messages[:i], add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - a template that cannot end on this turn: train from the content
        return content_start, ""
    if full.startswith(ask) and len(ask) <= max(content_start, content_end):
        return len(ask), ""
    before = messages[i - 1].get("content") if i else None
    if prev is None or not isinstance(before, str) or not before or before not in ask:
        return content_start, ""
    tail = ask[ask.rindex(before) + len(before) :]
    here = full[prev[1] : content_start]
    if here.startswith(tail):
        return prev[1] + len(tail), ""
    same = 0
    while same < min(len(tail), len(here)) and tail[same] == here[same]:
        same += 1
    return content_start, tail[same:]


def _first_end_of_turn(text: str, start: int, stop: int, ends: Sequence[str]) -> tuple[int, str] | None:
    found = [(p, e) for e in ends if (p := text.find(e, start, stop)) >= 0 and p + len(e) <= stop]
    return min(found) if found else None


def _end_after_final_turn(
    render: Render, messages: Sequence[Message], i: int, ends: Sequence[str]
) -> tuple[int, str] | None:
    """The end of turn the template renders after turn ``i`` when a user turn follows it."""
    follow = "Zq_next_xQ7k"
    longer = [*(dict(m) for m in messages[: i + 1]), {"role": "user", "content": follow}]
    text = render(longer)
    where = _locate(render, longer, text, i)
    if where is None or follow not in text:
        return None
    return _first_end_of_turn(text, where[1], text.index(follow), ends)


def derive_assistant_spans(
    render: Render,
    messages: Sequence[Message],
    *,
    end_of_turn_strings: Sequence[str] = END_OF_TURN_STRINGS,
    only_last: bool = False,
) -> DerivedSpans:
    """The assistant spans of one conversation under expkit's strict convention (see the module docstring).

    Args:
        render: messages -> the rendered chat (``tokenizer.apply_chat_template(m, tokenize=False)``).
        messages: the conversation (role/content dicts; ``tool_calls`` and multimodal content are passed through).
        end_of_turn_strings: what may close an assistant turn; the earliest one after the content wins.
        only_last: derive the last assistant turn only (``--loss completion``).

    Returns:
        DerivedSpans: the text (the render, plus the end of turn when the template renders none after the final
        turn but does after the same turn in history) and one TurnSpan per assistant turn.

    Raises:
        InputError: an assistant turn whose content the template does not render exactly once, or after which it
            never renders an end of turn (reason named).

    Example:
        >>> chatml = lambda ms: "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in ms)
        >>> derive_assistant_spans(chatml, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}])
        DerivedSpans(text='<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\nok<|im_end|>\\n', ...
    """
    full = render(messages)
    turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if only_last and turns:
        turns = turns[-1:]
    located = {}
    for i in range(len(messages)):
        if i in turns or (i - 1) in turns:
            located[i] = _locate(render, messages, full, i)
        elif (i + 1) in turns:  # the message before a turn: where the generation prompt's tail starts, if found
            try:
                located[i] = _locate(render, messages, full, i)
            except Exception:  # noqa: BLE001 - a template that rejects this message with sentinel content
                located[i] = None
    spans, appended = [], ""
    for i in turns:
        where = _tool_call_start(render, messages, full, i) or located[i]
        if where is None:
            raise InputError(
                f"the chat template does not render assistant turn {i}'s content exactly once, unchanged, so its "
                "span cannot be located",
                hint="check that the template renders message['content'] of every assistant turn",
            )
        start, unprompted = _after_prompt(render, messages, full, i, where, located.get(i - 1))
        nxt = located.get(i + 1)
        stop = nxt[0] if nxt is not None else len(full)
        hit = _first_end_of_turn(full, where[1], stop, end_of_turn_strings)
        if hit is not None:
            spans.append(TurnSpan(i, start, where[0], where[1], hit[0] + len(hit[1]), hit[1], unprompted=unprompted))
            continue
        tail = _end_after_final_turn(render, messages, i, end_of_turn_strings) if i == len(messages) - 1 else None
        if tail is None or full[where[1] :].strip():
            raise InputError(
                f"the chat template renders no end-of-turn token after assistant turn {i} (looked for "
                f"{', '.join(end_of_turn_strings)}): a model trained on it cannot learn to stop",
                hint="end assistant turns with the family's end-of-turn token in the template",
            )
        appended = tail[1]
        spans.append(
            TurnSpan(i, start, where[0], where[1], len(full) + len(appended), appended, True, unprompted=unprompted)
        )
    return DerivedSpans(text=full + appended, spans=tuple(spans))
