"""Lab C5.5: most of a conversation is masked out of the loss (seed: 85% of one conversation). Judged on a data set
with written answers (mlflow's demo conversations), not on one conversation nor on generated answers of a few words
(shown beside): the share of conversations mostly masked, and the data set's fraction.

The fraction is a property of the data (how long the answers are against the system prompt, the question and the
role headers), so the lab also measures it on the same conversations with answers of 1 to 200 words: that sweep,
not the judged figure, says at what answer length the seed's 85% holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expkit.labs.base import (
    Cause,
    KOfN,
    LabContext,
    LabOutput,
    Measurement,
    Needs,
    RuleChange,
    SeedFigure,
    Within,
    judged,
)
from expkit.labs.registry import lab

SEED_MASKED = SeedFigure(
    "masked_all", "masked fraction of a conversation", 85.0, "%", "85% of the tokens of one conversation"
)
SEED_MOST = SeedFigure(
    "mostly_masked", "most of a conversation is masked", None, "", "most of a conversation is masked out of the loss"
)
FRACTION_RULE = Within(85.0, abs=5.0, source="+-5 points: our tolerance for one conversation's 85% as typical")

# issue 36: when and why the rule changed after the lab first declared it (issue 12), from `git log -p`
_WRITTEN = dict(
    date="2026-12-03",
    commit="815a255",
    why="issue 36: generated answers of a few words make 'most of a conversation is masked' hold by construction "
    "(the input was chosen so the verdict holds); the generated conversations are shown unjudged",
    seed_text="'一条对话 85% 的 token 被 mask' (85% of the tokens of a conversation are masked): a conversation as "
    "people write it; answers generated a few words long are no such conversation",
)
RULE_HISTORY = (
    RuleChange(
        "masked_all",
        first="masked fraction of 500 (quick) or 10,000 generated conversations within +-5 points of 85%",
        changed="the same rule on mlflow's demo conversations with their written reference answers",
        **_WRITTEN,
    ),
    RuleChange(
        "mostly_masked",
        first="every generated conversation more than half masked",
        changed="every one of mlflow's demo conversations with written answers more than half masked",
        **_WRITTEN,
    ),
)


if TYPE_CHECKING:
    from expkit.finetune.chatdata import ChatExample

ANSWER_WORDS = (1, 5, 20, 60, 200)  # answer lengths (words) of the sweep: the reviewer's 1, 20, 60, 200 and one more
_WORDS = ("the", "model", "answer", "is", "seven", "because", "each", "step", "adds", "two", "more", "tokens")


@dataclass(frozen=True)
class MaskedShare:
    """A data set's audit: conversations with more than half their tokens masked, and the masked share (%)."""

    examples: int
    mostly_masked: int
    masked_pct: float


def with_answer_words(examples: Sequence[ChatExample], words: int) -> list[ChatExample]:
    """The same conversations with every assistant answer replaced by ``words`` words of plain English (a fixed
    cycle of common words, so the length, not the vocabulary, changes between runs)."""
    answer = " ".join(_WORDS[i % len(_WORDS)] for i in range(words))
    out = []
    for ex in examples:
        msgs = tuple({**m, "content": answer} if m["role"] == "assistant" else m for m in ex.messages)
        out.append(replace(ex, messages=msgs))
    return out


def measure_masked_share(tokenizer: Any, examples: Sequence[ChatExample]) -> MaskedShare:
    """Audit the labels of ``examples`` (assistant-only loss, end of turn trained) and count what is masked."""
    from expkit.finetune.labels import audit_labels

    audit = audit_labels(tokenizer=tokenizer, examples=examples, show=0)
    return MaskedShare(
        examples=len(examples),
        mostly_masked=sum(f > 0.5 for f in audit.masked_fraction_per_example),
        masked_pct=100 * audit.masked_fraction,
    )


@dataclass(frozen=True)
class ShippedChat:
    """Written (not generated) question-answer conversations that ship inside an installed package: ``reference``
    and ``improved`` are the same conversations with the two answers the package wrote for each question."""

    source: str
    reference: tuple[ChatExample, ...]
    improved: tuple[ChatExample, ...]


def shipped_chat() -> ShippedChat | None:
    """The one chat data set with written assistant answers found in this project's environment: mlflow's demo
    traces (``mlflow/demo/data.py``, ``ALL_DEMO_TRACES``): hand-written questions, each with a reference answer
    (``expected_response``) and an improved agent answer (``v2_response``); traces of one ``session_id`` are one
    multi-turn conversation in ``turn_index`` order, a trace with a prompt template is its rendered prompt. None
    when mlflow (the ``mlflow`` extra) is not installed. No other package of the venv (trl, datasets,
    transformers) ships a chat data set on disk; the Hub cannot be reached here."""
    try:
        import mlflow
        from mlflow.demo import data as demo
    except ImportError:
        return None
    from expkit.finetune.chatdata import ChatExample

    groups: dict[str, list[Any]] = {}
    for i, trace in enumerate(demo.ALL_DEMO_TRACES):
        groups.setdefault(trace.session_id or f"trace-{i}", []).append(trace)

    def conversations(answer: str) -> tuple[ChatExample, ...]:
        out = []
        for traces in groups.values():
            msgs: list[dict[str, str]] = []
            for t in sorted(traces, key=lambda t: t.turn_index or 0):
                question = t.prompt_template.render() if t.prompt_template else t.query
                msgs += [{"role": "user", "content": question}, {"role": "assistant", "content": getattr(t, answer)}]
            out.append(ChatExample(messages=tuple(msgs)))
        return tuple(out)

    return ShippedChat(
        source=f"mlflow {mlflow.__version__}, {Path(demo.__file__).relative_to(Path(mlflow.__file__).parents[1])} "
        f"(ALL_DEMO_TRACES: {len(demo.ALL_DEMO_TRACES)} traces)",
        reference=conversations("expected_response"),
        improved=conversations("v2_response"),
    )


def mostly_masked_rule(n: int) -> KOfN:
    return KOfN(n, n, source="'most of a conversation': every conversation of the data set")


def answer_length_cause(sweep: dict[int, MaskedShare], data_words: float) -> Cause | None:
    """Why the data set's fraction is off 85%, from the answer-length sweep (a separate audit of other data):
    the sweep must put some measured answer length inside the seed's band, and the data's answers must be outside
    that range. None when the sweep does not explain the miss."""
    inside = [w for w, share in sweep.items() if FRACTION_RULE.holds(share.masked_pct)]
    if not inside:
        return None
    lo, hi = min(inside), max(inside)
    if lo <= data_words <= hi:
        return None
    return Cause(
        "answer length at which the masked share is within 5 points of 85% (sweep)",
        f"{lo}-{hi}" if lo != hi else str(lo),
        f"the same conversations with {', '.join(str(w) for w in sweep)}-word answers are masked "
        + ", ".join(f"{s.masked_pct:.0f}%" for s in sweep.values())
        + f"; this data set's answers average {data_words:.1f} words: the fraction is the data's answer length",
        unit="words",
        measured_by="label audits of the same conversations with answers of fixed length",
    )


@lab(
    id="C5.5",
    title="Most of a conversation is masked out of the loss",
    claims=("C5.5",),
    seed=(SEED_MASKED, SEED_MOST),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.finetune.chatdata import answer_of, generate_chat_examples
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.labels import audit_labels, load_chat_tokenizer
    from expkit.render.figures import new_figure, save_figure

    demo = ensure_demo_model(quick=ctx.quick)
    tok = load_chat_tokenizer(demo.path)
    n = 500 if ctx.quick else 10_000
    data = generate_chat_examples(n=n, seed=ctx.seed + 5)
    audit = audit_labels(tokenizer=tok, examples=data, show=0)
    no_system = audit_labels(
        tokenizer=tok, examples=generate_chat_examples(n=n, seed=ctx.seed + 5, system_prompt=None), show=0
    )
    one = 100 * audit.masked_fraction_per_example[0]
    per = [100 * f for f in audit.masked_fraction_per_example]
    mostly = sum(f > 0.5 for f in audit.masked_fraction_per_example)
    # the sweep: the same (first 200) conversations with answers of fixed length, audited apart
    sub = data[: min(n, 200)]
    sweep = {w: measure_masked_share(tok, with_answer_words(sub, w)) for w in ANSWER_WORDS}
    data_words = sum(len(answer_of(ex).split()) for ex in data) / n
    cause = answer_length_cause(sweep, data_words)
    shipped = shipped_chat()  # written answers of a package's demo data, audited beside the synthetic sweep
    real = (
        None
        if shipped is None
        else {
            name: measure_masked_share(tok, ex)
            for name, ex in (("reference", shipped.reference), ("improved", shipped.improved))
        }
    )

    judged_rows = written_rows(tok, shipped, real)

    fig, (ax, ax2) = new_figure(2)
    ax.hist(per, bins=30, color="C0", alpha=0.8, label="with a system prompt")
    ax.hist([100 * f for f in no_system.masked_fraction_per_example], bins=30, color="C1", alpha=0.6, label="without")
    ax.axvline(85, color="k", ls="--", label="seed: 85%")
    ax.set(
        xlabel="masked fraction of a conversation (%)",
        ylabel="conversations",
        title=f"{n} synthetic conversations, demo tokenizer",
    )
    ax.legend()
    ax2.plot(list(sweep), [s.masked_pct for s in sweep.values()], "o-", color="C0")
    ax2.axhspan(80, 90, color="grey", alpha=0.2, label="seed 85% +-5")
    ax2.set(xscale="log", xlabel="answer length (words)", ylabel="masked share (%)", title="same questions")
    ax2.legend()
    path = save_figure(fig, ctx.figure_path("c5_5_masked_fraction.png"))

    measurements = (
        *judged_rows,
        Measurement(
            "synthetic_mostly_masked",
            "generated conversations with more than half of their tokens masked",
            mostly,
            "conversations",
            detail=f"of {n}; lowest masked fraction {min(per):.1f}%. Generated answers of {data_words:.1f} words on "
            "average: shown, not judged (issue 36: answers this short make the verdict hold by construction)",
        ),
        Measurement(
            "synthetic_masked_all",
            "masked fraction of the generated conversations (all tokens)",
            100 * audit.masked_fraction,
            "%",
            detail=f"{audit.total_tokens} tokens, {audit.trained_tokens} trained, {n} conversations; "
            f"per conversation: median {sorted(per)[n // 2]:.1f}%, range {min(per):.1f}-{max(per):.1f}%; "
            + (f"beside the sweep: {cause}" if cause is not None else "shown, not judged"),
        ),
        Measurement(
            "masked_one",
            "masked fraction of the first conversation",
            one,
            "%",
            detail="one example: not judged (the claim is about conversations in general)",
        ),
        Measurement(
            "masked_no_system", "masked fraction without a system prompt", 100 * no_system.masked_fraction, "%"
        ),
        *(
            Measurement(
                f"masked_{w}w",
                f"masked share with {w}-word answers (same {len(sub)} conversations)",
                share.masked_pct,
                "%",
                detail=f"{share.mostly_masked} of {share.examples} conversations more than half masked",
            )
            for w, share in sweep.items()
        ),
        *shipped_rows(shipped, real),
        Measurement("answer_words", "mean answer length of the data set", data_words, "words"),
        Measurement("audit_s", f"label audit of {n} conversations", audit.elapsed_s, "s"),
    )
    explanation = (
        f"With the demo tokenizer and ChatML template, {100 * audit.masked_fraction:.1f}% of the tokens of {n} "
        f"conversations are masked out of the loss (seed: 85% of one conversation; the first one here: {one:.1f}%), "
        f"and {mostly} of {n} conversations have more than half of their tokens masked "
        f"({100 * no_system.masked_fraction:.1f}% without the system prompt). Only the assistant answer and "
        "its <|im_end|> are trained; the system prompt, the question and every role header are context. "
        f"The audit of {n} conversations took {audit.elapsed_s:.1f} s on this machine.\n\n"
        "The share is set by the data: the same conversations with answers of "
        + ", ".join(f"{w} words are {s.masked_pct:.0f}%" for w, s in sweep.items())
        + f" masked ({sweep[ANSWER_WORDS[-1]].mostly_masked} of {len(sub)} mostly masked at {ANSWER_WORDS[-1]} "
        f"words). This data set's answers average {data_words:.1f} words, so 'most of a conversation is masked' "
        "holds for short answers and fails for long ones.\n\n" + shipped_text(shipped, real)
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))


def _answer_words(examples: Sequence[ChatExample]) -> float:
    answers = [m["content"] for ex in examples for m in ex.messages if m["role"] == "assistant"]
    return sum(len(a.split()) for a in answers) / max(len(answers), 1)


def written_rows(tok: Any, shipped: ShippedChat | None, real: dict[str, MaskedShare] | None) -> tuple[Measurement, ...]:
    """The two judged rows, on conversations with written answers (issue 36: not on generated answers of a few
    words, which make 'most of it is masked' hold by construction): mlflow's demo conversations with their
    reference answers, the cause from a sweep of the same conversations' answer lengths. Without them the claim is
    not measured here."""
    if shipped is None or real is None:
        needs = Needs("a chat data set with written answers: mlflow's demo traces (pip install 'expkit[mlflow]')")
        return tuple(
            judged(key, label, "no written data set", "", rule=needs, seed=seed)
            for key, label, seed in (
                ("mostly_masked", "written conversations with more than half of their tokens masked", SEED_MOST),
                ("masked_all", "masked fraction of written conversations", SEED_MASKED),
            )
        )
    written, words = real["reference"], _answer_words(shipped.reference)
    sweep = {w: measure_masked_share(tok, with_answer_words(shipped.reference, w)) for w in ANSWER_WORDS}
    where = f"mlflow's demo conversations with their written reference answers ({words:.0f} words on average)"
    return (
        judged(
            "mostly_masked",
            f"{where}: conversations with more than half of their tokens masked",
            written.mostly_masked,
            "conversations",
            rule=mostly_masked_rule(written.examples),
            seed=SEED_MOST,
            detail=f"of {written.examples}; {shipped.source}",
        ),
        judged(
            "masked_all",
            f"{where}: masked fraction (all tokens)",
            written.masked_pct,
            "%",
            rule=FRACTION_RULE,
            seed=SEED_MASKED,
            cause=answer_length_cause(sweep, words),
            detail="no system prompt; the same conversations with answers of "
            + ", ".join(f"{w} words: {s.masked_pct:.0f}%" for w, s in sweep.items()),
        ),
    )


def shipped_rows(shipped: ShippedChat | None, real: dict[str, MaskedShare] | None) -> tuple[Measurement, ...]:
    """The masked share of the shipped conversations with each of their two answers, as rows beside the judged ones
    (the reference answers are what ``written_rows`` judges; the improved ones are longer)."""
    if shipped is None or real is None:
        return (
            Measurement(
                "masked_shipped",
                "masked share of a shipped chat data set with written answers",
                "n/a",
                "",
                detail="mlflow (expkit[mlflow]) is not installed; no other installed package ships one",
            ),
        )
    return tuple(
        Measurement(
            f"masked_shipped_{name}",
            f"masked share of mlflow's demo conversations, {name} answers ({_answer_words(ex):.0f} words on average)",
            real[name].masked_pct,
            "%",
            detail=f"{real[name].examples} conversations ({sum(len(e.messages) // 2 for e in ex)} turns), "
            f"{real[name].mostly_masked} more than half masked; no system prompt; {shipped.source}",
        )
        for name, ex in (("reference", shipped.reference), ("improved", shipped.improved))
    )


def shipped_text(shipped: ShippedChat | None, real: dict[str, MaskedShare] | None) -> str:
    if shipped is None or real is None:
        return (
            "No chat data set with written answers could be audited: mlflow (whose demo traces are the only one "
            "found in this environment) is not installed, and the Hub cannot be reached."
        )
    ref, imp = real["reference"], real["improved"]
    return (
        "A real chat data set: none ships with the packages installed here (trl, datasets and transformers carry "
        "none on disk) except mlflow's demo traces, hand-written questions with two written answers each "
        f"({shipped.source}). On its {ref.examples} conversations the share masked is {ref.masked_pct:.1f}% with "
        f"the reference answers ({_answer_words(shipped.reference):.0f} words on average; {ref.mostly_masked} of "
        f"{ref.examples} mostly masked) and {imp.masked_pct:.1f}% with the longer improved answers "
        f"({_answer_words(shipped.improved):.0f} words; {imp.mostly_masked} of {imp.examples}). The verdicts are "
        "judged on these written conversations (reference answers), not on the generated ones above, whose answers "
        "of a few words make 'most of a conversation is masked' hold by construction; a dozen demo conversations of "
        "one product, with no system prompt, are a small sample, which the verdict's detail names."
    )
