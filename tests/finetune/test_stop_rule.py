"""check-stop's stop rule (issue 35 item 4) with scripted generations: the family's end of turn before any token
that opens a new turn is a stop; special tokens inside the turn (Command-R's <|END_RESPONSE|>) are part of it; and
--min-accuracy judges the answers. A scripted model returns fixed continuations, so the verdicts are exact."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from families.catalog import build_tokenizer, families, render_any
from families.outside import template_text

from expkit.finetune.chatdata import ChatExample
from expkit.finetune.spans import strip_generation_markers
from expkit.finetune.stopping import Generator, StopQuery, check_stopping, turn_openers


class _Scripted:
    """A stand-in for a causal LM: ``generate`` appends the scripted continuation of each row."""

    def __init__(self, tok, continuations: list[str]):
        self.ids = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        self.pad = tok.pad_token_id

    def generate(self, *, input_ids, max_new_tokens, eos_token_id, **_):
        import torch

        rows = []
        for prompt, cont in zip(input_ids.tolist(), self.ids, strict=True):
            cut = next((k + 1 for k, t in enumerate(cont) if t in eos_token_id), len(cont))  # stops at the eos
            new = cont[: min(cut, max_new_tokens)]
            rows.append(prompt + new + [self.pad] * (max_new_tokens - len(new)))
        return torch.tensor(rows)


def _template(name: str) -> str:
    fam = {f.name: f for f in families()}
    return strip_generation_markers(template_text(name) if name not in fam else fam[name].template)


def _tok(name: str):
    logging.getLogger("transformers").setLevel(logging.ERROR)
    template = _template(name)
    msgs = [
        {"role": "user", "content": "What does the cow say?"},
        {"role": "assistant", "content": "moo"},
        {"role": "user", "content": "And the dog?"},
        {"role": "assistant", "content": "woof"},
    ]
    texts = [render_any(template, msgs), render_any(template, msgs[:1], add_generation_prompt=True)]
    return build_tokenizer(template, texts, eos="</s>")


HELD = [
    ChatExample(
        messages=({"role": "user", "content": "What does the cow say?"}, {"role": "assistant", "content": "moo"})
    )
]


def _check(tok, continuations: list[str], **query) -> object:
    gen = Generator(model=_Scripted(tok, continuations), tokenizer=tok, config_dir=Path("/nonexistent-dir"))
    return check_stopping(
        model_dir="unused",
        examples=HELD * len(continuations),
        loaded=gen,
        query=StopQuery(n=len(continuations), max_new_tokens=16, **query),
    )


@pytest.mark.parametrize("name", ["cohere2", "command_r7b_tool_use"])
def test_command_r_end_response_before_the_end_of_turn_is_a_stop(name):
    """Before: every generation ending <|END_RESPONSE|><|END_OF_TURN_TOKEN|> was read as a new turn (stop rate 0)."""
    tok = _tok(name)
    assert tok.convert_ids_to_tokens(list(turn_openers(tok))) == ["<|START_OF_TURN_TOKEN|>"]
    check = _check(tok, ["moo<|END_RESPONSE|><|END_OF_TURN_TOKEN|>"] * 3)
    assert check.stop_rate == 1.0 and check.passed and check.answer_accuracy == 1.0


@pytest.mark.parametrize(
    ("name", "hallucinated"),
    [
        ("cohere2", "moo<|END_RESPONSE|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>hi<|END_OF_TURN_TOKEN|>"),
        ("qwen2_5", "moo<|im_start|>user\nhi<|im_end|>"),
        ("llama3", "moo<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"),
    ],
)
def test_an_end_of_turn_after_a_new_turn_header_is_not_a_stop(name, hallucinated):
    tok = _tok(name)
    eot = {"cohere2": "<|END_RESPONSE|><|END_OF_TURN_TOKEN|>", "qwen2_5": "<|im_end|>", "llama3": "<|eot_id|>"}[name]
    check = _check(tok, [hallucinated, "moo" + eot])
    assert [c.stopped for c in check.cases] == [False, True]
    assert check.stop_rate == 0.5 and not check.passed and check.failed == ("stop rate",)


def test_min_accuracy_fails_a_model_that_stops_but_answers_wrong():
    """Before: stop rate 1.00 with answer accuracy 0.07 passed; accuracy was printed, not judged."""
    tok = _tok("qwen2_5")
    wrong = _check(tok, ["woof<|im_end|>"] * 4, min_accuracy=0.5)
    assert wrong.stop_rate == 1.0 and wrong.answer_accuracy == 0.0
    assert not wrong.passed and wrong.failed == ("answer accuracy",)
    assert _check(tok, ["woof<|im_end|>"] * 4).passed  # without --min-accuracy the answers are not judged
    right = _check(tok, ["moo<|im_end|>"] * 4, min_accuracy=0.5)
    assert right.passed and right.failed == ()


def test_the_verdict_names_what_failed():
    from expkit.render.sft import stop_verdict

    tok = _tok("qwen2_5")
    line = stop_verdict(_check(tok, ["woof<|im_end|>", "woof<|im_start|>user\nx<|im_end|>"], min_accuracy=0.5))
    assert line.startswith("check-stop failed on stop rate and answer accuracy: stop rate 50%")
    assert "answer accuracy 0% (below --min-accuracy 50%)" in line and "(below --min-stop-rate 90%)" in line
