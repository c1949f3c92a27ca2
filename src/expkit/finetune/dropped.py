"""What a chat template leaves out of an assistant turn: compare what went in with what was rendered.

Each field of an assistant turn (a tool call's name and arguments, ``reasoning_content``, the ``<think>`` block
inside ``content``) is replaced in turn by a sentinel and the conversation rendered again: a sentinel that does
not appear in the render is a field the template drops (Granite 3.x, SmolLM2, OLMo-2 and Phi-4-mini render a
tool-call turn as its end of turn alone; Qwen3 strips the reasoning of turns before the last user message; QwQ
strips earlier ``<think>`` blocks). The sentinel is compared, not the value, so any formatting the template
applies (JSON spacing, trimming) is not mistaken for a drop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DroppedField", "family_of", "find_dropped_fields", "rendered_messages"]

Render = Callable[[Sequence[dict[str, Any]]], str]


@dataclass(frozen=True)
class DroppedField:
    """``field`` of assistant message ``turn`` (0-based index in the conversation) is not in the render."""

    turn: int
    field: str


# distinctive markers of the chat families, first match wins (for naming a family in messages only)
_FAMILIES = (
    ("<|START_OF_TURN_TOKEN|>", "Command-R/Cohere"),
    ("<|start_header_id|>", "Llama 3"),
    ("<|header_start|>", "Llama 4"),
    ("<|start_of_role|>", "Granite"),
    ("<|channel|>", "gpt-oss"),
    ("[SYSTEM_PROMPT]", "Mistral (v7)"),
    ("[INST]", "Mistral/Llama 2"),
    ("<start_of_turn>", "Gemma"),
    ("<\uff5cAssistant\uff5c>", "DeepSeek"),
    ("<|im_sep|>", "Phi-4"),
    ("<|im_start|>", "ChatML (Qwen, SmolLM, Hermes)"),
    ("<|end|>", "Phi-3/Phi-4-mini"),
    ("<|assistant|>", "Tulu (OLMo 2, Zephyr)"),
)


def family_of(template: str) -> str:
    """A readable name of the chat family a template belongs to, from its markers ("unknown family" if none)."""
    return next((name for marker, name in _FAMILIES if marker in template), "unknown family")


def _think_split(content: str) -> tuple[str, str] | None:
    """(reasoning, answer) of a content that carries a ``<think>...</think>`` block, else None."""
    if "</think>" not in content:
        return None
    head, answer = content.split("</think>", 1)
    return head.split("<think>")[-1], answer


def _variants(msg: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(field, the message with that field replaced by a sentinel, the sentinel) for each checkable field."""
    out = []
    for k, call in enumerate(msg.get("tool_calls") or []):
        fn = dict(call.get("function") or {})
        name = f"Zq{k}nameQ"
        out.append((f"tool_calls[{k}].function.name", _with_call(msg, k, {**fn, "name": name}), name))
        args = fn.get("arguments")
        if args:
            value = f"Zq{k}argQ"
            new: Any = {"zq": value} if isinstance(args, dict) else json.dumps({"zq": value})
            out.append((f"tool_calls[{k}].function.arguments", _with_call(msg, k, {**fn, "arguments": new}), value))
    if isinstance(msg.get("reasoning_content"), str) and msg["reasoning_content"].strip():
        out.append(("reasoning_content", {**msg, "reasoning_content": "ZqreasonQ"}, "ZqreasonQ"))
    content = msg.get("content")
    if isinstance(content, str) and _think_split(content) is not None:
        out.append(
            ("content's <think> block", {**msg, "content": "<think>\nZqthinkQ\n</think>\n\nZqanswerQ"}, "ZqthinkQ")
        )
    return out


def _with_call(msg: dict[str, Any], k: int, fn: dict[str, Any]) -> dict[str, Any]:
    calls = [dict(c) for c in msg["tool_calls"]]
    calls[k] = {**calls[k], "function": fn}
    return {**msg, "tool_calls": calls}


def find_dropped_fields(render: Render, messages: Sequence[dict[str, Any]], turns: Sequence[int]) -> list[DroppedField]:
    """The fields of the assistant messages ``turns`` that ``render`` leaves out (see the module docstring).

    A variant the template refuses to render (it raises) is not counted as a drop.
    """
    found = []
    for i in turns:
        for field, changed, sentinel in _variants(dict(messages[i])):
            swapped = [dict(m) for m in messages]
            swapped[i] = changed
            try:
                text = render(swapped)
            except Exception:  # noqa: BLE001 - the template rejects the sentinel value: no verdict on this field
                continue
            if sentinel not in text:
                found.append(DroppedField(i, field))
    return found


def rendered_messages(messages: Sequence[dict[str, Any]], dropped: Sequence[DroppedField]) -> list[dict[str, Any]]:
    """The conversation as the template renders it: a turn whose ``<think>`` block is dropped keeps its answer only,
    so that its span can be located (the drop itself is reported, not hidden)."""
    out = [dict(m) for m in messages]
    for d in dropped:
        if d.field == "content's <think> block":
            split = _think_split(out[d.turn]["content"])
            if split is not None:
                out[d.turn]["content"] = split[1].lstrip("\n")
    return out
