"""Issue 35 on real chat templates (``families/outside.py``: published templates and TRL's copies, 52 cases split
26 dev / 26 held-out before the code was written): tool calls go through the reader and the audit with ``tools=``,
each trained assistant turn is exactly what an independent computation says the model generates there, and every
field a template drops is named.

The independent computation: for assistant turn ``i``, the text the template adds between
``render(messages[:i], add_generation_prompt=True)`` and ``render(messages[:i + 1])``, through the first end-of-turn
string (the model's output at that point), compared with the tokens the audit trains for that turn. A dropped field
is found by rendering the conversation with the field's value changed to another real value: the same text means
the template drops it (the audit finds drops with sentinels inside the render, a different computation).
"""

from __future__ import annotations

import json
import logging
import re
from functools import cache
from typing import Any

import pytest
from families.catalog import build_tokenizer
from families.outside import conversation, split, template_text

from expkit.errors import InputError
from expkit.finetune.chatdata import ChatExample, read_chat_file
from expkit.finetune.conventions import render_template
from expkit.finetune.labels import IGNORE, audit_labels, load_chat_tokenizer
from expkit.finetune.spans import END_OF_TURN_STRINGS, strip_generation_markers

SPLIT = split()
SPLIT_2 = split(second=True)  # the second round's split, committed before that round's code changes


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("transformers").setLevel(logging.ERROR)


def _example(kind: str, tmp_path) -> ChatExample:
    msgs, tools = conversation(kind)
    path = tmp_path / f"{kind}.jsonl"
    path.write_text(json.dumps({"messages": msgs, **({"tools": tools} if tools else {})}) + "\n")
    return read_chat_file(path).examples[0]  # the CLI's reader: null content of a tool call becomes ""


def _render(template: str, messages: list[dict[str, Any]], tools: Any, gen: bool = False) -> str:
    try:
        return render_template(template, messages, tools=tools, add_generation_prompt=gen)
    except Exception:
        if tools is not None:
            raise
        return render_template(template, messages, tools=[], add_generation_prompt=gen)


def _changed(msg: dict[str, Any], field: str) -> dict[str, Any]:
    """The message with a field's value changed to another real value."""
    if field == "reasoning_content":
        return {**msg, "reasoning_content": "A different line of thought."}
    call = dict(msg["tool_calls"][0])
    fn = dict(call["function"])
    if field == "tool_calls.name":
        fn["name"] = "get_time"
    else:
        fn["arguments"] = {"city": "Bergen"}
    return {**msg, "tool_calls": [{**call, "function": fn}]}


def expected_drops(template: str, ex: ChatExample, own_rows: set[int] = frozenset()) -> set[tuple[int, str]]:
    """The fields each assistant turn loses in the render it is trained in: the whole conversation, or for a turn
    in ``own_rows`` the conversation up to it."""
    msgs, tools = [dict(m) for m in ex.messages], ex.tool_list
    out = set()
    for i, m in enumerate(msgs):
        fields = (["reasoning_content"] if m.get("reasoning_content") else []) + (
            ["tool_calls.name", "tool_calls.arguments"] if m.get("tool_calls") else []
        )
        context = msgs[: i + 1] if i in own_rows else msgs
        base = _render(template, context, tools) if fields else ""
        for field in fields:
            if _render(template, [*context[:i], _changed(m, field), *context[i + 1 :]], tools) == base:
                out.add((i, field))
    return out


def expected_own_rows(template: str, ex: ChatExample) -> set[int]:
    """The earlier assistant turns whose text as the last turn (what the model generates), after the generation
    prompt's text that follows the previous message, is not in the render of the whole conversation: the template
    renders them otherwise in history (Qwen3's think block), or after another prompt (Nemotron Nano v2's history
    lacks the prompt's "<think>\n")."""
    msgs, tools = [dict(m) for m in ex.messages], ex.tool_list
    full = _render(template, msgs, tools)
    out = set()
    for i in [i for i, m in enumerate(msgs) if m["role"] == "assistant"][:-1]:
        want = expected_turn_text(template, ex, i)
        if want is None:
            continue
        ask, before = _render(template, msgs[:i], tools, gen=True), msgs[i - 1].get("content")
        tail = ask[ask.rindex(before) + len(before) :] if isinstance(before, str) and before and before in ask else ""
        if tail + want not in full:
            out.add(i)
    return out


def expected_turn_text(template: str, ex: ChatExample, i: int) -> str | None:
    """What the model generates for assistant turn i after the generation prompt, through the end of turn
    (None: the render of the turn does not continue the prompt, no independent answer). A family whose end of turn
    is not among the known strings (Seed-OSS' <seed:eos>, Nemotron Nano v2's <SPECIAL_12>): all the render adds
    after the prompt, whitespace after the last token left out."""
    msgs, tools = [dict(m) for m in ex.messages], ex.tool_list
    ask = _render(template, msgs[:i], tools, gen=True)
    full = _render(template, msgs[: i + 1], tools)
    if not full.startswith(ask):
        return None
    ends = [(p, e) for e in END_OF_TURN_STRINGS if (p := full.find(e, len(ask))) >= 0]
    if not ends:
        return full[len(ask) :].rstrip() or None
    p, e = min(ends)
    return full[len(ask) : p + len(e)]


def _no_end_of_turn_after(template: str, ex: ChatExample, i: int) -> bool:
    """The render has no end-of-turn string between assistant turn i (its tool call's name, or its content) and the
    next message's content (Command R+ tool use renders a tool call's Action block and goes on with the next turn)."""
    full = _render(template, [dict(m) for m in ex.messages], ex.tool_list)
    msg = ex.messages[i]
    nxt = ex.messages[i + 1].get("content") if i + 1 < len(ex.messages) else None
    stop = full.find(nxt) if isinstance(nxt, str) and nxt else len(full)
    mark = msg["tool_calls"][0]["function"]["name"] if msg.get("tool_calls") else msg.get("content") or ""
    start = full.rfind(mark, 0, stop) if mark else -1
    return start >= 0 and not any(e in full[start:stop] for e in END_OF_TURN_STRINGS)


def _trained_runs(tok: Any, lab: Any) -> list[str]:
    runs, cur = [], []
    for t, y in zip(lab.input_ids, lab.labels, strict=True):
        if y != IGNORE:
            cur.append(t)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    if cur:
        runs.append(tok.decode(cur))
    return runs


@cache
def _tokenizer(name: str, texts: tuple[str, ...]) -> Any:
    return build_tokenizer(strip_generation_markers(template_text(name)), list(texts), eos="</s>")


def judge(case: str, tmp_path) -> tuple[bool, str]:
    """(passed, why) for one outside case."""
    from expkit.finetune.labels import LabelBuilder

    name, kind = case.split("/")
    template = strip_generation_markers(template_text(name))
    ex = _example(kind, tmp_path)
    try:
        texts = [_render(template, list(ex.messages), ex.tool_list)]
    except Exception as exc:  # noqa: BLE001 - the template's own refusal: the audit must refuse with exit 2
        try:
            one = _render(template, conversation("one-turn")[0], None)
        except Exception as first:  # noqa: BLE001 - it renders no conversation at all (a variable HF never passes)
            tok = _tokenizer(name, ("What is 2+3? 5",))
            tok.save_pretrained(tmp_path / "tok")
            with pytest.raises(InputError, match="the chat template does not render"):
                load_chat_tokenizer(tmp_path / "tok")
            return True, f"refused when loaded: the template renders nothing ({str(first)[:40]})"
        tok = _tokenizer(name, (one,))
        with pytest.raises(InputError, match="refuses this conversation"):
            audit_labels(tokenizer=tok, examples=[ex])
        return True, f"refused by the template ({str(exc)[:40]})"
    assistant = [i for i, m in enumerate(ex.messages) if m["role"] == "assistant"]
    texts += [_render(template, list(ex.messages[:i]), ex.tool_list, gen=True) for i in assistant]
    own_rows = expected_own_rows(template, ex)
    texts += [_render(template, list(ex.messages[: i + 1]), ex.tool_list) for i in sorted(own_rows)]
    tok = _tokenizer(name, tuple(texts))
    try:
        audit = audit_labels(tokenizer=tok, examples=[ex])
    except InputError as exc:  # refused: right only when the render has no end of turn after that turn
        m = re.search(r"renders no end-of-turn token after assistant turn (\d+)", exc.message)
        if m and _no_end_of_turn_after(template, ex, int(m[1])):
            return True, f"refused: no end of turn after turn {m[1]} (none in the render either)"
        raise
    want_drops = expected_drops(template, ex, own_rows)
    got = {
        (int(p.message.split("of message ")[1].split(" ")[0]), p.message.split(" drops ")[1].split(" of message")[0])
        for p in audit.problems
        if p.check == "dropped_content"
    }
    got = {
        (t, "tool_calls.name" if ".name" in f else "tool_calls.arguments" if ".arguments" in f else f) for t, f in got
    }
    if got != want_drops:
        return False, f"drops named {sorted(got)} != {sorted(want_drops)}"
    others = [p for p in audit.problems if p.check != "dropped_content"]
    if others:
        return False, f"problems {[p.check for p in others]}"
    lab = LabelBuilder(tok).build(ex)
    got_rows = {r.turn for r in lab.turn_rows}
    if got_rows != own_rows:
        return False, f"turns in rows of their own {sorted(got_rows)} != {sorted(own_rows)}"
    trained: dict[int, str] = {}
    for row in lab.turn_rows:  # the conversation up to the turn, as inference renders it; that turn alone trained
        context = _render(template, list(ex.messages[: row.turn + 1]), ex.tool_list)
        if not tok.decode(list(row.input_ids)).startswith(context):
            return False, f"the row of turn {row.turn} is not the render of the conversation up to it"
        runs = _trained_runs(tok, row)
        if len(runs) != 1:
            return False, f"the row of turn {row.turn} trains {len(runs)} runs"
        trained[row.turn or 0] = runs[0]
    in_place = [i for i in assistant if i not in own_rows]
    runs = _trained_runs(tok, lab)
    if len(runs) != len(in_place):
        return False, f"{len(runs)} trained runs for {len(in_place)} assistant turns in the conversation's row"
    trained.update(zip(in_place, runs, strict=True))
    unchecked = 0
    for i in assistant:  # every turn, earlier ones included, is trained as the model generates it
        want = expected_turn_text(template, ex, i)
        unchecked += want is None
        if want is not None and trained[i] != want:
            return False, f"turn {i}: trained {trained[i]!r} != {want!r}"
    checked = f"exact on {len(assistant) - unchecked}/{len(assistant)} turns"
    checked += f" ({len(own_rows)} in rows of their own)" if own_rows else ""
    checked += f", {unchecked} without an independent answer" if unchecked else ""
    return True, checked + (f"; drops named {sorted(want_drops)}" if want_drops else "")


@pytest.mark.parametrize("case", SPLIT["dev"])
def test_outside_dev_case(case, tmp_path):
    ok, why = judge(case, tmp_path)
    assert ok, why


@pytest.mark.parametrize("case", SPLIT["held_out"])
def test_outside_held_out_case(case, tmp_path):
    """Scored once after the code was written on dev (26/26 at the first run); kept as a regression test."""
    ok, why = judge(case, tmp_path)
    assert ok, why


@pytest.mark.parametrize("case", SPLIT_2["dev"])
def test_second_round_dev_case(case, tmp_path):
    """The second round's dev half (12 more published templates): what the code was fixed on."""
    ok, why = judge(case, tmp_path)
    assert ok, why


@pytest.mark.parametrize("case", SPLIT_2["held_out"])
def test_second_round_held_out_case(case, tmp_path):
    """Scored once after the code was fixed on the second round's dev half: 21/24 at that run. Two tracebacks (a
    TypeError raised inside DeepSeek-V3.1's and functionary v3.2's templates, which concatenate a tool call's
    arguments object to a string, was not taken for the template's refusal: exit 3) and one refusal the judge did
    not expect (Command R+ tool use renders no end of turn after a tool call: exit 2, right); fixed after the score
    and kept as regression tests."""
    ok, why = judge(case, tmp_path)
    assert ok, why


def test_an_error_raised_in_the_template_code_is_a_refusal_exit_2_not_a_traceback(tmp_path, cli):
    """DeepSeek-V3.1's template concatenates tool_calls[].function.arguments to a string: with an arguments object
    it raises TypeError inside the template. That is the template refusing this data (exit 2, with a hint), not an
    expkit bug (it was exit 3 with a traceback)."""
    name = "deepseek_v3_1"
    template = strip_generation_markers(template_text(name))
    tok = _tokenizer(name, (_render(template, conversation("one-turn")[0], None),))
    tok.save_pretrained(tmp_path / "model")
    _example("tool call", tmp_path)
    res = cli("sft", "audit", "--model", str(tmp_path / "model"), "--data", str(tmp_path / "tool call.jsonl"))
    assert res.exit_code == 2, res.stdout + res.stderr
    assert "TypeError in the template" in res.stderr and "JSON string" in res.stderr, res.stderr
    assert "Traceback" not in res.stdout + res.stderr


# --- through the CLI: `sft audit` on tool-call conversations, with the real templates --------------------------

TOOL_FAMILIES = ("llama3_2_3b_tools", "hermes3_tool_use", "trl_qwen2_5", "trl_qwen3", "mistral_small3_2")
TOOL_FAMILIES += ("command_r7b_tool_use",)
DROPPING = {  # the templates that render a tool-call turn as its end of turn alone, and the family the audit names
    "granite3_3_2b": "Granite",
    "smollm2": "ChatML (Qwen, SmolLM, Hermes)",
    "olmo2": "Tulu (OLMo 2, Zephyr)",
    "phi4_mini": "Phi-3/Phi-4-mini",
}


def _model_and_data(name: str, tmp_path) -> tuple[str, str, ChatExample]:
    template = strip_generation_markers(template_text(name))
    ex = _example("tool call", tmp_path)
    assistant = [i for i, m in enumerate(ex.messages) if m["role"] == "assistant"]
    texts = [_render(template, list(ex.messages), ex.tool_list)]
    texts += [_render(template, list(ex.messages[:i]), ex.tool_list, gen=True) for i in assistant]
    tok = _tokenizer(name, tuple(texts))
    tok.save_pretrained(tmp_path / "model")
    return str(tmp_path / "model"), str(tmp_path / "tool call.jsonl"), ex


@pytest.mark.parametrize("name", TOOL_FAMILIES)
def test_tool_calls_go_through_sft_audit_and_their_tokens_are_exact(name, tmp_path, cli):
    """Before: a tool-call turn with null content was refused (exit 2) and `tools` was ignored."""
    model, data, ex = _model_and_data(name, tmp_path)
    res = cli("sft", "audit", "--model", model, "--data", data, "--max-length", "8192", "--show", "1", "--json")
    assert res.exit_code == 0, res.stdout + res.stderr
    audit = json.loads(res.stdout)["result"]["audit"]
    assert audit["problems"] == []
    runs = []  # the rows of example 0: an earlier turn's own row first (Qwen3's tool call), then the conversation
    for view in audit["shown"]:
        cur = ""
        for text, trained in view["tokens"]:
            if trained:
                cur += text
            elif cur:
                runs.append(cur)
                cur = ""
        runs += [cur] if cur else []
    template = strip_generation_markers(template_text(name))
    want = expected_turn_text(template, ex, 1)  # the tool-call turn, from the renders with and without it
    assert want is not None and "get_weather" in want and "Oslo" in want
    assert runs[0] == want, (runs[0], want)  # in place, or first in its own row (Qwen3: the empty think block)
    final = expected_turn_text(template, ex, 3)  # None: the render before the last turn is not its prefix (Hermes)
    assert len(runs) == 2 and final in (None, runs[1])


@pytest.mark.parametrize("name", sorted(DROPPING))
def test_a_template_that_drops_the_tool_call_fails_the_audit_naming_family_field_turn(name, tmp_path, cli):
    """Before: the turn was trained as its end-of-turn token alone, and the audit said nothing."""
    model, data, _ = _model_and_data(name, tmp_path)
    res = cli("sft", "audit", "--model", model, "--data", data, "--max-length", "8192")
    assert res.exit_code == 1, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("FAIL dropped_content"))
    assert f"the {DROPPING[name]} chat template drops tool_calls[0].function.name of message 1" in line
    assert "dropped_content" in res.stderr
    res = cli("sft", "audit", "--model", model, "--data", data, "--max-length", "8192", "--allow-dropped")
    assert res.exit_code == 0 and "note: --allow-dropped: the" in res.stdout, res.stdout


def test_match_trl_and_packing_pass_the_tools(tmp_path, cli):
    """TRL's training template for Qwen 2.5 (its {% generation %} markers) trains the tool call too, and packing
    keeps each conversation's trained tokens."""
    from expkit.finetune.labels import LabelBuilder, load_chat_tokenizer
    from expkit.finetune.packing import pack_labelled, trained_tokens_per_conversation

    model, data, ex = _model_and_data("trl_qwen2_5", tmp_path)
    res = cli(
        "sft",
        "audit",
        "--model",
        model,
        "--data",
        data,
        "--max-length",
        "8192",
        "--match",
        "trl",
        "--show",
        "1",
        "--json",
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    trained = "".join(t for t, k in json.loads(res.stdout)["result"]["audit"]["shown"][0]["tokens"] if k)
    assert '"name": "get_weather", "arguments": {"city": "Oslo"}' in trained
    builder = LabelBuilder(load_chat_tokenizer(model))
    labelled = [builder.build(ex, index=i) for i in range(3)]
    rows = pack_labelled(labelled, max_length=4 * len(labelled[0].input_ids))
    want = sorted(t for t, y in zip(labelled[0].input_ids, labelled[0].labels, strict=True) if y != IGNORE)
    assert trained_tokens_per_conversation(rows)[0] == want
