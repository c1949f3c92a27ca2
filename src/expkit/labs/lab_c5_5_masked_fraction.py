"""Lab C5.5: most of a conversation is masked out of the loss (seed: 85% of one conversation)."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, verdict_within
from expkit.labs.registry import lab

SEED_MASKED = SeedFigure("masked_one", "masked fraction of one conversation", 85.0, "%",
                         "85% of the tokens of one conversation")


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
    no_system = audit_labels(tokenizer=tok, examples=generate_chat_examples(n=n, seed=ctx.seed + 5,
                                                                               system_prompt=None), show=0)
    one = 100 * audit.masked_fraction_per_example[0]
    per = [100 * f for f in audit.masked_fraction_per_example]

    fig, (ax,) = new_figure(1)
    ax.hist(per, bins=30, color="C0", alpha=0.8, label="with a system prompt")
    ax.hist([100 * f for f in no_system.masked_fraction_per_example], bins=30, color="C1", alpha=0.6,
            label="without")
    ax.axvline(85, color="k", ls="--", label="seed: 85%")
    ax.set(xlabel="masked fraction of a conversation (%)", ylabel="conversations",
           title=f"{n} synthetic conversations, demo tokenizer")
    ax.legend()
    path = save_figure(fig, ctx.figure_path("c5_5_masked_fraction.png"))

    reason = ("the synthetic answers are a few tokens long (a number, a word) while the system prompt and "
              "question are tens: the fraction depends on the data and the tokenizer, not the method")
    measurements = (
        Measurement("masked_one", "masked fraction of one conversation", one, "%",
                    verdict_within(one, 85.0, abs_tol=5.0, differs_reason=reason), SEED_MASKED,
                    detail=f"{len(tok)}-token BPE vocabulary"),
        Measurement("masked_all", "masked fraction of the data set", 100 * audit.masked_fraction, "%",
                    detail=f"{audit.total_tokens} tokens, {audit.trained_tokens} trained, {n} conversations"),
        Measurement("masked_no_system", "masked fraction without a system prompt",
                    100 * no_system.masked_fraction, "%"),
        Measurement("audit_s", f"label audit of {n} conversations", audit.elapsed_s, "s"),
    )
    explanation = (
        f"With the demo tokenizer and ChatML template, {one:.1f}% of the tokens of the first conversation are "
        f"masked out of the loss (seed: 85%), {100 * audit.masked_fraction:.1f}% over {n} conversations "
        f"({100 * no_system.masked_fraction:.1f}% without the system prompt). Only the assistant answer and "
        "its <|im_end|> are trained; the system prompt, the question and every role header are context. "
        f"The audit of {n} conversations took {audit.elapsed_s:.1f} s on this machine."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
