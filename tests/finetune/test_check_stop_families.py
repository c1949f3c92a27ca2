"""check-stop per chat family (issue 24 item 6): a tiny causal LM, LoRA-trained briefly by ``expkit sft``'s own code
(``compare_eos_in_loss``: ``train_lora_sft`` twice, end of turn in the loss and masked, then ``check_stopping`` on
held-out prompts, greedy, with the family's end-of-turn token as the stop), for each family's real chat template and
a test tokenizer carrying the family's special tokens (``families.catalog.build_tokenizer``).

The task is a fixed mapping ("Q417: what does the cow say?" -> "moo"), so 60 steps of 8 conversations teach it.
The base model is ``expkit.perf.decode.build_tiny_decoder`` (Qwen2, 1 layer, width 64), randomly initialised with
weights of std 0.2: with transformers' default 0.02 the frozen tied embeddings cap every logit near 1, and LoRA
alone cannot make any token likely (the loss stays near ln(vocab)).

Regenerate the table in docs/finetune.md with
``EXPKIT_WRITE_DOCS=1 .venv/bin/python -m pytest tests/finetune/test_check_stop_families.py``.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
import warnings
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest
from families.catalog import Family, build_tokenizer, families

from expkit.finetune.chatdata import ChatExample
from expkit.finetune.conventions import render_template
from expkit.finetune.labels import LabelBuilder
from expkit.finetune.spans import derive_assistant_spans, strip_generation_markers
from expkit.finetune.stopping import EosContrast, StopQuery, compare_eos_in_loss
from expkit.finetune.training import SFTSettings

DOCS = Path(__file__).parents[2] / "docs" / "finetune.md"
BEGIN = "<!-- check-stop table: begin (written by tests/finetune/test_check_stop_families.py; do not edit by hand) -->"
END = "<!-- check-stop table: end -->"
FAMILIES_BEGIN_END = "<!-- families table: end -->"

SOUNDS = {
    "cat": "meow",
    "dog": "woof",
    "cow": "moo",
    "duck": "quack",
    "owl": "hoot",
    "bee": "buzz",
    "lion": "roar",
    "sheep": "baa",
    "frog": "ribbit",
    "mouse": "squeak",
}
N_TRAIN, N_HELD_OUT = 200, 100
SETTINGS = SFTSettings(
    steps=60,
    batch_size=8,
    learning_rate=1e-2,
    lr_scheduler="constant",
    lora_r=8,
    lora_alpha=16,
    num_threads=1,
    seed=0,
)
QUERY = StopQuery(n=N_HELD_OUT, max_new_tokens=12, min_stop_rate=0.99, batch_size=N_HELD_OUT, num_threads=1)
MODEL = {
    "hidden_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
    "rope_theta": 10000.0,
    "initializer_range": 0.2,
}

# Families whose stop test passes, and the ones that do not with expkit's default spans (why: read off the outputs).
PASSING = (
    "qwen2_5",
    "qwen3_instruct_2507",
    "llama3",
    "llama4",
    "gemma3",
    "mistral_v3",
    "mistral_tekken",
    "phi3",
    "phi4",
    "smollm3",
    "glm4_chat",  # passes since the span starts at the end of the generation prompt (the newline after <|assistant|>)
)
KNOWN_FAILING = {
    "deepseekv3": "the generation prompt opens a think block (<think> and a newline) that the rendered training "
    "turns never contain, so held-out prompts are off the trained distribution (the audit names it: generation "
    "prompt not in training render)",
    "gptoss": "expkit now trains the harmony header <|channel|>final<|message|> that follows the generation prompt, "
    "and every answer is non-empty (it was empty on every prompt), but 60 steps leave a few prompts going on with "
    "<|channel|> after the answer instead of <|return|>: stops on fewer than 99%",
}
# Known failures whose outcome varies from run to run, so a strict xfail would fail the suite when they pass
# (issue 36: the gpt-oss row XPASSed under load). Its stop rate sits at the 0.99 mark: a few of 100 greedy rows go
# on with <|channel|>, and which few moves with the thread count and load (float sums in another order).
VARIES = {
    "gptoss": "non-strict: the stop rate sits at the 0.99 mark (a few of 100 rows go on with <|channel|> after the "
    "answer) and crossed it under load (XPASS, issue 36), so the outcome is not deterministic",
}
ALL = (*PASSING, *KNOWN_FAILING)
_BY_NAME = {f.name: f for f in families()}


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("transformers").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning)


def _conversations(n: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[ChatExample]:
    """``n`` distinct one-turn conversations of the animal-sound mapping, none of whose question is in ``exclude``."""
    rng = random.Random(seed)
    seen: set[str] = set(exclude)
    out = []
    while len(out) < n:
        animal = rng.choice(sorted(SOUNDS))
        question = f"Q{rng.randint(0, 999)}: what does the {animal} say?"
        if question in seen:
            continue
        seen.add(question)
        out.append(
            ChatExample(
                messages=({"role": "user", "content": question}, {"role": "assistant", "content": SOUNDS[animal]})
            )
        )
    return out


def _questions(examples: list[ChatExample]) -> frozenset[str]:
    return frozenset(ex.messages[0]["content"] for ex in examples)


def _model_dir(
    fam: Family, train: list[ChatExample], out: Path, *, save_model: bool = True, trl_template: bool = False
) -> Any:
    """A tiny random Qwen2 and a BPE tokenizer trained on the family's renders of ``train``, with its template (TRL's
    training template, ``{% generation %}`` markers kept, with ``trl_template``), saved to ``out`` (returned);
    without ``save_model``, only the tokenizer is built (returned)."""
    from expkit.perf.decode import build_tiny_decoder

    plain = strip_generation_markers(fam.template)
    derived = [derive_assistant_spans(partial(render_template, plain), list(ex.messages)) for ex in train]
    template = fam.trl_template if trl_template and fam.trl_template else plain
    tok = build_tokenizer(template, [d.text for d in derived], eos=derived[0].spans[-1].end_of_turn)
    if not save_model:
        return tok
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    model = build_tiny_decoder(config={**MODEL, **ids, "vocab_size": len(tok)}, seed=0)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@dataclass(frozen=True)
class FamilyStop:
    """One family's contrast and what it cost (``wall_s`` on this machine, ``cpu_s`` of this process)."""

    name: str
    end_of_turn: str
    contrast: EosContrast
    wall_s: float
    cpu_s: float

    @property
    def answered(self) -> float:
        """Share of held-out prompts (EOT in the loss) with a non-empty answer before the stop."""
        cases = self.contrast.with_eos.cases
        return sum(bool(c.generated.strip()) for c in cases) / len(cases)


@cache
def _measure(name: str, root: Path) -> FamilyStop:
    t0, c0 = time.perf_counter(), time.process_time()
    train = _conversations(N_TRAIN, seed=0)
    held_out = _conversations(N_HELD_OUT, seed=1, exclude=_questions(train))
    model_dir = _model_dir(_BY_NAME[name], train, root / name / "model")
    contrast = compare_eos_in_loss(
        model_dir=model_dir,
        train=train,
        held_out=held_out,
        out_dir=root / name / "sft",
        settings=SETTINGS,
        record=False,
        query=QUERY,
    )
    from expkit.finetune.labels import load_chat_tokenizer

    eot = LabelBuilder(load_chat_tokenizer(model_dir)).end_of_turn.token
    return FamilyStop(name, eot, contrast, time.perf_counter() - t0, time.process_time() - c0)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("check_stop_families")


def test_held_out_prompts_are_not_training_prompts():
    train = _conversations(N_TRAIN, seed=0)
    held_out = _conversations(N_HELD_OUT, seed=1, exclude=_questions(train))
    assert len(_questions(held_out)) == N_HELD_OUT and not _questions(held_out) & _questions(train)


def test_a_token_joining_the_template_separator_and_the_content_is_trained(tmp_path: Path):
    """Mistral renders "[/INST] moo</s>": byte-level BPE makes " moo" one token, which starts on the template's
    space. It is the model's first output token after the generation prompt "[/INST]", so it is trained (it was
    masked, and the model never learned the answer: only </s> was in the loss)."""
    train = _conversations(N_TRAIN, seed=0)
    tok = _model_dir(_BY_NAME["mistral_v3"], train, tmp_path / "m", save_model=False)
    builder, joined = LabelBuilder(tok), 0
    for ex in train:
        lab = builder.build(ex)
        trained = [t for t, label in zip(lab.input_ids, lab.labels, strict=True) if label != -100]
        assert tok.decode(trained).lstrip(" ") == ex.messages[1]["content"] + "</s>", tok.decode(trained)
        joined += tok.convert_ids_to_tokens(trained[0]).startswith("\u0120")  # byte-level BPE's space
    assert joined, "no answer token starts on the template's space: the case this test is about did not occur"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        *PASSING,
        *(
            pytest.param(n, marks=pytest.mark.xfail(strict=n not in VARIES, reason=VARIES.get(n, why)))
            for n, why in KNOWN_FAILING.items()
        ),
    ],
)
def test_the_model_stops_when_the_end_of_turn_is_trained_and_not_when_masked(name: str, root: Path):
    m = _measure(name, root)
    with_eos, without = m.contrast.with_eos, m.contrast.without_eos
    assert without.stop_rate <= 0.5 and not without.passed, f"{name}: masked end of turn, stop {without.stop_rate}"
    assert with_eos.passed and with_eos.stop_rate >= 0.99, (
        f"{name}: stop {with_eos.stop_rate:.2f} with the end of turn in the loss; e.g. {with_eos.cases[0].generated!r}"
    )
    # a stop must end an answer: a model that emits the end of turn at once "stops" on every prompt
    assert m.answered >= 0.9, f"{name}: {m.answered:.0%} non-empty answers, e.g. {with_eos.cases[0].generated!r}"


def _code(text: str) -> str:
    """Special tokens in backticks, so that markdown shows ``<|return|>`` instead of swallowing it as HTML."""
    return re.sub(r"(<[^<>\s]+>(?:final<[^<>\s]+>)?)", r"`\1`", text)


def _table(rows: list[FamilyStop]) -> str:
    lines = [
        "| family | end of turn | stop, EOT in loss | stop, EOT masked | answer right (EOT in loss) | "
        "non-empty answer | last loss (in / masked) | wall s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        w, wo = r.contrast.with_eos, r.contrast.without_eos
        eot = r.end_of_turn.replace("|", "\\|")  # a bare | would end the table cell
        lines.append(
            f"| {r.name} | `{eot}` | {w.stop_rate:.0%} | {wo.stop_rate:.0%} | {w.answer_accuracy:.0%} | "
            f"{r.answered:.0%} | {r.contrast.losses_with_eos[-1]:.2f} / {r.contrast.losses_without_eos[-1]:.2f} | "
            f"{r.wall_s:.0f} | {r.cpu_s:.0f} |"
        )
    notes = "\n".join(f"- **{n}** (expected to fail): {_code(why)}." for n, why in KNOWN_FAILING.items())
    s = SETTINGS
    return (
        f"{N_HELD_OUT} held-out prompts per family, greedy, at most {QUERY.max_new_tokens} new tokens; LoRA r "
        f"{s.lora_r} on every linear layer of a 1-layer width-64 random Qwen2, {s.steps} steps of {s.batch_size} of "
        f"{N_TRAIN} conversations, lr {s.learning_rate:g}. Times: one run, with `torch` on 1 thread, on the machine "
        "that wrote the table (shared, so wall time varies).\n\n" + "\n".join(lines) + "\n\n" + notes
    )


@pytest.mark.slow
def test_docs_table(root: Path):
    """The table beside the families table: written with EXPKIT_WRITE_DOCS=1, else its rows are checked."""
    text = DOCS.read_text()
    if os.environ.get("EXPKIT_WRITE_DOCS") == "1":
        table = _table([_measure(n, root) for n in ALL])
        section = BEGIN + "\n" + table + "\n" + END
        if BEGIN in text:
            head, rest = text.split(BEGIN, 1)
            text = head + section + rest.split(END, 1)[1]
        else:
            assert FAMILIES_BEGIN_END in text, "write the families table first (tests/finetune/test_families.py)"
            head, rest = text.split(FAMILIES_BEGIN_END, 1)
            text = head + FAMILIES_BEGIN_END + "\n\n### Does it stop, per family\n\n" + section + rest
        DOCS.write_text(text)
    assert BEGIN in text and END in text, "run with EXPKIT_WRITE_DOCS=1 to add the check-stop table"
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    listed = [line.split("|")[1].strip() for line in body.splitlines() if line.startswith("| ")][1:]
    assert listed == list(ALL), "docs/finetune.md's check-stop table lists other families: regenerate it"


@pytest.mark.slow
def test_check_stop_counts_the_harmony_header_as_part_of_the_answer(tmp_path: Path):
    """Trained with TRL's gpt-oss training template (its markers train the role header
    ``<|start|>assistant<|channel|>final<|message|>``), the model emits ``<|channel|>final<|message|>`` before its
    answer, as gpt-oss does: special tokens the template renders in the answer's own turn, not a hallucinated next
    turn (check-stop counted such a row as not stopped, and compared the header with the expected answer)."""
    from expkit.finetune.stopping import check_stopping
    from expkit.finetune.training import train_lora_sft

    train = _conversations(N_TRAIN, seed=0)
    held_out = _conversations(N_HELD_OUT, seed=1, exclude=_questions(train))
    model_dir = _model_dir(_BY_NAME["gptoss"], train, tmp_path / "model", trl_template=True)
    r = train_lora_sft(model_dir=model_dir, examples=train, out_dir=tmp_path / "sft", settings=SETTINGS, record=False)
    check = check_stopping(model_dir=model_dir, adapter_dir=r.adapter_dir, examples=held_out, query=QUERY)
    from expkit.finetune.labels import load_chat_tokenizer

    header = len(load_chat_tokenizer(model_dir)("<|channel|>final<|message|>", add_special_tokens=False)["input_ids"])
    assert check.stop_rate >= 0.99, [c.generated for c in check.cases[:3]]
    # the header is not taken for the answer (it was: answer accuracy 0); 60 steps teach the mapping only in part
    assert check.answer_accuracy >= 0.2, [c.generated for c in check.cases[:3]]
    # every row emitted the header, an answer and the end of turn
    assert min(c.generated_tokens for c in check.cases) >= header + 2
