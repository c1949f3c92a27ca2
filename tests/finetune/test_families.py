"""Every chat family: spans derived without refusing, each difference from TRL's labels named by a rule, the
family's own end-of-turn token trained (characters and tokens), and the table in docs/finetune.md.

Regenerate the table with ``EXPKIT_WRITE_DOCS=1 .venv/bin/python -m pytest tests/finetune/test_families.py``.
"""

from __future__ import annotations

import logging
import os
import re
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest
from families.catalog import Family, build_tokenizer, conversations, families, render_any, trl_training_templates

from expkit.errors import InputError
from expkit.finetune.chatdata import ChatExample
from expkit.finetune.conventions import RULES, compare_with_trl, render_template
from expkit.finetune.labels import IGNORE, LabelBuilder, audit_labels
from expkit.finetune.spans import DerivedSpans, derive_assistant_spans, strip_generation_markers

DOCS = Path(__file__).parents[2] / "docs" / "finetune.md"
# not "BEGIN GENERATED" (expkit.cli.docs owns those blocks): this table comes from a test, not from the CLI
BEGIN = "<!-- families table: begin (written by tests/finetune/test_families.py; do not edit by hand) -->"
END = "<!-- families table: end -->"
KINDS = ("one-turn", "multi-turn", "tool call")
FAMILIES = families()


@pytest.fixture(autouse=True)
def _quiet_transformers():
    logging.getLogger("transformers").setLevel(logging.ERROR)  # the no-markers warning, once per template


def _conversation(template: str, kind: str) -> list[dict[str, Any]] | str:
    """The conversation of this kind as the template can render it, or why it cannot (a template error)."""
    why = ""
    for blocks, json_args in ((False, False), (True, False), (False, True)):
        msgs = conversations(blocks, json_args)[kind]
        candidates = [msgs] if kind != "multi-turn" else [msgs, msgs[1:]]  # Gemma 1/2 has no system role
        for m in candidates:
            try:
                text = render_any(strip_generation_markers(template), m)
            except Exception as exc:  # noqa: BLE001 - the template's own raise_exception / jinja errors
                why = why or f"{type(exc).__name__}: {str(exc)[:70]}"
                continue
            if all(_content_text(x) in text for x in m if x["role"] == "assistant" and _content_text(x)):
                return m
            why = why or "the template does not render the assistant content of this conversation"
    return why


def _content_text(m: dict[str, Any]) -> str:
    c = m.get("content") or ""
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)


@cache
def _cell(name: str, kind: str) -> tuple[str, str]:
    """(status, detail): status is one of equal / differs / refused / expkit only / not rendered."""
    fam = next(f for f in FAMILIES if f.name == name)
    msgs = _conversation(fam.template, kind)
    if isinstance(msgs, str):
        return "not rendered", msgs
    try:
        if fam.trl_template is None:
            plain = strip_generation_markers(fam.template)
            spans = derive_assistant_spans(partial(render_any, plain), msgs)
            return "expkit only", f"ends with {spans.spans[-1].end_of_turn}" + _unprompted(spans)
        result = compare_with_trl(fam.template, fam.trl_template, msgs)
    except InputError as exc:
        return "refused", exc.message
    end = result.expkit.spans[-1].end_of_turn
    if result.equal:
        return "equal", f"ends with {end}" + _unprompted(result.expkit)
    return "differs", "; ".join(result.rules) + _unprompted(result.expkit)


def _unprompted(spans: DerivedSpans) -> str:
    """The rule a cell names when the render does not continue the generation prompt before some turn."""
    return "; generation prompt not in training render" if any(s.unprompted for s in spans.spans) else ""


_REASONING = [
    {"role": "user", "content": "What is 6*7?"},
    {"role": "assistant", "reasoning_content": "Six sevens.", "content": "42"},
    {"role": "user", "content": "And 6*8?"},
    {"role": "assistant", "reasoning_content": "One more six.", "content": "48"},
]


@cache
def _extras(name: str) -> tuple[str, str, str]:
    """(tool call dropped?, where reasoning_content is rendered, check-stop's turn openers) of one family."""
    from expkit.finetune.dropped import find_dropped_fields
    from expkit.finetune.stopping import turn_openers

    fam = next(f for f in FAMILIES if f.name == name)
    plain = strip_generation_markers(fam.template)
    tool = _conversation(fam.template, "tool call")
    if isinstance(tool, str):
        drops = "not rendered"
    else:
        found = find_dropped_fields(partial(render_any, plain), tool, [1])
        drops = "drops " + ", ".join(sorted({d.field.split(".")[0] for d in found})) if found else "kept"
    try:
        gone = {d.turn for d in find_dropped_fields(partial(render_any, plain), _REASONING, [1, 3])}
        reasoning = (
            f"last turn {'dropped' if 3 in gone else 'rendered'}, earlier {'dropped' if 1 in gone else 'rendered'}"
        )
    except Exception as exc:  # noqa: BLE001 - a template that cannot render the reasoning conversation
        reasoning = f"not rendered ({type(exc).__name__})"
    tok, convs = _tokenizer(name)
    if not convs:
        return drops, reasoning, ""
    openers = " ".join(f"`{t}`" for t in tok.convert_ids_to_tokens(list(turn_openers(tok))))
    return drops, reasoning, openers


@cache
def _earlier_turns(name: str) -> str:
    """How an earlier assistant turn is trained: expkit's choice (in place, or in a row of its own where the template
    renders it otherwise as the last turn, in the multi-turn and the reasoning conversation) and TRL's."""
    from expkit.finetune.history import generated_text
    from expkit.finetune.spans import END_OF_TURN_STRINGS

    fam = next(f for f in FAMILIES if f.name == name)
    tok, convs = _tokenizer(name)
    if not convs:
        return "not rendered"
    builder, own = LabelBuilder(tok), []
    for label, msgs in (("multi-turn", convs.get("multi-turn")), ("reasoning", _REASONING)):
        try:
            if msgs is not None and builder.build(ChatExample(messages=tuple(msgs))).turn_rows:
                own.append(label)
        except InputError:  # a template that cannot render this conversation: nothing to train
            continue
    if not own:
        return "in place"
    cell = f"own row ({', '.join(own)})"
    if fam.trl_template is not None:  # TRL trains every turn in place, with its own training template
        stock = partial(render_any, strip_generation_markers(fam.template))
        trl = render_any(strip_generation_markers(fam.trl_template), _REASONING)
        as_last = generated_text(stock, _REASONING, 1, END_OF_TURN_STRINGS)
        kept = as_last is not None and as_last in trl
        cell += "; TRL: in place, " + ("as generated, earlier reasoning kept in context" if kept else "as in history")
    return cell


def _table() -> str:
    lines = [
        "| family | template | " + " | ".join(KINDS) + " | tool call fields | reasoning_content | earlier turns | "
        "check-stop: stops at, before |",
        "|---|---|" + "---|" * (len(KINDS) + 4),
    ]
    for fam in FAMILIES:
        cells = []
        for kind in KINDS:
            status, detail = _cell(fam.name, kind)
            detail = detail.replace("|", "\\|")
            cells.append(f"{status}: {detail}" if status != "not rendered" else f"not rendered ({detail})")
        drops, reasoning, openers = _extras(fam.name)
        tok, convs = _tokenizer(fam.name)
        eot = LabelBuilder(tok).end_of_turn.token if convs else None
        stop = f"`{eot}`, before {openers or 'any turn opener'}".replace("|", "\\|") if eot else "not rendered"
        cells += [drops, reasoning, _earlier_turns(fam.name), stop]
        lines.append(f"| {fam.name} | `{fam.source}` | " + " | ".join(cells) + " |")
    counts: dict[str, int] = {}
    for fam in FAMILIES:
        for kind in KINDS:
            s = _cell(fam.name, kind)[0]
            counts[s] = counts.get(s, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    rules = "\n".join(f"- **{rule}**: {meaning}" for rule, meaning in RULES.items())
    return (
        f"{len(FAMILIES)} families x {{one-turn, multi-turn (system + two turns), tool call}}: {summary}.\n"
        "expkit trains everything the model generates after the generation prompt: what the template renders between "
        "the prompt and the content, the content (and a tool call after it) and the family's own end-of-turn token; "
        "`differs` names the rules by which TRL's `{% generation %}` spans (`--match trl`) train more, or less "
        "(`after generation prompt`), and a cell names `generation prompt not in training render` where the "
        "rendered turn does not continue the generation prompt. `tool call fields`: whether the template renders a "
        "tool call's name and arguments (a template that drops them fails `sft audit` with `dropped_content`, "
        "`--allow-dropped` accepts it); `reasoning_content`: where the template renders it (a dropped one is named "
        "the same way); `earlier turns`: how expkit trains an assistant turn before the last: `in place` in the "
        "conversation's row when the template renders it as the model generates it, else `own row` (in a row of the "
        "conversation up to it, rendered as inference renders it, as Qwen's maintainers advise for multi-turn "
        "reasoning data; masked in the whole row), and where that differs, what TRL's training template does "
        "(`--match trl`); `check-stop`: the end-of-turn token a generation must reach before any token that opens "
        "a new turn (special tokens inside the turn, such as Command-R's `<|END_RESPONSE|>`, do not count):\n\n"
        f"{rules}\n\n" + "\n".join(lines)
    )


# refusals that are right: the template renders the conversation so that no label can teach the model to stop
RIGHT_REFUSALS = {
    ("command_r_plus_tool_use", "tool call"): "renders no end-of-turn token after assistant turn 1",  # Action block
}


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_no_family_is_refused_and_differences_are_named(fam: Family):
    for kind in KINDS:
        status, detail = _cell(fam.name, kind)
        if (fam.name, kind) in RIGHT_REFUSALS:
            assert status == "refused" and RIGHT_REFUSALS[fam.name, kind] in detail, detail
            continue
        assert status != "refused", f"{fam.name} {kind}: {detail}"
        rules = detail.split(";") if status == "differs" else detail.split(";")[1:]
        assert all(rule.strip() in RULES for rule in rules), detail


@pytest.mark.parametrize(("name", "template"), trl_training_templates(), ids=lambda v: v if len(v) < 60 else "")
def test_trl_training_templates_without_markers_are_not_refused(name: str, template: str):
    """TRL's training templates with the markers removed: expkit derives spans for every conversation they render."""
    plain = strip_generation_markers(template)
    assert not re.search(r"\{%-?\s*(end)?generation", plain)
    for kind in KINDS:
        msgs = _conversation(template, kind)
        if isinstance(msgs, str):
            continue
        spans = derive_assistant_spans(partial(render_template, plain), msgs)
        assert len(spans.spans) == sum(m["role"] == "assistant" for m in msgs)
        for s in spans.spans:  # the trained span ends exactly with the end-of-turn string
            assert spans.text[s.content_start : s.end].endswith(s.end_of_turn)


def test_the_table_counts_are_what_the_issue_asks():
    """refused = 0, and where expkit trains what TRL does not, the rule is named (no bare 'less than expkit')."""
    statuses = [_cell(f.name, k) for f in FAMILIES for k in KINDS if (f.name, k) not in RIGHT_REFUSALS]
    assert not [s for s in statuses if s[0] == "refused"]
    assert not [s for s in statuses if "less than expkit" in s[1]]
    assert sum(s[0] in ("equal", "differs", "expkit only") for s in statuses) >= 2 * len(FAMILIES)


def test_docs_table_is_current():
    text = DOCS.read_text()
    table = _table()
    if os.environ.get("EXPKIT_WRITE_DOCS") == "1":
        if BEGIN in text:
            head, rest = text.split(BEGIN, 1)
            text = head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n## Chat families\n\n" + BEGIN + "\n" + table + "\n" + END + "\n"
        DOCS.write_text(text)
    assert BEGIN in text and END in text, "run with EXPKIT_WRITE_DOCS=1 to add the families table"
    current = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    assert current == table, "docs/finetune.md's families table drifted: regenerate with EXPKIT_WRITE_DOCS=1"


# --- token level: the family's own end of turn is trained, with a tokenizer that has it as one token ---


@cache
def _tokenizer(name: str) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    fam = next(f for f in FAMILIES if f.name == name)
    convs = {k: m for k in KINDS if not isinstance(m := _conversation(fam.template, k), str)}
    convs = {k: m for k, m in convs.items() if (fam.name, k) not in RIGHT_REFUSALS}
    plain = strip_generation_markers(fam.template)
    texts, ends = [], []
    for msgs in convs.values():
        d = derive_assistant_spans(partial(render_any, plain), msgs)
        texts.append(d.text)
        ends.append(d.spans[-1].end_of_turn)
    # a template that renders no conversation (firefunction v2 reads variables HF never passes): a bare tokenizer
    tok = build_tokenizer(plain, texts or ["What is 2+3? 5"], eos=ends[0] if ends else "</s>")
    return tok, convs


def _skip_unrendered(convs: dict[str, Any]) -> None:
    if not convs:
        pytest.skip("the template renders none of the conversations (it reads variables HF never passes)")


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_end_of_turn_token_is_trained_at_token_level(fam: Family):
    tok, convs = _tokenizer(fam.name)
    _skip_unrendered(convs)
    builder = LabelBuilder(tok)
    assert len(tok.tokenize(builder.end_of_turn.token)) == 1
    for kind, msgs in convs.items():
        lab = builder.build(ChatExample(messages=tuple(msgs)))
        n_runs = 0
        for row in lab.rows:  # an earlier turn rendered otherwise as the last turn has a row of its own
            trained = [i for i, x in enumerate(row.labels) if x != IGNORE]
            assert trained, f"{kind}: nothing trained in the row of {row.turn}"
            run_ends = [i for i in trained if i + 1 == len(row.labels) or row.labels[i + 1] == IGNORE]
            n_runs += len(run_ends)
            for i in run_ends:  # every assistant turn's last trained token is one of the family's end-of-turn ids
                assert row.input_ids[i] in builder.end_of_turn.ids, (kind, tok.convert_ids_to_tokens(row.input_ids[i]))
            assert row.turn is not None or row.input_ids[run_ends[-1]] == builder.end_of_turn.id, kind
        assert n_runs == sum(m["role"] == "assistant" for m in msgs), kind


def test_a_template_that_never_ends_a_turn_is_refused_with_the_reason():
    never = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    msgs = conversations()["multi-turn"]
    with pytest.raises(InputError, match="no end-of-turn token after assistant turn 2"):
        derive_assistant_spans(partial(render_template, never), msgs)


def test_glm4_appends_the_end_of_turn_its_template_renders_only_in_history():
    """GLM-4's template renders nothing after the final assistant turn; <|user|> follows it in history."""
    fam = next(f for f in FAMILIES if f.name == "glm4_chat")
    msgs = conversations()["one-turn"]
    d = derive_assistant_spans(partial(render_template, fam.template), msgs)
    assert d.spans[-1].appended and d.text.endswith("5<|user|>") and d.spans[-1].end_of_turn == "<|user|>"


@pytest.mark.parametrize(
    ("name", "rules"),
    [  # read off the templates: Qwen3's stock render opens the final turn with an empty think block after the
        # generation prompt (both train it), and TRL's markers close after the newline following <|im_end|>;
        # gpt-oss' markers start at <|start|>assistant, the generation prompt ends there; GLM-4.5's prompt ends at
        # <|assistant|>, the render goes on with "\n<think></think>\n", which both train
        ("qwen3", ("trailing newline after end-of-turn",)),
        ("gptoss", ("role header",)),
        ("glm4moe", ()),
        ("llama3", ()),
        ("phi3", ("token after end-of-turn",)),
    ],
)
def test_named_rules_of_known_families(name: str, rules: tuple[str, ...]):
    fam = next(f for f in FAMILIES if f.name == name)
    assert fam.trl_template is not None
    assert compare_with_trl(fam.template, fam.trl_template, conversations()["one-turn"]).rules == rules


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_generation_config_stop_list_gets_the_family_end_of_turn(fam: Family):
    """A base-checkpoint generation_config that stops on another token (bos here) gets the trained end of turn."""
    from transformers import GenerationConfig

    from expkit.finetune.contract import enforce_stop_contract

    tok, convs = _tokenizer(fam.name)
    _skip_unrendered(convs)
    eot = LabelBuilder(tok).end_of_turn
    base = GenerationConfig(eos_token_id=tok.bos_token_id)
    contract = enforce_stop_contract(base, end_of_turn=eot, fix=True)
    assert contract.ok and eot.id in contract.eos_ids_after and tok.bos_token_id in contract.eos_ids_after
    assert not enforce_stop_contract(GenerationConfig(eos_token_id=tok.bos_token_id), end_of_turn=eot, fix=False).ok


@pytest.mark.parametrize(
    ("name", "trained", "unprompted"),
    [  # what the model must emit after the generation prompt, read off the templates' add_generation_prompt branches
        ("glm4_chat", "\n5<|user|>", ""),  # the prompt ends at <|assistant|>, the turn goes on with a newline
        ("gptoss", "<|channel|>final<|message|>5<|return|>", ""),  # the prompt ends at <|start|>assistant
        ("qwen3", "<think>\n\n</think>\n\n5<|im_end|>", ""),  # the stock render's empty think block
        ("llama3", "5<|eot_id|>", ""),
        ("deepseekv3", "5<\uff5cend\u2581of\u2581sentence\uff5c>", "<think>\n"),  # the prompt opens a think block
    ],
)
def test_the_trained_span_starts_where_the_generation_prompt_ends(name: str, trained: str, unprompted: str):
    fam = next(f for f in FAMILIES if f.name == name)
    render = partial(render_template, strip_generation_markers(fam.template))
    msgs = conversations()["one-turn"]
    d = derive_assistant_spans(render, msgs)
    s = d.spans[-1]
    assert d.text[s.start : s.end] == trained and s.unprompted == unprompted
    ask = render(msgs[:-1], add_generation_prompt=True)
    if not unprompted:  # the prompt plus the trained span is the training text: nothing untrained in between
        assert d.text.startswith(ask) and s.start == len(ask)
    else:  # the prompt is not continued: the model is asked for a prefix it never saw, and the audit says so
        assert not d.text.startswith(ask) and ask.endswith(unprompted) and s.start == s.content_start
        tok, _ = _tokenizer(name)
        audit = audit_labels(tokenizer=tok, examples=[ChatExample(messages=tuple(msgs))])
        named = [n for n in audit.notes if n.startswith("generation prompt not in training render")]
        assert named and repr(unprompted) in named[0], audit.notes
