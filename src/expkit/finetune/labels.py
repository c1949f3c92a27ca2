"""Which tokens count in the loss: labels built from the chat template, and the audit that checks them
before any training (stop token trained, pad != end of turn, no empty example, no truncated stop).

The labels audited here are the labels trained: ``expkit.finetune.training`` hands them to TRL as a
tokenized ``input_ids`` + ``labels`` data set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from expkit.errors import InputError, UsageError
from expkit.finetune.chatdata import ChatExample, prompt_of
from expkit.finetune.conventions import Convention, TrlDifferences, compare_dataset_with_trl, trl_training_template
from expkit.finetune.dropped import DroppedField, family_of, find_dropped_fields, rendered_messages
from expkit.finetune.history import find_history_turns
from expkit.finetune.spans import END_OF_TURN_STRINGS, DerivedSpans, TurnSpan, derive_assistant_spans
from expkit.finetune.templating import TemplateBudgetExceeded, TemplateRefused, raised_in_template, template_budget

__all__ = [
    "EndOfTurn",
    "ExampleLabels",
    "FileAudit",
    "LabelAudit",
    "LabelBuilder",
    "LabelProblem",
    "LossMode",
    "TokenView",
    "audit_label_file",
    "audit_labels",
    "find_end_of_turn",
    "load_chat_tokenizer",
    "render_chat",
]

LossMode = Literal["assistant", "completion", "all"]
LOSS_MODES = ("assistant", "completion", "all")
IGNORE = -100  # the label PyTorch's cross_entropy skips (ignore_index default)
_Row = tuple[list[int], list[bool], int | None]  # token ids, trained flags, the assistant message of its own row
_SENTINEL = "Zq7Zq"


@dataclass(frozen=True)
class EndOfTurn:
    """The token the chat template puts right after an assistant's content: what the model must learn to emit."""

    token: str
    id: int
    others: tuple[int, ...] = ()  # other end-of-turn ids the template renders (gpt-oss: <|end|>, <|call|>)

    @property
    def ids(self) -> tuple[int, ...]:
        return (self.id, *self.others)


@dataclass(frozen=True)
class ExampleLabels:
    """One example, tokenized: ``labels[i]`` is ``input_ids[i]`` when trained, -100 when masked.

    ``turn_rows``: the earlier assistant turns the template renders otherwise in history than as the last turn
    (``finetune.history``), each trained in a row of its own (``turn``: that assistant message; the row is the
    conversation up to it, rendered as inference renders it); this row leaves them masked. ``rows`` lists all.
    """

    index: int
    line: int
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    truncated_tokens: int
    dropped: tuple[DroppedField, ...] = ()  # fields of assistant turns the template does not render
    turn: int | None = None  # a row of its own for this assistant message (None: the whole conversation)
    turn_rows: tuple[ExampleLabels, ...] = ()

    @property
    def rows(self) -> tuple[ExampleLabels, ...]:
        """The rows the trainer gets for this example: the earlier turns' own rows, then the whole conversation."""
        return (*self.turn_rows, self)

    @property
    def trained_tokens(self) -> int:
        return sum(label != IGNORE for label in self.labels)

    @property
    def masked_fraction(self) -> float:
        return 1.0 - self.trained_tokens / len(self.labels) if self.labels else 1.0


@dataclass(frozen=True)
class LabelProblem:
    """A hard check that failed on one example (``index`` 0-based in the file, ``line`` 1-based; 0: in memory)."""

    check: str
    index: int
    line: int
    message: str


@dataclass(frozen=True)
class TokenView:
    """One example as (token text, trained?) pairs, for colouring (``turn``: the row of that assistant message)."""

    index: int
    tokens: tuple[tuple[str, bool], ...]
    turn: int | None = None


@dataclass(frozen=True)
class LabelAudit:
    """What the audit found. ``masked_fraction`` = masked tokens / all tokens over the data set."""

    examples: int
    total_tokens: int
    trained_tokens: int
    masked_fraction: float
    masked_fraction_per_example: tuple[float, ...]
    end_of_turn: EndOfTurn
    pad_token_id: int | None
    loss: str
    eos_in_loss: bool
    span_source: Literal[
        "template markers", "derived from rendered turns", "prompt/completion", "TRL training template"
    ]
    notes: tuple[str, ...]
    problems: tuple[LabelProblem, ...]
    shown: tuple[TokenView, ...]
    elapsed_s: float
    match: str = "expkit"  # the convention of the labels: expkit's (default) or TRL's ('trl')
    trl: TrlDifferences | None = None  # where expkit's derived labels differ from TRL's, rule by rule

    @property
    def ok(self) -> bool:
        return not self.problems


@template_budget()
def load_chat_tokenizer(model_dir: str | Path) -> Any:
    """``AutoTokenizer.from_pretrained(model_dir)`` with the checks SFT needs.

    Raises:
        InputError: no such directory, no tokenizer files, tokenizer files transformers cannot load, no chat
            template, or a chat template that does not render one user and one assistant turn.
    """
    p = Path(model_dir)
    if not p.is_dir():
        raise InputError(
            "model directory not found",
            path=p,
            hint="give a local checkpoint directory (`expkit sft demo-model --out DIR` builds one)",
        )
    if not any((p / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        raise InputError(
            "model directory has no tokenizer (tokenizer.json, tokenizer.model or vocab.json)",
            path=p,
            hint="save the tokenizer beside the model with tokenizer.save_pretrained(DIR)",
        )
    from transformers import AutoTokenizer

    if (p / "config.json").is_file():  # AutoTokenizer reads it too: a broken one is named, not a traceback
        from expkit.finetune.modeldir import check_model_dir

        check_model_dir(p)
    for name in ("tokenizer.json", "tokenizer_config.json"):  # JSON files: name the broken one ourselves
        f = p / name
        if f.is_file():
            try:
                obj = json.loads(f.read_bytes().decode("utf-8-sig"))
            except UnicodeDecodeError as exc:
                raise InputError(f"{name} is not UTF-8 (byte {exc.start})", path=f) from None
            except json.JSONDecodeError as exc:
                raise InputError(f"{name} is not JSON ({exc.msg})", path=f, line=exc.lineno) from None
            except RecursionError:
                raise InputError(f"{name} is nested too deeply", path=f) from None
            if not isinstance(obj, dict):
                raise InputError(f"{name} holds a {type(obj).__name__}, not an object", path=f)
    try:
        tok = AutoTokenizer.from_pretrained(p)
    except Exception as exc:  # noqa: BLE001 - any refusal inside from_pretrained is about the user's files
        names = [
            f for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json") if (p / f).is_file()
        ]
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise InputError(
            f"cannot load the tokenizer from {', '.join(names)} ({type(exc).__name__}: {first})",
            path=p,
            hint="the tokenizer files are corrupt; save them again with tokenizer.save_pretrained(DIR)",
        ) from None
    if not getattr(tok, "chat_template", None):
        raise InputError(
            "the tokenizer has no chat template",
            path=p,
            hint="set tokenizer.chat_template (e.g. ChatML) and save it, or use prompt/completion data",
        )
    try:  # render one turn now: a template that does not parse or render fails here, named, not mid-audit
        _render_probe(tok)
    except TemplateBudgetExceeded:
        raise
    except Exception as exc:  # noqa: BLE001 - jinja2's TemplateError and whatever the user's template raises
        where = p / "chat_template.jinja" if (p / "chat_template.jinja").is_file() else p / "tokenizer_config.json"
        line = getattr(exc, "lineno", None)
        raise InputError(
            f"the chat template does not render ({type(exc).__name__}: {exc})",
            path=where,
            line=line if isinstance(line, int) else None,
            hint="fix the Jinja template (ChatML is a known-good one)",
        ) from None
    return tok


def _render_probe(tok: Any) -> None:
    """One user and one assistant turn, with text content, or as text blocks for a template that reads only blocks
    (Llava-Next: ``content[0].text``); raises the text render's error when neither renders."""
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    try:
        _render_bare(tok, msgs)
    except TemplateBudgetExceeded:
        raise
    except Exception:
        try:
            _render_bare(tok, [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in msgs])
        except Exception:  # noqa: BLE001 - neither renders: the text render's error is the one to name
            pass
        else:
            return
        raise


@template_budget()
def render_chat(
    tokenizer: Any, messages: Sequence[Any], *, tools: Any = None, add_generation_prompt: bool = False, **kw: Any
) -> Any:
    """``tokenizer.apply_chat_template(messages, tools=tools, ...)`` (text unless ``tokenize=True`` is passed); a
    conversation without tools on a template that needs a list (Hermes 3 tool use iterates it) gets an empty one."""
    kw.setdefault("tokenize", False)
    try:
        try:
            return tokenizer.apply_chat_template(
                list(messages), tools=tools, add_generation_prompt=add_generation_prompt, **kw
            )
        except TemplateBudgetExceeded:
            raise
        except Exception:
            if tools is not None:
                raise
            return tokenizer.apply_chat_template(
                list(messages), tools=[], add_generation_prompt=add_generation_prompt, **kw
            )
    except InputError:
        raise
    except Exception as exc:
        _raise_refused(exc)
        raise


def _raise_refused(exc: Exception) -> None:
    """Raise ``TemplateRefused`` for an error of the template (its ``raise_exception``, or raised in its code);
    return for any other error (expkit's or transformers' bug, re-raised by the caller)."""
    from jinja2 import TemplateError, TemplateSyntaxError  # comes with transformers, which rendering a chat needs

    if isinstance(exc, TemplateSyntaxError):  # a template that does not parse refuses nothing: it is broken, and
        return  # load_chat_tokenizer names it at its file and line
    if not isinstance(exc, TemplateError) and not raised_in_template(exc):
        return
    what = str(exc) if isinstance(exc, TemplateError) else f"{type(exc).__name__} in the template: {exc}"
    args = " (a tool call's arguments as a JSON string may render)" if 'not "dict"' in what else ""
    raise TemplateRefused(
        f"the chat template refuses this conversation: {what}",
        hint=f"this family cannot render it{args} (drop the example, or --on-error skip in the reader)",
    ) from exc


def _render_bare(tokenizer: Any, messages: Sequence[Any], *, add_generation_prompt: bool = False) -> str:
    return render_chat(tokenizer, messages, add_generation_prompt=add_generation_prompt)


def find_end_of_turn(tokenizer: Any) -> EndOfTurn:
    """The family's end-of-turn token: the first of ``spans.END_OF_TURN_STRINGS`` the template renders after an
    assistant's content when it is one token (``<|im_end|>`` for ChatML, ``<end_of_turn>`` for Gemma, ``<|eot_id|>``
    for Llama 3, not their ``eos_token``), else the first special token rendered after the content (a family the
    list does not know: Nemotron Nano v2's ``<SPECIAL_12>`` after a newline), else the first token.

    Raises:
        InputError: the template renders nothing after the assistant content.
    """
    known = _known_end_of_turn(tokenizer)
    if known is not None:
        return known
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": _SENTINEL}]
    text = _render_bare(tokenizer, msgs)
    if _SENTINEL not in text:  # a template that reads text blocks only (Idefics3, SmolVLM)
        blocks = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in msgs]
        text = _render_bare(tokenizer, blocks)
    end = text.rfind(_SENTINEL) + len(_SENTINEL)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    after = [int(t) for t, (a, b) in zip(enc["input_ids"], enc["offset_mapping"], strict=True) if a >= end and b > a]
    special = {i for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items() if t.special}
    for tid in [t for t in after if t in special] + after[:1]:
        return EndOfTurn(token=tokenizer.convert_ids_to_tokens(tid), id=tid)
    if tokenizer.eos_token_id is not None:
        return EndOfTurn(token=tokenizer.eos_token, id=int(tokenizer.eos_token_id))
    raise InputError(
        "the chat template renders no token after the assistant's content and the tokenizer has no eos_token",
        hint="end assistant turns with an end-of-turn token such as <|im_end|>",
    )


def _known_end_of_turn(tokenizer: Any) -> EndOfTurn | None:
    """The end of turn of a one-turn conversation from the derived spans, when it is a single token."""

    def render(messages: Sequence[Any], *, add_generation_prompt: bool = False) -> str:
        return _render_bare(tokenizer, messages, add_generation_prompt=add_generation_prompt)

    for content in ("hi", [{"type": "text", "text": "hi"}]):
        msgs = [{"role": "user", "content": content}, {"role": "assistant", "content": content}]
        try:
            end = derive_assistant_spans(render, msgs).spans[-1].end_of_turn
        except Exception:  # noqa: BLE001 - a template that cannot render this shape: try the next, then fall back
            continue
        ids = tokenizer(end, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            return EndOfTurn(token=end, id=int(ids[0]))
    return None


def _trl_training_template(tokenizer: Any) -> str:
    """The training template (with markers) TRL swaps in for this tokenizer's stock template."""
    template, reason = trl_training_template(tokenizer)
    if template is None:
        raise UsageError(
            f"match 'trl': {reason}, so TRL's assistant_only_loss cannot train it",
            hint="use expkit's default convention (match 'expkit'), which derives the spans",
        )
    return template


def _has_generation_markers(template: str) -> bool:
    return "generation" in template and "endgeneration" in template


class LabelBuilder:
    """Builds ``input_ids`` and ``labels`` for examples, the way the trainer will see them.

    Args:
        tokenizer: a fast tokenizer with a chat template.
        loss: ``assistant`` (every assistant turn), ``completion`` (only the last assistant turn, or the
            completion of prompt/completion data) or ``all`` (every token).
        eos_in_loss: keep the end-of-turn token in the loss (False reproduces the does-not-stop bug).
        max_length: truncate to this many tokens (None: no truncation), as SFTConfig.max_length does.
        match: ``expkit`` (default): the template's own ``{% generation %}`` markers when it has them, else
            expkit's derived spans (from the end of the generation prompt through the end-of-turn token); ``trl``:
            TRL's labels, from the markers or from the training template TRL swaps in for a known stock template
            (``conventions.RULES`` names where the two differ).
    """

    @template_budget()
    def __init__(
        self,
        tokenizer: Any,
        *,
        loss: LossMode = "assistant",
        eos_in_loss: bool = True,
        max_length: int | None = None,
        match: Convention = "expkit",
        allow_dropped: bool = False,
    ) -> None:
        if loss not in LOSS_MODES:
            raise UsageError(f"loss must be one of {', '.join(LOSS_MODES)}, not {loss!r}")
        if max_length is not None and max_length < 2:
            raise UsageError(f"max_length must be >= 2, not {max_length}")
        self.tokenizer = tokenizer
        self.loss = loss
        self.eos_in_loss = eos_in_loss
        self.max_length = max_length
        self.markers = _has_generation_markers(tokenizer.chat_template or "")
        if match not in ("expkit", "trl"):
            raise UsageError(f"match must be expkit or trl, not {match!r}")
        self.match = match
        self.trl_template = tokenizer.chat_template if self.markers else None
        if match == "trl" and not self.markers:
            self.trl_template = _trl_training_template(tokenizer)
        self.end_of_turn = find_end_of_turn(tokenizer)
        own = tuple(t for t in (self.end_of_turn.token, tokenizer.eos_token) if t)
        self.end_strings = (*END_OF_TURN_STRINGS, *own)
        added = tokenizer.get_added_vocab()
        others = sorted({added[t] for t in END_OF_TURN_STRINGS if t in added} - {self.end_of_turn.id})
        self.end_of_turn = replace(self.end_of_turn, others=tuple(others))
        # generation-prompt text the training renders lack before an assistant turn -> turns seen (TurnSpan.unprompted)
        self.unprompted: dict[str, int] = {}
        self.allow_dropped = allow_dropped  # a dropped field is a note, not a problem, in the audit
        # (turn, its text in history, the text as the last turn, the prompt's end the history lacks) -> conversations:
        # trained in a row of its own
        self.history_rows: dict[tuple[int, str, str, str], int] = {}

    def _render(self, messages: Sequence[dict[str, Any]], *, gen_prompt: bool = False, tools: Any = None) -> str:
        return render_chat(self.tokenizer, messages, add_generation_prompt=gen_prompt, tools=tools)

    def _render_for_spans(
        self, messages: Sequence[Any], *, add_generation_prompt: bool = False, tools: Any = None
    ) -> str:
        return render_chat(self.tokenizer, messages, add_generation_prompt=add_generation_prompt, tools=tools)

    def _derive(self, messages: Sequence[dict[str, Any]], ex: ChatExample, only_last: bool) -> DerivedSpans:
        """expkit's spans (``spans.derive_assistant_spans``): from the end of the generation prompt through each
        assistant turn's end of turn, located by rendering the turn with sentinel content, so templates that do
        not render turns as prefixes of each other (DeepSeek, Phi-3 with a system prompt, gpt-oss) are handled too."""
        try:
            derived = derive_assistant_spans(
                partial(self._render_for_spans, tools=ex.tool_list),
                messages,
                end_of_turn_strings=self.end_strings,
                only_last=only_last,
            )
        except InputError as exc:
            raise InputError(exc.message, line=ex.line or None, hint=exc.hint) from None
        return derived

    def _count_unprompted(self, spans: Sequence[TurnSpan]) -> None:
        """Record the trained spans that do not follow the generation prompt (the audit's note)."""
        for s in spans:
            if s.unprompted:
                self.unprompted[s.unprompted] = self.unprompted.get(s.unprompted, 0) + 1

    def _derived_mask(self, derived: DerivedSpans, skip: Sequence[int] = ()) -> tuple[list[int], list[bool]]:
        """Token ids and trained flags of a derivation, the assistant messages ``skip`` left masked."""
        enc = self.tokenizer(derived.text, add_special_tokens=False, return_offsets_mapping=True)
        chars = [False] * len(derived.text)
        for s in derived.spans:
            if s.turn not in skip:
                chars[s.start : s.end] = [True] * (s.end - s.start)
        # a token is trained when any of its characters is (as transformers' assistant mask does): a token that
        # merges the template's separator with the content (Mistral's "[/INST]" + " 5" -> " 5") is the model's
        # first output token, not template text
        mask = [any(chars[a:b]) or (a == b and a < len(chars) and chars[a]) for a, b in enc["offset_mapping"]]
        return enc["input_ids"], mask

    def _history_rows(
        self, ex: ChatExample, derived: DerivedSpans, messages: Sequence[dict[str, Any]]
    ) -> list[tuple[int, list[dict[str, Any]], list[DroppedField]]]:
        """(turn, the conversation up to it as rendered when it is the last turn, the fields dropped there) of each
        earlier turn the template renders otherwise in history than as the last turn (``finetune.history``)."""
        render = partial(self._render, tools=ex.tool_list)
        drops: dict[int, list[DroppedField]] = {}
        rows: dict[int, list[dict[str, Any]]] = {}

        def as_last(turn: int) -> list[dict[str, Any]]:
            if turn not in rows:
                row = [dict(m) for m in ex.messages[: turn + 1]]
                drops[turn] = find_dropped_fields(render, row, [turn])
                rows[turn] = rendered_messages(row, drops[turn])
            return rows[turn]

        def render_gen(messages: Sequence[Any], *, add_generation_prompt: bool = False) -> str:
            return render(messages, gen_prompt=add_generation_prompt)

        moved = find_history_turns(render_gen, messages, derived, self.end_strings, as_last_messages=as_last)
        for h in moved:
            key = (h.turn, h.in_history, h.as_last, h.unprompted)
            self.history_rows[key] = self.history_rows.get(key, 0) + 1
        return [(h.turn, as_last(h.turn), drops[h.turn]) for h in moved]

    def _trl_mask(self, messages: Sequence[dict[str, Any]], tools: Any = None) -> tuple[list[int], list[bool]]:
        """TRL's labels: the assistant mask of the template's own markers, or of TRL's training template."""
        out = render_chat(
            self.tokenizer,
            messages,
            tools=tools,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
            chat_template=self.trl_template,
        )
        return list(out["input_ids"]), [bool(b) for b in out["assistant_masks"]]

    def dropped_fields(self, ex: ChatExample) -> list[DroppedField]:
        """The fields of the trained assistant turns that the template leaves out (``dropped.find_dropped_fields``)."""
        turns = [i for i, m in enumerate(ex.messages) if m.get("role") == "assistant"]
        if self.loss == "completion":
            turns = turns[-1:]
        return find_dropped_fields(partial(self._render, tools=ex.tool_list), list(ex.messages), turns)

    def _conversation(self, ex: ChatExample) -> tuple[list[_Row], list[DroppedField]]:
        """The rows of one conversation (the whole conversation last) and the fields the template drops from the
        turns they train."""
        dropped = self.dropped_fields(ex)
        msgs = rendered_messages(ex.messages, dropped)
        if self.loss == "all":
            ids = self.tokenizer(self._render(msgs, tools=ex.tool_list), add_special_tokens=False)["input_ids"]
            return [(ids, [True] * len(ids), None)], dropped
        only_last = self.loss == "completion"
        if (self.markers or self.match == "trl") and not only_last:
            return [(*self._trl_mask(msgs, ex.tool_list), None)], dropped
        derived = self._derive(msgs, ex, only_last)
        moved = [] if only_last else self._history_rows(ex, derived, msgs)
        rows: list[_Row] = []
        for turn, m, _ in moved:
            own = self._derive(m, ex, True)
            self._count_unprompted(own.spans)
            rows.append((*self._derived_mask(own), turn))
        turns = {turn for turn, _, _ in moved}
        self._count_unprompted([s for s in derived.spans if s.turn not in turns])
        rows.append((*self._derived_mask(derived, skip=tuple(turns)), None))
        dropped = [d for d in dropped if d.turn not in turns] + [d for _, _, ds in moved for d in ds]
        return rows, sorted(dropped, key=lambda d: d.turn)

    def _prompt_completion(self, ex: ChatExample) -> tuple[list[int], list[bool]]:
        tok = self.tokenizer
        p = tok(ex.prompt or "", add_special_tokens=False)["input_ids"]
        c = tok(ex.completion or "", add_special_tokens=False)["input_ids"] + [self.end_of_turn.id]
        return p + c, [self.loss == "all"] * len(p) + [True] * len(c)

    @template_budget()
    def build(self, ex: ChatExample, index: int = 0) -> ExampleLabels:
        """Tokenize one example and build its labels (then drop the end of turn if asked, then truncate); earlier
        turns trained in rows of their own are in ``turn_rows`` (``ExampleLabels.rows`` lists every row)."""

        try:
            if ex.conversational:
                rows, dropped = self._conversation(ex)
            else:
                rows, dropped = [(*self._prompt_completion(ex), None)], []
        except TemplateRefused as exc:  # roles must alternate, no tool role, a TypeError in the template's code ...
            raise InputError(exc.message, line=ex.line or None, hint=exc.hint) from None
        *own, whole = [self._labelled(index, ex, row) for row in rows]
        return replace(whole, dropped=tuple(dropped), turn_rows=tuple(own))

    def _labelled(self, index: int, ex: ChatExample, row: _Row) -> ExampleLabels:
        """One row's labels: the end of turn masked if asked, then truncated to ``max_length``."""
        ids, mask, turn = row
        labels = [t if m else IGNORE for t, m in zip(ids, mask, strict=True)]
        if not self.eos_in_loss:
            labels = [IGNORE if t == self.end_of_turn.id else lab for t, lab in zip(ids, labels, strict=True)]
        cut = 0
        if self.max_length is not None and len(ids) > self.max_length:
            cut = len(ids) - self.max_length
        keep = len(ids) - cut
        return ExampleLabels(
            index=index,
            line=ex.line,
            input_ids=tuple(ids[:keep]),
            labels=tuple(labels[:keep]),
            truncated_tokens=cut,
            turn=turn,
        )

    @property
    def span_source(self) -> str:
        if self.match == "trl" and not self.markers and self.loss == "assistant":
            return "TRL training template"
        if self.loss == "all":
            return "template markers" if self.markers else "derived from rendered turns"
        return "template markers" if self.markers and self.loss == "assistant" else "derived from rendered turns"


def _check(
    ex: ExampleLabels,
    full: ExampleLabels | None,
    eot: EndOfTurn,
    pad_id: int | None,
    pad_reported: bool,
    loss: str,
    names: Any = str,
    allow_trailing: frozenset[int] | None = None,
) -> list[LabelProblem]:
    """Hard checks on one example; ``full`` is the untruncated version when truncation cut tokens.
    ``allow_trailing`` (``--match trl``): a trained span may go on past its end of turn with whitespace tokens
    and these ids (the eos), as TRL's templates train them."""
    problems = []
    source = full or ex
    trained = [i for i, lab in enumerate(source.labels) if lab != IGNORE]
    if not any(lab != IGNORE for lab in ex.labels):
        problems.append(LabelProblem("no_trained_token", ex.index, ex.line, "no token of this example is in the loss"))
    if loss == "all":  # every token trained: the end of turn must be among them
        if trained and not any(source.input_ids[i] == eot.id for i in trained):
            problems.append(
                LabelProblem(
                    "stop_token_not_trained",
                    ex.index,
                    ex.line,
                    f"the end-of-turn token {eot.token} ({eot.id}) is never in the loss",
                )
            )
    else:  # each maximal run of trained tokens (an assistant turn) must end with the end-of-turn token
        runs_end = [i for i in trained if i + 1 == len(source.labels) or source.labels[i + 1] == IGNORE]
        for i in runs_end:
            while allow_trailing is not None and i > 0 and source.labels[i - 1] != IGNORE:
                if source.input_ids[i] in eot.ids:
                    break
                if names(source.input_ids[i]).strip() and source.input_ids[i] not in allow_trailing:
                    break  # TRL's convention trains whitespace and the eos after the end of turn, nothing else
                i -= 1
            if source.input_ids[i] not in eot.ids:
                problems.append(
                    LabelProblem(
                        "stop_token_not_trained",
                        ex.index,
                        ex.line,
                        f"a trained span ends with token {source.input_ids[i]} ({names(source.input_ids[i])!r}), "
                        "not with the end-of-turn token "
                        f"{eot.token} ({eot.id}): the model is never taught to stop",
                    )
                )
                break
    if full is not None and any(
        full.input_ids[i] == eot.id and full.labels[i] != IGNORE for i in range(len(ex.labels), len(full.labels))
    ):
        problems.append(
            LabelProblem(
                "truncation_cuts_stop",
                ex.index,
                ex.line,
                f"max_length cuts the last {ex.truncated_tokens} tokens, including a trained {eot.token}",
            )
        )
    if (
        pad_id is not None
        and pad_id == eot.id
        and not pad_reported
        and any(source.input_ids[i] == eot.id for i in trained)
    ):
        problems.append(
            LabelProblem(
                "pad_is_eos",
                ex.index,
                ex.line,
                f"pad token id {pad_id} == end-of-turn id: a collator that masks padding "
                "(labels[input_ids == pad] = -100) masks every real stop token",
            )
        )
    return problems


@template_budget()
def audit_labels(
    *,
    tokenizer: Any,
    examples: Sequence[ChatExample],
    loss: LossMode = "assistant",
    eos_in_loss: bool = True,
    max_length: int | None = None,
    show: int = 2,
    builder: LabelBuilder | None = None,
    match: Convention = "expkit",
) -> LabelAudit:
    """Build the labels of every example and run the hard checks, before any training.

    Args:
        tokenizer: from ``load_chat_tokenizer``.
        examples: from ``read_chat_file`` or ``generate_chat_examples``.
        loss, eos_in_loss, max_length: as ``LabelBuilder``.
        show: how many examples to keep as coloured token views.
        builder: reuse a LabelBuilder (tokenizer and options are then taken from it).
        match: the label convention (``LabelBuilder``); the audit also names where expkit's derived labels
            differ from TRL's (``LabelAudit.trl``) when the template has no markers of its own.

    Returns:
        A LabelAudit; ``ok`` is False when a hard check failed (problems name the example index and line).

    Example:
        >>> audit_labels(tokenizer=tok, examples=generate_chat_examples(n=100)).masked_fraction
        0.87...
    """
    t0 = time.perf_counter()
    b = builder or LabelBuilder(tokenizer, loss=loss, eos_in_loss=eos_in_loss, max_length=max_length, match=match)
    eot = b.end_of_turn
    pad_id = b.tokenizer.pad_token_id
    per, problems, shown = [], [], []
    total = trained = 0
    pad_reported = False
    untruncated = None
    eos = b.tokenizer.eos_token_id
    trailing = None if b.match == "expkit" else frozenset(() if eos is None else (int(eos),))
    dropped: dict[tuple[str, int], int] = {}
    family = family_of(b.tokenizer.chat_template or "")
    for i, ex in enumerate(examples):
        lab = b.build(ex, index=i)
        fulls: tuple[ExampleLabels | None, ...] = (None,) * len(lab.rows)
        if any(r.truncated_tokens for r in lab.rows):
            if untruncated is None:
                untruncated = LabelBuilder(b.tokenizer, loss=b.loss, eos_in_loss=b.eos_in_loss, max_length=None)
            whole = untruncated.build(ex, index=i).rows
            fulls = tuple(f if r.truncated_tokens else None for r, f in zip(lab.rows, whole, strict=True))
        found = []
        for row, full in zip(lab.rows, fulls, strict=True):  # each row the trainer gets is checked
            found += _check(
                row,
                full,
                eot,
                pad_id,
                pad_reported,
                b.loss,
                names=lambda t: b.tokenizer.decode([t]),
                allow_trailing=trailing,
            )
            pad_reported = pad_reported or any(p.check == "pad_is_eos" for p in found)
        for d in lab.dropped:
            dropped[(d.field, d.turn)] = dropped.get((d.field, d.turn), 0) + 1
            if not b.allow_dropped:
                found.append(LabelProblem("dropped_content", i, ex.line, _dropped_message(family, d)))
        problems += found
        n_tokens = sum(len(r.labels) for r in lab.rows)
        n_trained = sum(r.trained_tokens for r in lab.rows)
        per.append(1.0 - n_trained / n_tokens if n_tokens else 1.0)
        total += n_tokens
        trained += n_trained
        if i < show:
            for row in lab.rows:
                toks = b.tokenizer.convert_ids_to_tokens(list(row.input_ids))
                text = [b.tokenizer.convert_tokens_to_string([t]) for t in toks]
                pairs = tuple((s, label != IGNORE) for s, label in zip(text, row.labels, strict=True))
                shown.append(TokenView(i, pairs, row.turn))
    if not per:
        raise InputError("no example to audit")
    notes = _audit_notes(b, examples, dropped, family)
    source = "prompt/completion" if not any(ex.conversational for ex in examples) else b.span_source
    return LabelAudit(
        examples=len(per),
        total_tokens=total,
        trained_tokens=trained,
        masked_fraction=1.0 - trained / total if total else 1.0,
        masked_fraction_per_example=tuple(per),
        end_of_turn=eot,
        pad_token_id=pad_id,
        loss=b.loss,
        eos_in_loss=b.eos_in_loss,
        span_source=source,  # type: ignore[arg-type]
        notes=tuple(notes),
        problems=tuple(problems),
        shown=tuple(shown),
        elapsed_s=time.perf_counter() - t0,
        match=b.match,
        trl=_trl_differences(b, examples),
    )


def _audit_notes(
    b: LabelBuilder, examples: Sequence[ChatExample], dropped: dict[tuple[str, int], int], family: str
) -> list[str]:
    """What the audit says beside its problems: derived spans, prompts not in the render, history that differs,
    dropped fields accepted with --allow-dropped, a masked end of turn."""
    notes = []
    if not b.markers and any(ex.conversational for ex in examples):
        notes.append(
            "the chat template has no {% generation %} markers: expkit derived the assistant spans "
            "from the rendered turns (TRL's assistant_only_loss needs the markers)"
        )
    for tail, n in b.unprompted.items():
        tail = tail if len(tail) <= 120 else "..." + tail[-117:]  # a whole instruction turn (Command R+ tool use)
        notes.append(
            f"generation prompt not in training render: the generation prompt ends with {tail!r}, which the "
            f"rendered training text never has before the assistant's content ({n} turn(s)): the model is asked at "
            "inference to continue a prefix it was never shown"
        )
    for (turn, in_history, as_last, unprompted), n in sorted(b.history_rows.items())[:5]:
        how = (
            f"as {in_history!r} but as {as_last!r} when it is the last turn"
            if in_history != as_last
            else f"after a context without the generation prompt's {unprompted!r}, which it has as the last turn"
        )
        notes.append(
            f"history turn in its own row: the template renders message {turn} (assistant) in history {how}, "
            "which is what the model sees at inference: it is trained so, in a row of the conversation up to it, "
            f"and masked in the whole conversation's row ({n} conversation(s); --match trl trains it in place)"
        )
    if b.allow_dropped and dropped:
        notes += [
            f"--allow-dropped: {_dropped_message(family, DroppedField(turn, field))} ({n} conversation(s))"
            for (field, turn), n in sorted(dropped.items())
        ]
    if not b.eos_in_loss:
        notes.append(
            f"--no-eos-in-loss: {b.end_of_turn.token} is masked out on purpose; expect a model that does not stop"
        )
    return notes


def _dropped_message(family: str, d: DroppedField) -> str:
    return (
        f"the {family} chat template drops {d.field} of message {d.turn} (assistant): that turn is trained "
        "without it (what went in is not what is rendered)"
    )


def _trl_differences(b: LabelBuilder, examples: Sequence[ChatExample]) -> TrlDifferences | None:
    """TRL's labels against expkit's derived ones on the conversations (None: nothing conversational)."""
    chats = [ex.messages for ex in examples if ex.conversational]
    tools = [ex.tool_list for ex in examples if ex.conversational]
    if not chats or b.loss == "all":
        return None
    if b.markers:
        return TrlDifferences(
            "template markers", "the template's own markers: expkit and TRL train the same", 0, {}, ()
        )
    return compare_dataset_with_trl(b.tokenizer, chats, tools=tools)


@template_budget()
def prompt_text(tokenizer: Any, ex: ChatExample) -> str:
    """The generation prompt of an example: the rendered context plus the assistant header."""
    p = prompt_of(ex)
    if isinstance(p, str):
        return p
    return render_chat(tokenizer, p, add_generation_prompt=True, tools=ex.tool_list)


@dataclass(frozen=True)
class FileAudit:
    """The label audit of a JSONL file and the lines left out of it (``on_error="skip"``: line -> reason)."""

    audit: LabelAudit
    skipped_lines: dict[int, str]


def audit_label_file(
    *,
    model_dir: str | Path,
    data_path: str | Path,
    show: int = 2,
    on_error: Literal["raise", "skip"] = "raise",
    **options: Any,
) -> FileAudit:
    """``audit_labels`` on the examples of a JSONL file with the chat tokenizer of ``model_dir``; ``options`` go
    to the ``LabelBuilder`` (``loss``, ``eos_in_loss``, ``max_length``, ``match``, ``allow_dropped``).

    Raises:
        UsageError: ``show`` < 0, an unknown ``loss``.
        InputError: as ``read_chat_file`` and ``load_chat_tokenizer``.
    """
    from expkit.finetune.chatdata import read_chat_file

    if show < 0:
        raise UsageError(f"show must be >= 0, not {show}")
    chat = read_chat_file(data_path, on_error=on_error)
    tok = load_chat_tokenizer(model_dir)
    audit = audit_labels(tokenizer=tok, examples=chat.examples, show=show, builder=LabelBuilder(tok, **options))
    return FileAudit(audit=audit, skipped_lines=dict(chat.skipped))
