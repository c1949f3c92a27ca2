"""Lab C5.6: the end-of-turn token must be in the loss. 20 LoRA steps on the demo model (loss curve),
then the same SFT with and without ``<|im_end|>`` in the loss, and the does-it-stop test on both.
"""

from __future__ import annotations

from collections.abc import Sequence

from expkit.labs.base import AtLeast, LabContext, LabOutput, Measurement, RuleChange, SeedFigure, Within, judged
from expkit.labs.registry import lab

SEED_LOSS = SeedFigure("loss_step20", "loss after 20 LoRA steps", 1.7, "nats", "20 steps: loss 5.3 -> 1.7")
SEED_LOSS_START = SeedFigure("loss_step1", "loss at step 1", 5.3, "nats", "20 steps: loss 5.3 -> 1.7")
SEED_STOP = SeedFigure("stop_gap", "stopping without the end of turn in the loss", None, "", "generation does not stop")
SEED_RIGHT = SeedFigure(
    "answer_without_eos", "answers without the end of turn in the loss", None, "", "the answer is right"
)
SEED_LOSS_FALL = SeedFigure(
    "loss_fall_20", "loss at step 1 / loss after 20 LoRA steps", 5.3 / 1.7, "x", "20 steps: loss 5.3 -> 1.7 (3.1x)"
)
# the trend, not the level: a 0.9M demo model and the seed's 0.5B model start from different losses on different
# data, so only how far 20 steps bring the loss down compares
LOSS_FALL_RULE = Within(
    5.3 / 1.7,
    rel=0.5,
    source="our tolerance: the seed's 3.1x fall within +-50%; absolute losses of a 0.9M and a 0.5B model on "
    "different data do not compare",
)
# "does not stop": stopping falls by at least half of the prompts when the end of turn leaves the loss
STOP_RULE = AtLeast(0.5, source="our threshold: 50 points fewer stops without the end of turn in the loss")
# "the answer is right": on at least 9 of 10 held-out prompts
RIGHT_RULE = AtLeast(0.9, source="our reading of 'the answer is right': 90% of held-out prompts")
BASE_NOTE = (
    "the demo base model was pre-trained on chat transcripts whose assistant turn is never closed by "
    "<|im_end|>, which builds in part of 'without the end of turn in the loss it does not stop'"
)


def stops_on_saved_eos(
    generated: str, *, stopped: bool, eos_tokens: Sequence[str], other_special: Sequence[str]
) -> bool:
    """Whether a generation stops under the adapter's saved eos list: it stopped on the end of turn, or its text
    (decoded with special tokens) holds one of ``eos_tokens`` before any other special token (a new turn header
    first is a hallucinated turn, not a stop)."""
    if stopped:
        return True
    found = [generated.find(t) for t in eos_tokens if t in generated]
    if not found:
        return False
    first = min(found)
    return not any(0 <= generated.find(t) < first for t in other_special)


# issue 36: when and why the rule changed after the lab first ran (cca5f68, 2026-11-29), from `git log -p`
RULE_HISTORY = (
    RuleChange(
        "loss_fall_20",
        "2026-12-01",
        "591c5fe",
        first="loss at step 1 within +-1.0 of 5.3 nats and after 20 steps within +-0.4 of 1.7 nats",
        changed="loss at step 1 / loss after 20 steps within +-50% of 5.3 / 1.7 = 3.1x (the levels shown unjudged)",
        why="a 0.9M demo model and the seed's 0.5B model start from different losses on different data: the levels "
        "do not compare, the fall does",
        seed_text="'20 步 loss 5.3 → 1.7，答案对了却不会停'"  # noqa: RUF001 - the seed's own words
        " (20 steps: loss 5.3 -> 1.7, the answer is right yet it does not stop): the seed gives the loss as a "
        "fall over 20 steps, the evidence that training worked before it "
        "says that stopping did not",
    ),
    RuleChange(
        "stop_gap",
        "2026-12-01",
        "591c5fe",
        first="stop rate with the end of turn in the loss minus without, a stop on <|im_end|>, at least 0.5",
        changed="the same with a stop on any token of the adapter's saved eos list (generation_config.json); the "
        "<|im_end|>-only gap shown beside it",
        why="a user's generate() stops on every eos token the saved generation_config lists, not only on <|im_end|> "
        "(issue 22)",
        seed_text="'答案对了却不会停' (the answer is right yet it does not stop): stopping is what generate() does, "
        "and it stops on the eos tokens the saved generation_config lists",
    ),
)


@lab(
    id="C5.6",
    title="The end-of-turn token must be in the loss",
    claims=("C5.6",),
    seed=(SEED_LOSS_START, SEED_LOSS, SEED_LOSS_FALL, SEED_STOP, SEED_RIGHT),
    rule_history=RULE_HISTORY,
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

    # stops counted under the adapter's saved eos list (generation_config.json after the contract fix), as a user's
    # generate() would stop, not only on <|im_end|>
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo.path)
    eos_tokens = [str(t) for t in tok.convert_ids_to_tokens(list(res.contract_after))]
    other_special = [
        str(t.content) for t in tok.added_tokens_decoder.values() if t.special and t.content not in eos_tokens
    ]

    def saved_rate(check) -> float:  # noqa: ANN001 - a StopCheck
        n_stop = sum(
            stops_on_saved_eos(c.generated, stopped=c.stopped, eos_tokens=eos_tokens, other_special=other_special)
            for c in check.cases
        )
        return n_stop / len(check.cases)

    w_saved, wo_saved = saved_rate(w), saved_rate(wo)
    contrast = w_saved - wo_saved
    contrast_im_end = w.stop_rate - wo.stop_rate
    longer = wo.mean_generated_tokens / max(w.mean_generated_tokens, 1e-9)
    sample = next((c for c in wo.cases if c.answer_correct), wo.cases[0])
    measurements = (
        Measurement(
            "loss_step1",
            "loss at step 1",
            loss1,
            "nats",
            seed=SEED_LOSS_START,
            detail=f"a {demo.parameters:,}-parameter demo model pre-trained on transcripts of these tasks, not "
            "the seed's 0.5B model and data: shown, not judged (the level does not compare; the fall is judged)",
        ),
        Measurement(
            "loss_step20",
            "loss after 20 LoRA steps",
            loss20,
            "nats",
            seed=SEED_LOSS,
            detail="shown, not judged: the fall over the 20 steps is",
        ),
        judged(
            "loss_fall_20",
            "loss at step 1 / loss after 20 LoRA steps",
            ratio,
            "x",
            rule=LOSS_FALL_RULE,
            seed=SEED_LOSS_FALL,
            detail=f"{loss1:.2f} -> {loss20:.2f}; the seed 5.3 -> 1.7",
        ),
        judged(
            "stop_gap",
            "stop rate with the end of turn in the loss minus without, a stop on any token of the saved eos list",
            contrast,
            "",
            rule=STOP_RULE,
            seed=SEED_STOP,
            detail=f"{w_saved:.0%} with vs {wo_saved:.0%} without under the adapter's saved eos list "
            f"{eos_tokens}; on <|im_end|> alone {w.stop_rate:.0%} vs {wo.stop_rate:.0%} (gap {contrast_im_end:.2f}); "
            f"generations {longer:.1f}x as long without (mean {wo.mean_generated_tokens:.1f} of "
            f"{wo.max_new_tokens} tokens); e.g. expected {sample.expected!r}, got {sample.generated[:60]!r}. "
            f"Under the rule as first stated (the <|im_end|> gap) it would be "
            f"{STOP_RULE.judge(contrast_im_end).kind} (rule history). Note: {BASE_NOTE}",
        ),
        Measurement(
            "stop_without_eos_saved_list",
            "stop rate, end of turn masked out of the loss, a stop on any token of the saved eos list",
            wo_saved,
            "",
        ),
        Measurement(
            "stop_without_eos",
            "stop rate, end of turn masked out of the loss (<|im_end|> only)",
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
        f"demo model is tiny and its data synthetic, so only the fall, {ratio:.1f}x against the seed's 3.1x, is "
        "judged).\n\n"
        f"Counted as a user's generate() would stop under the adapter's saved eos list {eos_tokens}: "
        f"{w_saved:.0%} with the end of turn in the loss vs {wo_saved:.0%} without. "
        f"Greedy generation on {w.n} held-out prompts, on <|im_end|> alone: with the end of turn trained the model "
        "stops on "
        f"{w.stop_rate:.0%} of them (mean {w.mean_generated_tokens:.1f} tokens); without it, on "
        f"{wo.stop_rate:.0%} (mean {wo.mean_generated_tokens:.1f} tokens of a {wo.max_new_tokens}-token budget): "
        f"after the answer it carries on (e.g. expected {sample.expected!r}, got {sample.generated[:60]!r}); "
        + (
            "where it does emit <|im_end|> it is after extra text, never right after the answer"
            if wo.exact_match_rate == 0
            else "it stops right after the answer only sometimes"
        )
        + f" (exact answer-then-stop: {wo.exact_match_rate:.0%} vs {w.exact_match_rate:.0%}). The answer itself "
        f"is right on {wo.answer_accuracy:.0%} (masked) vs {w.answer_accuracy:.0%} (trained): "
        + (
            "'the answer is right' holds here; "
            if RIGHT_RULE.holds(wo.answer_accuracy)
            else f"'the answer is right' does not hold here ({RIGHT_RULE}); the {demo.parameters:,}-parameter demo "
            "model is not the seed's 0.5B model; "
        )
        + (
            "the stopping behaviour is the seed's (the verdict covers stopping only; " + BASE_NOTE + "). "
            if STOP_RULE.holds(contrast)
            else f"the stopping behaviour did NOT separate as the seed says ({STOP_RULE.judge(contrast).reason}). "
        )
        + "The saved generation_config was fixed from eos "
        f"{list(res.contract_before)} to {list(res.contract_after)} (the base stops on <|endoftext|>)."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
