"""Does it stop: greedy generation on held-out prompts; stop rate, answer accuracy, generated length.

"Stopped" means the model emitted the end-of-turn token of the chat template within ``max_new_tokens``
and before any token that starts a new turn (``turn_openers``: an ``<|im_end|>`` that closes a hallucinated
``<|im_start|>user`` turn is no stop); special tokens the template renders inside the assistant's own turn
(Command-R's ``<|END_RESPONSE|>``, gpt-oss' ``<|channel|>final<|message|>``) are part of the turn.
Checked on the token ids, whatever ``generation_config`` says; the saved contract is reported beside.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expkit.errors import InputError, UsageError
from expkit.finetune.chatdata import ChatExample, answer_of
from expkit.finetune.contract import StopContract, read_stop_contract
from expkit.finetune.labels import find_end_of_turn, load_chat_tokenizer, prompt_text, render_chat
from expkit.finetune.templating import template_budget

if TYPE_CHECKING:
    from expkit.finetune.training import SFTSettings

__all__ = [
    "EosContrast",
    "Generator",
    "StopCase",
    "StopCheck",
    "StopQuery",
    "check_stopping",
    "compare_eos_in_loss",
    "load_for_generation",
    "turn_openers",
]


@dataclass(frozen=True)
class StopCase:
    """One prompt: the expected answer, what came out (up to the end of turn), and the verdicts."""

    prompt: str
    expected: str
    generated: str
    generated_tokens: int
    stopped: bool
    answer_correct: bool
    exact: bool


@dataclass(frozen=True)
class StopCheck:
    """``stop_rate``: share of prompts whose generation emitted the end-of-turn token.
    ``answer_accuracy``: share whose output starts with the expected answer (stopped or not).
    ``exact_match_rate``: share that gave exactly the answer and then stopped.
    ``passed``: the stop rate reaches ``min_stop_rate`` and, when ``min_accuracy`` is set, the answer accuracy
    reaches it; ``failed`` names the verdicts that did not.
    """

    n: int
    stop_rate: float
    answer_accuracy: float
    exact_match_rate: float
    mean_generated_tokens: float
    max_new_tokens: int
    min_stop_rate: float
    passed: bool
    contract: StopContract
    elapsed_s: float
    cases: tuple[StopCase, ...]
    min_accuracy: float | None = None  # the answer-accuracy pass mark (None: accuracy is reported, not judged)
    failed: tuple[str, ...] = ()  # the verdicts that failed: "stop rate", "answer accuracy"


# An upper bound checked before the model loads (the model's own context is checked after).
_MAX_NEW_TOKENS = 2**20


@dataclass(frozen=True)
class StopQuery:
    """How to run the does-it-stop test: ``n`` prompts, greedy, ``max_new_tokens`` each, ``batch_size``
    prompts per ``generate`` call (left-padded), on ``num_threads`` torch threads (None: torch's default);
    it passes when ``stop_rate >= min_stop_rate`` and, when ``min_accuracy`` is set, ``answer_accuracy >=
    min_accuracy`` (a model that stops but answers wrong fails).

    Raises:
        UsageError: n < 1, max_new_tokens outside [1, 2**20], min_stop_rate or min_accuracy outside [0, 1],
            batch_size < 1 (the message names the field).
    """

    n: int = 20
    max_new_tokens: int = 32
    min_stop_rate: float = 0.9
    batch_size: int = 32
    num_threads: int | None = None
    min_accuracy: float | None = None

    def __post_init__(self) -> None:
        if self.n < 1:
            raise UsageError(f"n must be >= 1, not {self.n}")
        if not 1 <= self.max_new_tokens <= _MAX_NEW_TOKENS:
            raise UsageError(f"max_new_tokens must be in [1, {_MAX_NEW_TOKENS:,}], not {self.max_new_tokens}")
        if not 0.0 <= self.min_stop_rate <= 1.0:
            raise UsageError(f"min_stop_rate must be in [0, 1], not {self.min_stop_rate}")
        if self.batch_size < 1:
            raise UsageError(f"batch_size must be >= 1, not {self.batch_size}")
        if self.min_accuracy is not None and not 0.0 <= self.min_accuracy <= 1.0:
            raise UsageError(f"min_accuracy must be in [0, 1], not {self.min_accuracy}")


@dataclass(frozen=True)
class Generator:
    """A model ready to generate: the model (with its adapter), its tokenizer, and the directory whose
    ``generation_config.json`` holds the stop-token contract."""

    model: Any
    tokenizer: Any
    config_dir: Path


def load_for_generation(model_dir: str | Path, adapter_dir: str | Path | None = None) -> Generator:
    """The base model, with the LoRA adapter when given, its tokenizer and its generation-config directory.

    Raises:
        InputError: a missing model or adapter directory, no tokenizer/chat template, or a model directory
            transformers cannot load (bad config.json, weights that are not safetensors ...), named.
    """
    from expkit.finetune.modeldir import load_causal_lm

    tok_dir = Path(model_dir)
    if adapter_dir is not None:
        a = Path(adapter_dir)
        if not (a / "adapter_config.json").is_file():
            raise InputError(
                "no adapter_config.json in the adapter directory",
                path=a,
                hint="give the adapter/ directory written by `expkit sft`",
            )
        if (a / "tokenizer.json").is_file():
            tok_dir = a
    tok = load_chat_tokenizer(tok_dir)
    model = load_causal_lm(model_dir, dtype="float32")
    config_dir = Path(model_dir)
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, Path(adapter_dir))
        config_dir = Path(adapter_dir)
    model.eval()
    return Generator(model, tok, config_dir)


def _answer_correct(text: str, expected: str) -> bool:
    """The output starts with the expected answer, not followed by more of the same word or number."""
    return re.match(rf"\s*{re.escape(expected.strip())}(?![0-9A-Za-z])", text) is not None


@template_budget()
def check_stopping(
    *,
    model_dir: str | Path,
    examples: Sequence[ChatExample],
    adapter_dir: str | Path | None = None,
    query: StopQuery = StopQuery(),
    loaded: Generator | None = None,
) -> StopCheck:
    """Greedy-generate on the first ``query.n`` held-out examples and measure whether the model stops.

    Args:
        model_dir: the base model directory (or a merged model).
        examples: held-out examples; the prompt is everything before the last assistant turn, the
            expected answer is that turn.
        adapter_dir: a LoRA adapter directory to load on top of the base model.
        query: how many prompts, the generation budget, the pass mark (``StopQuery``).
        loaded: a ``Generator`` from ``load_for_generation``, to skip loading.

    Returns:
        StopCheck with one StopCase per prompt.

    Raises:
        UsageError: ``max_new_tokens`` past the model's context (max_position_embeddings).
        InputError: no examples, or a model/adapter directory that cannot be loaded.

    Example:
        >>> check_stopping(model_dir="demo", adapter_dir="sft/adapter", examples=held_out).stop_rate
        1.0
    """
    chosen = list(examples)[: query.n]
    if not chosen:
        raise InputError("no held-out example to generate from")
    t0 = time.perf_counter()
    from expkit.finetune.training import quiet_progress

    with quiet_progress():
        gen = loaded or load_for_generation(model_dir, adapter_dir)
    context = getattr(getattr(gen.model, "config", None), "max_position_embeddings", None)
    if isinstance(context, int) and query.max_new_tokens > context:
        raise UsageError(
            f"max_new_tokens={query.max_new_tokens} exceeds the model's context of {context} positions",
            hint=f"a model that does not stop shows it within a few dozen tokens; e.g. {min(32, context)}",
        )
    eot = find_end_of_turn(gen.tokenizer)
    contract = read_stop_contract(gen.config_dir, end_of_turn=eot)
    from expkit.hardware.threads import torch_threads  # imports torch inside the function

    with torch_threads(query.num_threads):
        cases = [
            case
            for start in range(0, len(chosen), query.batch_size)
            for case in _generate(gen, chosen[start : start + query.batch_size], eot.id, query)
        ]
    k = len(cases)
    stop_rate = sum(c.stopped for c in cases) / k
    accuracy = sum(c.answer_correct for c in cases) / k
    failed: tuple[str, ...] = ("stop rate",) if stop_rate < query.min_stop_rate else ()
    if query.min_accuracy is not None and accuracy < query.min_accuracy:
        failed += ("answer accuracy",)
    return StopCheck(
        n=k,
        stop_rate=stop_rate,
        answer_accuracy=accuracy,
        exact_match_rate=sum(c.exact for c in cases) / k,
        mean_generated_tokens=sum(c.generated_tokens for c in cases) / k,
        max_new_tokens=query.max_new_tokens,
        min_stop_rate=query.min_stop_rate,
        passed=not failed,
        contract=contract,
        elapsed_s=time.perf_counter() - t0,
        cases=tuple(cases),
        min_accuracy=query.min_accuracy,
        failed=failed,
    )


def _generate(gen: Generator, batch: Sequence[ChatExample], eot_id: int, query: StopQuery) -> list[StopCase]:
    """One left-padded greedy ``generate`` call over ``batch``, each row judged: stopped, answer, exact."""
    import torch

    tok = gen.tokenizer
    prompts = [prompt_text(tok, ex) for ex in batch]
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else eot_id
    openers = set(turn_openers(tok)) - {eot_id}
    enc = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    width = max(len(e) for e in enc)
    ids = torch.tensor([[pad_id] * (width - len(e)) + e for e in enc])  # (B, T) left-padded
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc])
    with torch.no_grad():
        out = gen.model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=query.max_new_tokens,
            do_sample=False,
            eos_token_id=[eot_id],
            pad_token_id=pad_id,
        )
    cases = []
    for row, prompt, ex in zip(out[:, width:].tolist(), prompts, batch, strict=True):
        # a stop ends the assistant's own turn: an end of turn after a new turn header
        # (<|im_start|>user ... <|im_end|>) is a hallucinated next turn, not a stop; the special tokens the
        # template itself renders in this turn before the answer (gpt-oss' <|channel|>final<|message|>) are not
        header = _turn_header(tok, ex, prompt)
        first_eot = row.index(eot_id) if eot_id in row else len(row)
        produced = row[: first_eot + 1]  # generate() ends a row at its first end of turn; then padding
        stopped = first_eot < len(row) and not any(t in openers for t in row[:first_eot])
        text = tok.decode(row[:first_eot] if stopped else produced, skip_special_tokens=False)
        text = text[len(header) :] if header and text.startswith(header) else text
        expected = answer_of(ex)
        cases.append(
            StopCase(
                prompt=prompt,
                expected=expected,
                generated=text,
                generated_tokens=len(produced),
                stopped=stopped,
                answer_correct=_answer_correct(text, expected),
                exact=stopped and text.strip() == expected.strip(),
            )
        )
    return cases


_PROBE = ("Zq1uQ", "Zq2aQ", "Zq3uQ", "Zq4aQ")


def turn_openers(tok: Any) -> tuple[int, ...]:
    """The special tokens that start a new turn: the first special token the template renders after each turn's
    content (ChatML's ``<|im_start|>``, Llama 3's ``<|start_header_id|>``, Command-R's ``<|START_OF_TURN_TOKEN|>``,
    Mistral's ``[INST]``), found by rendering a two-round conversation. Special tokens the template renders inside
    the assistant's turn (Command-R's ``<|END_RESPONSE|>``, gpt-oss' ``<|channel|>``) are not among them: a model
    that emits them before its end of turn still stops."""
    a, b, c, d = _PROBE
    msgs = [
        {"role": "user", "content": a},
        {"role": "assistant", "content": b},
        {"role": "user", "content": c},
        {"role": "assistant", "content": d},
    ]
    blocks = [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in msgs]
    text = None
    for probe in (msgs, blocks):  # text blocks for the templates that read only those (Idefics3, LLaVA-NeXT)
        try:
            text = render_chat(tok, probe)
            break
        except Exception:  # noqa: BLE001 - a template that cannot render this form of the probe: try the next
            continue
    if text is None:  # nothing renders the probe: every special token opens a turn
        return tuple(i for i, t in tok.added_tokens_decoder.items() if t.special)
    specials = {t.content: i for i, t in tok.added_tokens_decoder.items() if t.special}
    end_ids = _end_ids(tok)
    out = set()
    for before, after in ((a, b), (b, c), (c, d)):
        if before not in text or after not in text:
            continue
        gap = text[text.index(before) + len(before) : text.index(after)]
        found = sorted((gap.find(s), s) for s in specials if s in gap)
        ends = [k for k, (_, s) in enumerate(found) if specials[s] in end_ids]
        # the first special after the content's end of turn (or after the content when nothing closes it)
        rest = found[ends[-1] + 1 :] if ends else found
        if rest:
            out.add(specials[rest[0][1]])
    return tuple(sorted(out))


def _end_ids(tok: Any) -> set[int]:
    """The family's end of turn, the other end-of-turn strings it has as tokens (gpt-oss' <|end|>) and the eos."""
    from expkit.finetune.spans import END_OF_TURN_STRINGS

    added = tok.get_added_vocab()
    ids = {find_end_of_turn(tok).id} | {added[t] for t in END_OF_TURN_STRINGS if t in added}
    return ids | ({tok.eos_token_id} if tok.eos_token_id is not None else set())


def _turn_header(tok: Any, ex: ChatExample, prompt: str) -> str:
    """What the template renders between the generation prompt and the expected answer (gpt-oss:
    ``<|channel|>final<|message|>``; Qwen3: an empty think block): the model's own output in this turn. "" when
    there is none, or when the rendered turn does not continue the prompt (nothing is then allowed)."""
    answer = answer_of(ex)
    if not ex.conversational or not answer:
        return ""
    last = max(i for i, m in enumerate(ex.messages) if m["role"] == "assistant")
    try:
        full = render_chat(tok, ex.messages[: last + 1], tools=ex.tool_list)
    except Exception:  # noqa: BLE001 - a template that cannot render the answered turn: nothing to allow
        return ""
    if not full.startswith(prompt):
        return ""
    rest = full[len(prompt) :]
    cut = rest.find(answer)
    return rest[:cut] if cut > 0 else ""


@dataclass(frozen=True)
class EosContrast:
    """The does-it-stop experiment: the same LoRA SFT with and without the end-of-turn token in the loss."""

    with_eos: StopCheck
    without_eos: StopCheck
    losses_with_eos: tuple[float, ...]
    losses_without_eos: tuple[float, ...]
    contract_before: tuple[int, ...]
    contract_after: tuple[int, ...]
    s_per_step: float


def compare_eos_in_loss(
    *,
    model_dir: str | Path,
    train: Sequence[ChatExample],
    held_out: Sequence[ChatExample],
    out_dir: str | Path,
    settings: SFTSettings,
    store: str | Path | None = None,
    record: bool = True,
    query: StopQuery = StopQuery(),
) -> EosContrast:
    """Train twice (``settings`` with ``eos_in_loss`` True, then False) and check both for stopping.

    Args:
        settings: an ``SFTSettings``; its ``eos_in_loss`` is overridden.
        query: the stop test for both (``StopQuery``); its ``num_threads`` None takes the settings'.
        Others: as ``train_lora_sft`` and ``check_stopping``.
    """
    from dataclasses import replace

    from expkit.finetune.training import train_lora_sft

    out = Path(out_dir)
    runs, checks = [], []
    for eos in (True, False):
        s = replace(settings, eos_in_loss=eos)
        r = train_lora_sft(
            model_dir=model_dir,
            examples=train,
            out_dir=out / ("with_eos" if eos else "without_eos"),
            settings=s,
            store=store,
            record=record,
        )
        runs.append(r)
        checks.append(
            check_stopping(
                model_dir=model_dir,
                adapter_dir=r.adapter_dir,
                examples=held_out,
                query=query if query.num_threads is not None else replace(query, num_threads=settings.num_threads),
            )
        )
    return EosContrast(
        with_eos=checks[0],
        without_eos=checks[1],
        losses_with_eos=runs[0].losses,
        losses_without_eos=runs[1].losses,
        contract_before=runs[0].contract.eos_ids_before,
        contract_after=runs[0].contract.eos_ids_after,
        s_per_step=(runs[0].s_per_step + runs[1].s_per_step) / 2,
    )
