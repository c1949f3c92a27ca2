"""expkit's trained spans next to TRL's: where they differ, and by which named rule.

TRL's trained spans are the ``{% generation %}`` blocks of its training template (``assistant_only_loss``);
expkit's are ``spans.derive_assistant_spans`` on the template the user has (markers removed). Both texts can
differ (TRL swaps in its own template, e.g. one that keeps an empty think block in history), so turns are
compared around their content, not by offset.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from expkit.finetune.spans import END_OF_TURN_STRINGS, DerivedSpans, derive_assistant_spans, strip_generation_markers

__all__ = [
    "RULES",
    "Convention",
    "SpanDifference",
    "TrlDifferences",
    "TurnComparison",
    "compare_dataset_with_trl",
    "compare_with_trl",
    "render_template",
    "trl_spans",
    "trl_training_template",
]

Convention = Literal["expkit", "trl"]

# The named rules a difference is filed under (what TRL trains that expkit does not, or the reverse).
RULES: dict[str, str] = {
    "trailing newline after end-of-turn": "the whitespace the template renders after the end-of-turn token",
    "token after end-of-turn": "a token after the end of turn (Phi-3's eos, GLM-4's appended <|user|>)",
    "empty think block": "the <think></think> block the template (or the generation prompt) opens",
    "role header": "the assistant header before the content (<|start|>assistant<|channel|>final<|message|>)",
    "after generation prompt": "what the template renders between the generation prompt and the content (Gemma 4's "
    "<|turn>model\\n after a tool response, GLM-4's newline after <|assistant|>): the model must emit it, expkit "
    "trains it and TRL's markers leave it out",
    "generation prompt not in training render": "the generation prompt ends with text the rendered turn lacks "
    "before the content (DeepSeek's <think>\\n): the model is asked to continue a prefix it was never shown; the "
    "audit notes it, neither convention trains it",
    "tool-call turns": "an assistant turn that calls a tool is trained differently",
    "multi-turn history": "a turn before the last is rendered or trained differently",
    "less than expkit": "TRL leaves out part of what expkit trains (content or end of turn)",
}
_THINK = re.compile(r"\s*<think>\s*</think>\s*")


def render_template(template: str, messages: Sequence[dict[str, Any]], **context: Any) -> str:
    """Render a chat template without a tokenizer (``bos_token``/``eos_token`` default to ``<s>``/``</s>``)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    context.setdefault("bos_token", "<s>")
    context.setdefault("eos_token", "</s>")
    rendered: Any = render_jinja_template([list(messages)], chat_template=template, **context)  # (texts, indices)
    return str(rendered[0][0])


def trl_spans(template: str, messages: Sequence[dict[str, Any]], **context: Any) -> tuple[str, list[bool]]:
    """The text TRL trains on and, per character, whether its ``{% generation %}`` markers put it in the loss."""
    from transformers.utils.chat_template_utils import render_jinja_template

    context.setdefault("bos_token", "<s>")
    context.setdefault("eos_token", "</s>")
    rendered: Any = render_jinja_template(  # annotated -> str, returns (texts, generation indices)
        [list(messages)], chat_template=template, return_assistant_tokens_mask=True, **context
    )
    text, indices = str(rendered[0][0]), rendered[1]
    mask = [False] * len(text)
    for a, b in indices[0]:
        mask[int(a) : int(b)] = [True] * (int(b) - int(a))
    return text, mask


@dataclass(frozen=True)
class SpanDifference:
    """What one convention trains in a turn that the other does not: ``side`` says who trains more."""

    turn: int
    rule: str
    side: Literal["trl trains more", "expkit trains more"]
    text: str


@dataclass(frozen=True)
class TurnComparison:
    """One conversation: expkit's spans, TRL's per-character mask and the named differences (empty: equal)."""

    expkit: DerivedSpans
    trl_text: str
    trl_mask: tuple[bool, ...]
    differences: tuple[SpanDifference, ...]

    @property
    def equal(self) -> bool:
        return not self.differences

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(sorted({d.rule for d in self.differences}))


def _run_after(mask: Sequence[bool], text: str, start: int, stop: int) -> str:
    """The contiguous trained text that starts at ``start`` (stops at the first masked character or ``stop``)."""
    end = start
    while end < stop and mask[end]:
        end += 1
    return text[start:end]


def _run_before(mask: Sequence[bool], text: str, start: int, stop: int) -> str:
    """The contiguous trained text that ends at ``stop`` (no further back than ``start``)."""
    begin = stop
    while begin > start and mask[begin - 1]:
        begin -= 1
    return text[begin:stop]


def _classify_before(extra: str) -> list[str]:
    if not extra:
        return []
    rules = []
    if "<think>" in extra or "</think>" in extra:  # the block, or the part of it the generation prompt opens
        rules.append("empty think block")
    if _THINK.sub("", extra).replace("<think>", "").replace("</think>", "").strip():
        rules.append("role header")
    return rules


def _classify_after(ours: str, theirs: str) -> tuple[str, str] | None:
    if ours == theirs:
        return None
    if theirs.startswith(ours):
        extra = theirs[len(ours) :]
        rule = "trailing newline after end-of-turn" if not extra.strip() else "token after end-of-turn"
        return rule, extra
    return "less than expkit", ours


def _turn_differences(
    i: int, ours: DerivedSpans, k: int, trl_text: str, trl_mask: Sequence[bool], where: tuple[int, int, int, int]
) -> list[SpanDifference]:
    """Differences of assistant turn ``i`` (the ``k``-th span); ``where`` = (window start, content start,
    content end, window end) in TRL's text."""
    span = ours.spans[k]
    lo, cs, ce, hi = where
    found: list[SpanDifference] = []
    before = _run_before(trl_mask, trl_text, lo, cs)
    mine = ours.text[span.start : span.content_start]  # what expkit trains after the generation prompt
    if before.endswith(mine):
        extra = before[: len(before) - len(mine)]
        for rule in _classify_before(extra):
            found.append(SpanDifference(i, rule, "trl trains more", extra))
    else:
        found.append(SpanDifference(i, "after generation prompt", "expkit trains more", mine))
    if not all(trl_mask[cs:ce]):
        found.append(SpanDifference(i, "less than expkit", "expkit trains more", trl_text[cs:ce]))
    after = _classify_after(ours.text[span.content_end : span.end], _run_after(trl_mask, trl_text, ce, hi))
    if after is not None:
        side: Literal["trl trains more", "expkit trains more"] = (
            "expkit trains more" if after[0] == "less than expkit" else "trl trains more"
        )
        found.append(SpanDifference(i, after[0], side, after[1]))
    return found


def compare_with_trl(
    template: str,
    trl_template: str,
    messages: Sequence[dict[str, Any]],
    *,
    end_of_turn_strings: Sequence[str] = END_OF_TURN_STRINGS,
    **context: Any,
) -> TurnComparison:
    """expkit's spans on ``template`` (markers removed) against TRL's on ``trl_template``, one conversation.

    Raises:
        InputError: expkit cannot derive the spans (``derive_assistant_spans``).

    Example:
        >>> compare_with_trl(qwen3_stock, qwen3_training, one_turn).rules
        ('empty think block', 'trailing newline after end-of-turn')
    """
    plain = strip_generation_markers(template)
    ours = derive_assistant_spans(
        partial(render_template, plain, **context), messages, end_of_turn_strings=end_of_turn_strings
    )
    trl_text, trl_mask = trl_spans(trl_template, messages, **context)
    plain_trl = strip_generation_markers(trl_template)
    theirs = derive_assistant_spans(
        partial(render_template, plain_trl, **context), messages, end_of_turn_strings=end_of_turn_strings
    )
    found: list[SpanDifference] = []
    last = len(theirs.spans) - 1
    for k, (mine, other) in enumerate(zip(ours.spans, theirs.spans, strict=True)):
        lo = theirs.spans[k - 1].end if k else 0
        hi = theirs.spans[k + 1].content_start if k < last else len(trl_text)
        diffs = _turn_differences(
            mine.turn, ours, k, trl_text, trl_mask, (lo, other.content_start, other.content_end, hi)
        )
        if messages[mine.turn].get("tool_calls"):
            diffs = [SpanDifference(d.turn, "tool-call turns", d.side, f"{d.rule}: {d.text}") for d in diffs]
        elif k < last and not diffs and _history_differs(ours, theirs, trl_text, k):
            diffs.append(SpanDifference(mine.turn, "multi-turn history", "trl trains more", "rendered differently"))
        found += diffs
    return TurnComparison(expkit=ours, trl_text=trl_text, trl_mask=tuple(trl_mask), differences=tuple(found))


def _history_differs(ours: DerivedSpans, theirs: DerivedSpans, trl_text: str, k: int) -> bool:
    """A history turn whose surroundings TRL's template renders differently from the user's template."""
    a, b = ours.spans[k], theirs.spans[k]
    lo_a = ours.spans[k - 1].end if k else 0
    lo_b = theirs.spans[k - 1].end if k else 0
    return ours.text[lo_a : a.end] != trl_text[lo_b : b.end]


@dataclass(frozen=True)
class TrlDifferences:
    """Where expkit's default labels differ from TRL's on a data set, rule by rule.

    ``trl_template``: where TRL's spans come from (``template markers``, ``TRL training template``) or None when
    TRL has neither (``reason`` says so: TRL's ``assistant_only_loss`` cannot train this template).
    ``rules``: rule -> number of compared conversations with that difference.
    """

    trl_template: str | None
    reason: str
    conversations_compared: int
    rules: dict[str, int]
    first: tuple[SpanDifference, ...]


def trl_training_template(tokenizer: Any) -> tuple[str | None, str]:
    """(template, where it comes from): the tokenizer's own when it has markers, else TRL's swap-in, else None."""
    template = tokenizer.chat_template or ""
    if _MARKERS.search(template):
        return template, "template markers"
    try:
        from trl.chat_template_utils import get_training_chat_template
    except ImportError:
        return None, "TRL is not installed"
    try:
        swapped = get_training_chat_template(tokenizer)
    except ValueError:  # TRL: "not training-compatible ... patching is not supported for this template"
        swapped = None
    except Exception as exc:  # noqa: BLE001 - TRL renders the template without tools; Hermes 3 tool use needs them
        return None, f"TRL cannot render this template to look for a training template ({type(exc).__name__})"
    if swapped is None:
        return None, "TRL has no training template for this chat template and it has no {% generation %} markers"
    return str(swapped), "TRL training template"


_MARKERS = re.compile(r"\{%-?\s*generation\s*-?%\}")


def compare_dataset_with_trl(
    tokenizer: Any,
    conversations: Sequence[Sequence[dict[str, Any]]],
    *,
    limit: int = 20,
    tools: Sequence[list[dict[str, Any]] | None] | None = None,
) -> TrlDifferences:
    """``compare_with_trl`` on the first ``limit`` conversations, with the tokenizer's template and tokens.

    Example:
        >>> compare_dataset_with_trl(qwen3_tokenizer, [one_turn]).rules
        {'empty think block': 1, 'trailing newline after end-of-turn': 1}
    """
    trl_template, source = trl_training_template(tokenizer)
    if trl_template is None:
        return TrlDifferences(None, source, 0, {}, ())
    context = {"bos_token": tokenizer.bos_token or "", "eos_token": tokenizer.eos_token or ""}
    rules: dict[str, int] = {}
    first: list[SpanDifference] = []
    picked = list(conversations[:limit])
    failed = 0
    for k, msgs in enumerate(picked):
        extra: dict[str, Any] = {"tools": tools[k]} if tools is not None and tools[k] is not None else {}
        try:
            found = compare_with_trl(tokenizer.chat_template, trl_template, list(msgs), **context, **extra)
        except Exception:  # noqa: BLE001 - TRL's template refusing this conversation is counted, not fatal
            failed += 1
            continue
        for rule in found.rules:
            rules[rule] = rules.get(rule, 0) + 1
        first += [d for d in found.differences if d.rule not in {f.rule for f in first}]
    reason = f"{failed} conversation(s) not comparable (a template raised on them)" if failed else ""
    return TrlDifferences(source, reason, len(picked) - failed, rules, tuple(first))
