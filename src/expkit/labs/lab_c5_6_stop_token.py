"""Lab C5.6: the end-of-turn token must be in the loss. 20 LoRA steps on the demo model (loss curve),
then the same SFT with and without ``<|im_end|>`` in the loss, and the does-it-stop test on both.
"""

from __future__ import annotations

from expkit.labs.base import AtLeast, LabContext, LabOutput, Measurement, SeedFigure, Within, judged
from expkit.labs.registry import lab

SEED_LOSS = SeedFigure("loss_step20", "loss after 20 LoRA steps", 1.7, "nats", "20 steps: loss 5.3 -> 1.7")
SEED_LOSS_START = SeedFigure("loss_step1", "loss at step 1", 5.3, "nats", "20 steps: loss 5.3 -> 1.7")
SEED_STOP = SeedFigure("stop_gap", "stopping without the end of turn in the loss", None, "", "generation does not stop")
SEED_RIGHT = SeedFigure(
    "answer_without_eos", "answers without the end of turn in the loss", None, "", "the answer is right"
)
LOSS_START_RULE = Within(5.3, abs=1.0, source="+-1.0 nats: our tolerance, the seed's model and data are not ours")
LOSS_RULE = Within(1.7, abs=0.4, source="+-0.4 nats: our tolerance, the seed's model and data are not ours")
# "does not stop": stopping falls by at least half of the prompts when the end of turn leaves the loss
STOP_RULE = AtLeast(0.5, source="our threshold: 50 points fewer stops without the end of turn in the loss")
# "the answer is right": on at least 9 of 10 held-out prompts
RIGHT_RULE = AtLeast(0.9, source="our reading of 'the answer is right': 90% of held-out prompts")
BASE_NOTE = (
    "the demo base model was pre-trained on chat transcripts whose assistant turn is never closed by "
    "<|im_end|>, which builds in part of 'without the end of turn in the loss it does not stop'"
)


@lab(
    id="C5.6",
    title="The end-of-turn token must be in the loss",
    claims=("C5.6",),
    seed=(SEED_LOSS_START, SEED_LOSS, SEED_STOP, SEED_RIGHT),
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.finetune.chatdata import generate_chat_examples
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.stopping import StopQuery, compare_eos_in_loss
    from expkit.finetune.training import SFTSettings
    from expkit.render.figures import new_figure, save_figure

    demo = ensure_demo_model(quick=ctx.quick)
    steps = 40 if ctx.quick else 150
    n_held = 16 if ctx.quick else 40
    # no system turn: the answer is then a few tokens from the question, which the tiny model can copy
    train = generate_chat_examples(n=320 if ctx.quick else 1200, seed=ctx.seed + 1, system_prompt=None)
    held = generate_chat_examples(n=n_held, seed=ctx.seed + 1000, system_prompt=None)
    # constant lr, so the first 20 steps are a 20-step run; lr 1e-3..2e-3 because the demo model is tiny
    lr = 2e-3 if ctx.quick else 1e-3  # the quick run has 40 steps to learn the stop, the full one 150
    settings = SFTSettings(
        steps=steps,
        learning_rate=lr,
        lr_scheduler="constant",
        batch_size=8,
        seed=ctx.seed,
        num_threads=1,
        max_length=256,
    )
    res = compare_eos_in_loss(
        model_dir=demo.path,
        train=train,
        held_out=held,
        out_dir=ctx.out_dir / "sft",
        settings=settings,
        store=ctx.out_dir / "runs",
        query=StopQuery(n=n_held, max_new_tokens=32),
    )
    w, wo = res.with_eos, res.without_eos
    loss1, loss20 = res.losses_with_eos[0], res.losses_with_eos[min(19, len(res.losses_with_eos) - 1)]
    ratio = loss1 / loss20

    fig, (ax1, ax2) = new_figure(2)
    ax1.plot(range(1, len(res.losses_with_eos) + 1), res.losses_with_eos, label="end of turn in the loss")
    ax1.plot(range(1, len(res.losses_without_eos) + 1), res.losses_without_eos, label="end of turn masked", alpha=0.8)
    ax1.plot([1, 20], [SEED_LOSS_START.value, SEED_LOSS.value], "k--", marker="o", label="seed (5.3 -> 1.7)")
    ax1.axvline(20, color="grey", lw=0.8)
    ax1.set(
        xlabel="step",
        ylabel="training loss (assistant tokens)",
        title=f"LoRA SFT on the demo model ({demo.parameters:,} params)",
    )
    ax1.legend()
    names = ["stop rate", "answer right", "exact + stop"]
    x = range(len(names))
    ax2.bar(
        [i - 0.2 for i in x], [w.stop_rate, w.answer_accuracy, w.exact_match_rate], 0.4, label="end of turn in the loss"
    )
    ax2.bar(
        [i + 0.2 for i in x], [wo.stop_rate, wo.answer_accuracy, wo.exact_match_rate], 0.4, label="end of turn masked"
    )
    ax2.set_xticks(list(x), names)
    ax2.set(ylim=(0, 1.05), title=f"greedy generation on {w.n} held-out prompts")
    ax2.legend()
    path = save_figure(fig, ctx.figure_path("c5_6_stop_token.png"))

    contrast = w.stop_rate - wo.stop_rate
    longer = wo.mean_generated_tokens / max(w.mean_generated_tokens, 1e-9)
    sample = next((c for c in wo.cases if c.answer_correct), wo.cases[0])
    measurements = (
        judged(
            "loss_step1",
            "loss at step 1",
            loss1,
            "nats",
            rule=LOSS_START_RULE,
            seed=SEED_LOSS_START,
            detail=f"a {demo.parameters:,}-parameter demo model pre-trained on transcripts of these tasks, not "
            "the seed's 0.5B model and data",
        ),
        judged(
            "loss_step20",
            "loss after 20 LoRA steps",
            loss20,
            "nats",
            rule=LOSS_RULE,
            seed=SEED_LOSS,
            detail=f"{loss1:.2f} -> {loss20:.2f} ({ratio:.1f}x; seed 5.3 -> 1.7, 3.1x)",
        ),
        judged(
            "stop_gap",
            "stop rate with the end of turn in the loss minus without (stopping only)",
            contrast,
            "",
            rule=STOP_RULE,
            seed=SEED_STOP,
            detail=f"{w.stop_rate:.0%} with vs {wo.stop_rate:.0%} without; generations {longer:.1f}x as long "
            f"without (mean {wo.mean_generated_tokens:.1f} of {wo.max_new_tokens} tokens); e.g. expected "
            f"{sample.expected!r}, got {sample.generated[:60]!r}. Note: {BASE_NOTE}",
        ),
        Measurement(
            "stop_without_eos",
            "stop rate, end of turn masked out of the loss",
            wo.stop_rate,
            "",
            detail=f"mean {wo.mean_generated_tokens:.1f} generated tokens of {wo.max_new_tokens}",
        ),
        Measurement(
            "stop_with_eos",
            "stop rate, end of turn in the loss",
            w.stop_rate,
            "",
            detail=f"mean {w.mean_generated_tokens:.1f} generated tokens",
        ),
        judged(
            "answer_without_eos",
            "answers right, end of turn masked",
            wo.answer_accuracy,
            "",
            rule=RIGHT_RULE,
            seed=SEED_RIGHT,
            detail=f"output starts with the expected answer (stopping or not), {w.n} held-out prompts; the "
            f"{demo.parameters:,}-parameter demo model, not the seed's 0.5B",
        ),
        Measurement("answer_with_eos", "answers right, end of turn in the loss", w.answer_accuracy, ""),
        Measurement("s_per_step", "seconds per LoRA step (batch 8, 1 thread)", res.s_per_step, "s"),
    )
    explanation = (
        f"{steps} LoRA steps (r = 16, all linear layers, lr {lr:g} constant, batch 8) on the {demo.parameters:,}-"
        f"parameter demo model, twice on the same {len(train)} synthetic conversations (user question, "
        "assistant answer, no system turn): once with "
        f"<|im_end|> in the loss (the template's generation markers include it), once with it masked "
        f"(--no-eos-in-loss). The loss goes {loss1:.2f} -> {loss20:.2f} in 20 steps (seed 5.3 -> 1.7; the "
        "demo model is tiny and its data synthetic, so only the shape compares).\n\n"
        f"Greedy generation on {w.n} held-out prompts: with the end of turn trained the model stops on "
        f"{w.stop_rate:.0%} of them (mean {w.mean_generated_tokens:.1f} tokens); without it, on "
        f"{wo.stop_rate:.0%} (mean {wo.mean_generated_tokens:.1f} tokens of a {wo.max_new_tokens}-token budget): "
        f"after the answer it carries on (e.g. expected {sample.expected!r}, got {sample.generated[:60]!r}); "
        + (
            "where it does emit <|im_end|> it is after extra text, never right after the answer"
            if wo.exact_match_rate == 0
            else "it stops right after the answer only sometimes"
        )
        + f" (exact answer-then-stop: {wo.exact_match_rate:.0%} vs {w.exact_match_rate:.0%}). The answer itself "
        f"is right on {wo.answer_accuracy:.0%} (masked) vs {w.answer_accuracy:.0%} (trained): the tiny model gets "
        "far fewer answers right than the seed's 0.5B model, so 'the answer is right' holds only for that share; "
        + (
            "the stopping behaviour is the seed's (the verdict covers stopping only; " + BASE_NOTE + "). "
            if STOP_RULE.holds(contrast)
            else f"the stopping behaviour did NOT separate as the seed says ({STOP_RULE.judge(contrast).reason}). "
        )
        + "The saved generation_config was fixed from eos "
        f"{list(res.contract_before)} to {list(res.contract_after)} (the base stops on <|endoftext|>)."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
