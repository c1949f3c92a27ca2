"""Lab C3.6: warmup + cosine, drawn before step 1; the loop's other fixed choices checked in its code."""

from __future__ import annotations

from pathlib import Path

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_SCHEDULE = SeedFigure("schedule", "learning-rate schedule", None, "", "warmup + cosine")
SEED_LOOP = SeedFigure("loop_choices", "fixed choices of the loop", None, "",
                       "loss in fp32; clip_grad_norm_(..., 1.0); ignore_index=-100; zero_grad(set_to_none=True)")


@lab(id="C3.6", title="Warmup + cosine, and the loop's fixed choices", claims=("C3.6",), seed=(SEED_SCHEDULE, SEED_LOOP))
def run(ctx: LabContext) -> LabOutput:
    from expkit.render.schedule import draw_lr_schedule
    from expkit.train import CharLMConfig, TrainConfig, load_corpus, train_charlm

    seen_lr: dict[int, float] = {}
    drawn: list[str] = []

    def draw(schedule, _suggested):
        drawn.append(str(draw_lr_schedule(schedule, ctx.figure_path("c3_6_lr_schedule.png"))))
        return None

    steps = 40 if ctx.quick else 80
    tiny = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)
    cfg = TrainConfig(batch_size=4, seq_len=32, max_steps=steps, warmup_steps=steps // 10, log_interval=1,
                      eval_windows=8, eval_interval=10_000)
    r = train_charlm(model_config=tiny, train_config=cfg, corpus=load_corpus(), seed=ctx.seed, record=False,
                     draw_schedule=draw,
                     on_event=lambda e: seen_lr.__setitem__(e.step, e.values["lr"]) if e.kind == "log" else None)
    s = r.schedule
    max_diff = max(abs(lr - s.lr_at(step)) for step, lr in seen_lr.items())
    _, lrs = s.curve()
    peak_at = lrs.index(max(lrs))
    shape_ok = peak_at == s.warmup_steps - 1 and abs(lrs[-1] - s.lr_min) < 1e-12 and len(seen_lr) == steps
    import inspect

    from expkit.train.loop import train_step

    code = inspect.getsource(train_step)
    wanted = {".float()": "loss in fp32", "cfg.grad_clip": "clip (grad_clip default 1.0)",
              "ignore_index=IGNORE_INDEX": "ignore_index (-100)", "zero_grad(set_to_none=True)": "set_to_none"}
    missing = [label for token, label in wanted.items() if token not in code]
    from expkit.train.loop import IGNORE_INDEX

    choices_ok = not missing and IGNORE_INDEX == -100 and TrainConfig().grad_clip == 1.0
    measurements = (
        Measurement("schedule", "lr the loop used vs the schedule drawn before step 1 (max |diff|)", max_diff, "",
                    Verdict("reproduced") if shape_ok and max_diff == 0 else Verdict("not reproduced", "shape or lr differ"),
                    SEED_SCHEDULE, detail=f"{steps} steps, peak {s.lr_max:g} at step {peak_at + 1}, ends at {lrs[-1]:g}"),
        Measurement("loop_choices", "fixed choices found in train_step", "fp32 loss, clip 1.0, ignore_index -100, "
                    "set_to_none", "", Verdict("reproduced") if choices_ok else
                    Verdict("not reproduced", "missing: " + ", ".join(missing)), SEED_LOOP),
    )
    explanation = (
        f"expkit draws the schedule before step 1 (figure) and the loop reads its lr from the same object: over "
        f"{steps} logged steps the lr used matched the drawn curve exactly. Linear warmup for {s.warmup_steps} steps "
        f"lets AdamW's second-moment estimates settle before the peak lr {s.lr_max:g}; cosine decay to {s.lr_min:g} "
        "anneals at the end. The loop casts logits to fp32 before cross_entropy (whatever the autocast), clips the "
        "global gradient norm to 1.0, uses ignore_index=-100 (F.cross_entropy's default, so padded labels count "
        "nothing) and clears gradients with set_to_none=True (frees the buffers; the next backward writes instead of adds)."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=tuple(Path(d) for d in drawn))
