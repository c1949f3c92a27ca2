"""Lab C5.5: most of a conversation is masked out of the loss (seed: 85% of one conversation). Judged on the
data set, not on one conversation: the share of conversations mostly masked, and the data set's fraction."""

from __future__ import annotations

from expkit.labs.base import Cause, KOfN, LabContext, LabOutput, Measurement, SeedFigure, Within, judged
from expkit.labs.registry import lab

SEED_MASKED = SeedFigure(
    "masked_all", "masked fraction of a conversation", 85.0, "%", "85% of the tokens of one conversation"
)
SEED_MOST = SeedFigure(
    "mostly_masked", "most of a conversation is masked", None, "", "most of a conversation is masked out of the loss"
)
FRACTION_RULE = Within(85.0, abs=5.0, source="+-5 points: our tolerance for one conversation's 85% as typical")


@lab(id="C5.5", title="Most of a conversation is masked out of the loss", claims=("C5.5",), seed=(SEED_MASKED,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.finetune.chatdata import generate_chat_examples
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

    fig, (ax,) = new_figure(1)
    ax.hist(per, bins=30, color="C0", alpha=0.8, label="with a system prompt")
    ax.hist([100 * f for f in no_system.masked_fraction_per_example], bins=30, color="C1", alpha=0.6, label="without")
    ax.axvline(85, color="k", ls="--", label="seed: 85%")
    ax.set(
        xlabel="masked fraction of a conversation (%)",
        ylabel="conversations",
        title=f"{n} synthetic conversations, demo tokenizer",
    )
    ax.legend()
    path = save_figure(fig, ctx.figure_path("c5_5_masked_fraction.png"))

    mostly = sum(f > 0.5 for f in audit.masked_fraction_per_example)
    trained_per = audit.trained_tokens / n
    total_per = audit.total_tokens / n
    # a measured cause for a data-set fraction off 85%: how long the trained part (answer + <|im_end|>) is here
    implied = 100 * (1 - trained_per / total_per)
    cause = Cause(
        "trained tokens per conversation (answer + end of turn, measured)",
        trained_per,
        f"of {total_per:.1f} tokens per conversation: the synthetic answers are a number or a word, so "
        f"{implied:.1f}% is masked; the fraction is set by the data's answer length, not by the method",
        unit="tokens",
    )
    measurements = (
        judged(
            "mostly_masked",
            "conversations with more than half of their tokens masked",
            mostly,
            "conversations",
            rule=KOfN(n, n, source="'most of a conversation': every conversation of the data set"),
            seed=SEED_MOST,
            detail=f"of {n}; lowest masked fraction {min(per):.1f}%",
        ),
        judged(
            "masked_all",
            "masked fraction of the data set (all tokens of all conversations)",
            100 * audit.masked_fraction,
            "%",
            rule=FRACTION_RULE,
            seed=SEED_MASKED,
            cause=cause,
            detail=f"{audit.total_tokens} tokens, {audit.trained_tokens} trained, {n} conversations; "
            f"per conversation: median {sorted(per)[n // 2]:.1f}%, range {min(per):.1f}-{max(per):.1f}%",
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
        Measurement("audit_s", f"label audit of {n} conversations", audit.elapsed_s, "s"),
    )
    explanation = (
        f"With the demo tokenizer and ChatML template, {100 * audit.masked_fraction:.1f}% of the tokens of {n} "
        f"conversations are masked out of the loss (seed: 85% of one conversation; the first one here: {one:.1f}%), "
        f"and {mostly} of {n} conversations have more than half of their tokens masked "
        f"({100 * no_system.masked_fraction:.1f}% without the system prompt). Only the assistant answer and "
        "its <|im_end|> are trained; the system prompt, the question and every role header are context. "
        f"The audit of {n} conversations took {audit.elapsed_s:.1f} s on this machine."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
