"""Lab C3.6: warmup + cosine, drawn before step 1; the loop's other fixed choices observed while a step runs."""

from __future__ import annotations

from pathlib import Path

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_SCHEDULE = SeedFigure("schedule", "learning-rate schedule", None, "", "warmup + cosine")
SEED_FP32 = SeedFigure("loss_fp32", "loss computed in fp32", None, "", "loss computed in fp32")
SEED_CLIP = SeedFigure("clip", "gradient clipping", None, "", "clip_grad_norm_(..., 1.0)")
SEED_IGNORE = SeedFigure("ignore_index", "ignored labels", None, "", "ignore_index=-100")
SEED_NONE = SeedFigure("set_to_none", "clearing gradients", None, "", "zero_grad(set_to_none=True)")


@lab(
    id="C3.6",
    title="Warmup + cosine, and the loop's fixed choices",
    claims=("C3.6",),
    seed=(SEED_SCHEDULE, SEED_FP32, SEED_CLIP, SEED_IGNORE, SEED_NONE),
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.schedule import draw_lr_schedule
    from expkit.train import CharLMConfig, StepLogged, TrainConfig, TrainRequest, load_corpus, train_charlm
    from expkit.train.step_contract import measure_step_contract

    seen_lr: dict[int, float] = {}
    drawn: list[str] = []

    def draw(schedule, _suggested):
        drawn.append(str(draw_lr_schedule(schedule, ctx.figure_path("c3_6_lr_schedule.png"))))
        return None

    steps = 40 if ctx.quick else 80
    tiny = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)
    cfg = TrainConfig(
        batch_size=4,
        seq_len=32,
        max_steps=steps,
        warmup_steps=steps // 10,
        log_interval=1,
        eval_windows=8,
        eval_interval=10_000,
    )
    r = train_charlm(
        TrainRequest(model_config=tiny, train_config=cfg, corpus=load_corpus(), seed=ctx.seed, record=False),
        draw_schedule=draw,
        on_event=lambda e: seen_lr.__setitem__(e.step, e.lr) if isinstance(e, StepLogged) else None,
    )
    s = r.schedule
    max_diff = max(abs(lr - s.lr_at(step)) for step, lr in seen_lr.items())
    _, lrs = s.curve()
    peak_at = lrs.index(max(lrs))
    shape_ok = peak_at == s.warmup_steps - 1 and abs(lrs[-1] - s.lr_min) < 1e-12 and len(seen_lr) == steps
    # the loop's fixed choices, observed while one real train_step runs under bf16 autocast
    c = measure_step_contract(model_config=CharLMConfig(), batch_size=4, seq_len=32, seed=ctx.seed)
    fp32 = c.logits_dtype == "torch.bfloat16" and c.loss_input_dtype == c.loss_dtype == "torch.float32"
    # the seed's clip is 1.0: the loop's default clip must be that, and must have acted on a norm above it
    clipped = (
        c.grad_clip == 1.0 and c.grad_norm_before_clip > c.grad_clip and c.grad_norm_at_step <= c.grad_clip * (1 + 1e-5)
    )
    ignored = c.max_abs_grad_ignored == 0.0 and c.max_abs_grad_counted > 0
    measurements = (
        judged(
            "schedule",
            "the loop's lr followed the warmup + cosine drawn before step 1",
            shape_ok and max_diff == 0,
            "",
            rule=Shown("the lr of every step is the drawn warmup + cosine"),
            seed=SEED_SCHEDULE,
            detail=f"max |lr used - lr drawn| = {max_diff:g} over {len(seen_lr)} logged steps; peak {s.lr_max:g} "
            f"at step {peak_at + 1}, ends at {lrs[-1]:g}",
        ),
        judged(
            "loss_fp32",
            "under bf16 autocast, cross_entropy got and returned float32",
            fp32,
            "",
            rule=Shown("the loss is computed in fp32 while the forward runs in bf16"),
            seed=SEED_FP32,
            detail=f"model output {c.logits_dtype}, cross_entropy input {c.loss_input_dtype}, loss {c.loss_dtype}",
        ),
        judged(
            "clip",
            f"gradient norm the optimizer saw <= {c.grad_clip:g} after a step whose norm was over it",
            clipped,
            "",
            rule=Shown("clip_grad_norm_ caps the global norm at 1.0"),
            seed=SEED_CLIP,
            detail=f"the loop's default clip {c.grad_clip:g}; norm after backward {c.grad_norm_before_clip:.3f}, "
            f"at optimizer.step {c.grad_norm_at_step:.6f}",
        ),
        judged(
            "ignore_index",
            "labels set to -100 give zero gradient",
            ignored,
            "",
            rule=Shown("-100 labels add nothing to the gradient"),
            seed=SEED_IGNORE,
            detail=f"{c.ignored_positions} positions at -100: max |dL/dlogits| {c.max_abs_grad_ignored:g}; "
            f"counted positions: {c.max_abs_grad_counted:.3g}",
        ),
        judged(
            "set_to_none",
            ".grad of every parameter is None after the step",
            c.grads_none_after_step,
            "",
            rule=Shown("zero_grad(set_to_none=True) frees the gradient buffers"),
            seed=SEED_NONE,
        ),
        Measurement(
            "schedule_max_diff", "lr the loop used vs the schedule drawn before step 1 (max |diff|)", max_diff, ""
        ),
    )
    yes = {True: "", False: "NOT "}
    explanation = (
        f"expkit draws the schedule before step 1 (figure) and the loop reads its lr from the same object: over "
        f"{len(seen_lr)} logged steps the largest gap between the lr used and the drawn curve was {max_diff:g}. Linear "
        f"warmup for {s.warmup_steps} steps lets AdamW's second-moment estimates settle before the peak lr "
        f"{s.lr_max:g}; cosine decay to {s.lr_min:g} anneals at the end.\n\n"
        f"One train_step of the 840K char LM under bf16 autocast, watched from outside: the model returned "
        f"{c.logits_dtype} and cross_entropy {yes[fp32]}received and returned float32 ({c.loss_input_dtype} -> "
        f"{c.loss_dtype}); the gradient norm after backward was {c.grad_norm_before_clip:.2f} and the optimizer "
        f"{yes[clipped]}saw it capped at {c.grad_clip:g} ({c.grad_norm_at_step:.6f}); the {c.ignored_positions} label "
        f"positions set to -100 {yes[ignored]}had zero gradient (largest {c.max_abs_grad_ignored:g}, against "
        f"{c.max_abs_grad_counted:.3g} elsewhere); and every .grad was {yes[c.grads_none_after_step]}None after the "
        "step (set_to_none frees the buffers; the next backward writes instead of adds)."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=tuple(Path(d) for d in drawn))
