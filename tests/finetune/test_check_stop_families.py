"""check-stop per chat family (issue 24 item 6): a tiny causal LM, LoRA-trained briefly by ``expkit sft``'s own code
(``compare_eos_in_loss``: ``train_lora_sft`` twice, end of turn in the loss and masked, then ``check_stopping`` on
held-out prompts, greedy, with the family's end-of-turn token as the stop), for each family's real chat template and
a test tokenizer carrying the family's special tokens (``families.catalog.build_tokenizer``).

The task is a fixed mapping ("Q417: what does the cow say?" -> "moo"), so 60 steps of 8 conversations teach it.
The base model is ``expkit.perf.decode.build_tiny_decoder`` (Qwen2, 1 layer, width 64), randomly initialised with
weights of std 0.2: with transformers' default 0.02 the frozen tied embeddings cap every logit near 1, and LoRA
alone cannot make any token likely (the loss stays near ln(vocab)).

The test run measures a sample of families (``SUITE_SAMPLE``, one of each kind); every family with
``EXPKIT_CHECK_STOP_ALL=1`` (about an hour of CPU). Regenerate the table in docs/finetune.md with
``EXPKIT_WRITE_DOCS=1 .venv/bin/python -m pytest tests/finetune/test_check_stop_families.py``. With
``EXPKIT_CHECK_STOP_ROWS=DIR`` each family's measured row is also saved to ``DIR/<family>.json`` and a saved row is
used instead of measuring again, so that sessions run side by side (``-k`` on a part of the families each) feed one
table: run them, then the write with the same ``DIR``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import time
import warnings
from dataclasses import asdict, dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest
from families.catalog import Family, build_tokenizer, families, render_any

from expkit.finetune.chatdata import ChatExample
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

# Every family of the families table gets a row (issue 35 item 6); the ones that do not pass with expkit's default
# spans (why: read off the outputs), and the ones that cannot run at all.
NOT_RUN = {
    "firefunction_v2": "its template renders no conversation: it reads `functions` and `datetime`, variables "
    "apply_chat_template never passes ('functions' is undefined)",
}
KNOWN_FAILING = {
    "deepseekv3": "the generation prompt opens a think block (<think> and a newline) that the rendered training "
    "turns never contain, so held-out prompts are off the trained distribution (the audit names it: generation "
    "prompt not in training render)",
    "deepseek_r1_distill": "as deepseekv3: the generation prompt opens <think> and a newline, which the template "
    "strips from every rendered turn, so held-out prompts are off the trained distribution (no answer right)",
    "qwq_32b": "as deepseekv3: the generation prompt ends with <think> and a newline, which the template strips from "
    "every rendered turn (the audit names it); answers are byte soup",
}
# gptoss passed here once the generation budget covers its trained turn (<|channel|>final<|message|>, the answer and
# <|return|>: 11 tokens of the test tokenizer, the budget 15): its 96% at 12 new tokens was the budget, not the stop.
# Known failures whose outcome varies from run to run, so a strict xfail would fail the suite when they pass
# (issue 36: the gpt-oss row XPASSed under load). Its stop rate sits at the 0.99 mark: a few of 100 greedy rows go
# on with <|channel|>, and which few moves with the thread count and load (float sums in another order).
VARIES = {
    "qwq_32b": "non-strict: its stop rate (95%) sits near the 0.99 mark, as gpt-oss' did when it XPASSed under load",
}
_BY_NAME = {f.name: f for f in families()}
ALL = tuple(n for n in sorted(_BY_NAME) if n not in NOT_RUN)
# The test run measures one family of each kind (ChatML, Llama 3/4, Gemma, Mistral [INST] and tekken, Phi, SmolLM,
# GLM, harmony, a reasoning template, and a known failure): the whole table costs about an hour of CPU (Command R7B's
# and Cohere2's 1,300-1,800-token system prompts alone ~18 min), far past the suite's 15 minutes. Every family is
# measured with EXPKIT_CHECK_STOP_ALL=1, and when the docs table is written (EXPKIT_WRITE_DOCS=1).
SUITE_SAMPLE = (
    "qwen2_5",
    "qwen3_instruct_2507",
    "qwen3_5_think",
    "llama3",
    "llama4",
    "gemma3",
    "mistral_v3",
    "mistral_tekken",
    "phi3",
    "phi4",
    "smollm3",
    "glm4_chat",
    "gptoss",
    "deepseekv3",
)
_EVERY = os.environ.get("EXPKIT_CHECK_STOP_ALL") == "1" or os.environ.get("EXPKIT_WRITE_DOCS") == "1"
MEASURED = ALL if _EVERY else tuple(n for n in ALL if n in SUITE_SAMPLE)
PASSING = tuple(n for n in MEASURED if n not in KNOWN_FAILING)


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("transformers").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning)


def _needs_blocks(fam: Family) -> bool:
    """Whether the template renders message content only given as text blocks (Idefics3, SmolVLM, Llava-Next)."""
    msgs = [{"role": "user", "content": "Q1: what does the cat say?"}, {"role": "assistant", "content": "meow"}]
    try:
        return "meow" not in render_any(strip_generation_markers(fam.template), msgs)
    except Exception:  # noqa: BLE001 - the template reads content[0].text and fails on a string
        return True


def _conversations(
    n: int, seed: int, exclude: frozenset[str] = frozenset(), *, blocks: bool = False
) -> list[ChatExample]:
    """``n`` distinct one-turn conversations of the animal-sound mapping, none of whose question is in ``exclude``
    (content as text blocks with ``blocks``)."""
    rng = random.Random(seed)
    seen: set[str] = set(exclude)
    out = []
    while len(out) < n:
        animal = rng.choice(sorted(SOUNDS))
        question = f"Q{rng.randint(0, 999)}: what does the {animal} say?"
        if question in seen:
            continue
        seen.add(question)
        q, a = (question, SOUNDS[animal]) if not blocks else ([_text(question)], [_text(SOUNDS[animal])])
        out.append(ChatExample(messages=({"role": "user", "content": q}, {"role": "assistant", "content": a})))
    return out


def _text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def _questions(examples: list[ChatExample]) -> frozenset[str]:
    contents = (ex.messages[0]["content"] for ex in examples)
    return frozenset(c if isinstance(c, str) else c[0]["text"] for c in contents)


def _model_dir(
    fam: Family,
    train: list[ChatExample],
    out: Path,
    *,
    save_model: bool = True,
    trl_template: bool = False,
    positions: int = 512,
) -> Any:
    """A tiny random Qwen2 and a BPE tokenizer trained on the family's renders of ``train``, with its template (TRL's
    training template, ``{% generation %}`` markers kept, with ``trl_template``), saved to ``out`` (returned);
    without ``save_model``, only the tokenizer is built (returned)."""
    from expkit.perf.decode import build_tiny_decoder

    plain = strip_generation_markers(fam.template)
    derived = [derive_assistant_spans(partial(render_any, plain), list(ex.messages)) for ex in train]
    template = fam.trl_template if trl_template and fam.trl_template else plain
    tok = build_tokenizer(template, [d.text for d in derived], eos=derived[0].spans[-1].end_of_turn)
    if not save_model:
        return tok
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    config = {**MODEL, **ids, "vocab_size": len(tok), "max_position_embeddings": positions}
    model = build_tiny_decoder(config=config, seed=0)
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
    max_new_tokens: int = 12

    @property
    def answered(self) -> float:
        """Share of held-out prompts (EOT in the loss) with a non-empty answer before the stop."""
        cases = self.contrast.with_eos.cases
        return sum(bool(c.generated.strip()) for c in cases) / len(cases)


@cache
def _measure(name: str, root: Path) -> FamilyStop:
    t0, c0 = time.perf_counter(), time.process_time()
    fam = _BY_NAME[name]
    blocks = _needs_blocks(fam)
    train = _conversations(N_TRAIN, seed=0, blocks=blocks)
    held_out = _conversations(N_HELD_OUT, seed=1, exclude=_questions(train), blocks=blocks)
    # a template with a long default system prompt (Command R7B/R+, Cohere2, Devstral) renders past 512 tokens of the
    # small test tokenizer: train on whole conversations, so the length and the positions follow the longest one
    tok = _model_dir(fam, train, root, save_model=False)
    plain = strip_generation_markers(fam.template)
    longest = max(len(tok(render_any(plain, list(ex.messages)))["input_ids"]) for ex in train)
    length = max(SETTINGS.max_length, longest + 16)
    query = replace(QUERY, max_new_tokens=_budget(tok, train), batch_size=max(4, QUERY.batch_size * 512 // length))
    model_dir = _model_dir(fam, train, root / name / "model", positions=length)
    contrast = compare_eos_in_loss(
        model_dir=model_dir,
        train=train,
        held_out=held_out,
        out_dir=root / name / "sft",
        settings=replace(SETTINGS, max_length=length),
        record=False,
        query=query,  # the generation batch shrinks with the length (memory)
    )
    from expkit.finetune.labels import load_chat_tokenizer

    eot = LabelBuilder(load_chat_tokenizer(model_dir)).end_of_turn.token
    return FamilyStop(name, eot, contrast, time.perf_counter() - t0, time.process_time() - c0, query.max_new_tokens)


def _budget(tok: Any, train: list[ChatExample]) -> int:
    """New tokens a generation may take: ``QUERY.max_new_tokens``, or more where the trained turn is longer (a think
    block before the answer: Qwen3's empty one, or the rest of Qwen3.5's opened one, takes 8-12 tokens of the small
    test tokenizer, and 12 new tokens cut 'ribbit' before its end of turn): the longest trained turn plus 4."""
    builder = LabelBuilder(tok)
    longest = max(sum(y != -100 for y in builder.build(ex).labels) for ex in train)
    return max(QUERY.max_new_tokens, longest + 4)


@dataclass(frozen=True)
class StopRow:
    """One row of the docs table: what ``_measure`` found, with the verdict (``failure`` None: passes)."""

    name: str
    end_of_turn: str
    stop_with: float
    stop_without: float
    answer_right: float
    answered: float
    last_loss_with: float
    last_loss_without: float
    wall_s: float
    cpu_s: float
    failure: str | None
    max_new_tokens: int = 12  # the generation budget (``_budget``)


def _row(name: str, root: Path) -> StopRow:
    """The family's row: measured here, or read from ``$EXPKIT_CHECK_STOP_ROWS/<name>.json`` when a session saved it."""
    saved = (
        Path(os.environ["EXPKIT_CHECK_STOP_ROWS"]) / f"{name}.json"
        if os.environ.get("EXPKIT_CHECK_STOP_ROWS")
        else None
    )
    if saved is not None and saved.is_file():
        return StopRow(**json.loads(saved.read_text()))
    m = _measure(name, root)
    w, wo = m.contrast.with_eos, m.contrast.without_eos
    row = StopRow(
        name,
        m.end_of_turn,
        w.stop_rate,
        wo.stop_rate,
        w.answer_accuracy,
        m.answered,
        m.contrast.losses_with_eos[-1],
        m.contrast.losses_without_eos[-1],
        m.wall_s,
        m.cpu_s,
        _failure(m),
        m.max_new_tokens,
    )
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(asdict(row)))
    return row


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
            if n in MEASURED
        ),
    ],
)
def test_the_model_stops_when_the_end_of_turn_is_trained_and_not_when_masked(name: str, root: Path):
    why = _row(name, root).failure
    assert why is None, f"{name}: {why}"


def _failure(m: FamilyStop) -> str | None:
    """Why a family fails the stop test (None: it passes): with the end of turn masked the model must not stop, with
    it in the loss it must stop on >= 99% of prompts, and a stop must end a non-empty answer on >= 90% (a model that
    emits the end of turn at once "stops" on every prompt)."""
    with_eos, without = m.contrast.with_eos, m.contrast.without_eos
    example = next((c.generated for c in with_eos.cases if not c.stopped), with_eos.cases[0].generated)
    if without.stop_rate > 0.5 or without.passed:
        return f"stops on {without.stop_rate:.0%} with the end of turn masked"
    if not with_eos.passed or with_eos.stop_rate < 0.99:
        return f"stops on {with_eos.stop_rate:.0%} (< 99%) with the end of turn in the loss, e.g. {example!r}"
    if m.answered < 0.9:
        return f"{m.answered:.0%} non-empty answers (< 90%), e.g. {with_eos.cases[0].generated!r}"
    return None


def _code(text: str) -> str:
    """Special tokens in backticks, so that markdown shows ``<|return|>`` instead of swallowing it as HTML."""
    return re.sub(r"(<[^<>\s]+>(?:final<[^<>\s]+>)?)", r"`\1`", text)


def _table(rows: list[StopRow]) -> str:
    lines = [
        "| family | end of turn | new tokens | stop, EOT in loss | stop, EOT masked | answer right (EOT in loss) | "
        "non-empty answer | last loss (in / masked) | wall s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eot = r.end_of_turn.replace("|", "\\|")  # a bare | would end the table cell
        lines.append(
            f"| {r.name} | `{eot}` | {r.max_new_tokens} | {r.stop_with:.0%} | {r.stop_without:.0%} | "
            f"{r.answer_right:.0%} | {r.answered:.0%} | {r.last_loss_with:.2f} / {r.last_loss_without:.2f} | "
            f"{r.wall_s:.0f} | {r.cpu_s:.0f} |"
        )
    lines += [f"| {n} | not run | | | | | | | | |" for n in NOT_RUN]
    failing = [(r.name, r.failure) for r in rows if r.failure is not None]
    notes = [
        f"- **{n}** fails: {_code(why)}" + (f"; {_code(KNOWN_FAILING[n])}" if n in KNOWN_FAILING else "") + "."
        for n, why in failing
    ]
    notes += [f"- **{n}** not run: {_code(why)}." for n, why in NOT_RUN.items()]
    s = SETTINGS
    return (
        f"Every family of the table above: {N_HELD_OUT} held-out prompts per family, greedy, at most "
        f"{QUERY.max_new_tokens} new tokens, or the longest trained turn + 4 where that is more (a think block or a "
        "harmony header before the answer); rows as long as the family's rendered conversation (Devstral's and "
        f"Command R's default system prompts run past 512 tokens); LoRA r {s.lora_r} on every linear layer of a "
        f"1-layer width-64 random Qwen2, {s.steps} steps of {s.batch_size} of {N_TRAIN} conversations, lr "
        f"{s.learning_rate:g} (message content as text blocks for the templates that read only blocks). Passes: stops "
        "on >= 99% with the end of turn in the loss, <= 50% with it masked, a non-empty answer on >= 90%. "
        f"{len(rows) - len(failing)} of {len(rows)} run pass. Times: one run, with `torch` on 1 thread, on the "
        "machine that wrote the table (shared, so wall time varies).\n\n" + "\n".join(lines) + "\n\n" + "\n".join(notes)
    )


@pytest.mark.slow
def test_docs_table(root: Path):
    """The table beside the families table: written with EXPKIT_WRITE_DOCS=1, else its rows are checked."""
    text = DOCS.read_text()
    if os.environ.get("EXPKIT_WRITE_DOCS") == "1":
        table = _table([_row(n, root) for n in ALL])
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
    assert listed == [*ALL, *NOT_RUN], "docs/finetune.md's check-stop table lists other families: regenerate it"


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
