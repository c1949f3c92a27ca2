"""Lab C6.6: read a profiler table by sorting slow time into GEMM, attention, copy_, launch overhead or
device idle. One training step of the char LM (expkit.train) profiled and read into buckets here. Device idle
and launch overhead are gaps on a device timeline: the verdict needs a CUDA trace (``--device cuda``); on the
CPU the shares are shown without one."""

from __future__ import annotations

from expkit.labs.base import AtLeast, LabContext, LabOutput, Measurement, Needs, SeedFigure, judged
from expkit.labs.registry import lab

SEED_BUCKETS = SeedFigure(
    "named_share",
    "step time in the seed's five buckets",
    None,
    "",
    "sort slow time into GEMM, attention, copy_, launch overhead, device idle",
)
SEED_NAMED = ("gemm", "attention", "copy_cast", "overhead", "idle")  # the seed's five; other_compute is not one
NAMED_RULE = AtLeast(80.0, source="our threshold: the seed's five buckets hold at least 80% of the step")
NEEDS = Needs(
    "a CUDA trace: device idle and launch overhead are gaps on the device timeline, which a CPU trace "
    "does not have (run `expkit labs run C6.6 --device cuda`)"
)
THREADS = 1  # a neighbour's load cannot stall an OpenMP barrier with one thread (the machine is shared)


def _charlm_step(seed: int, device: str = "cpu"):  # noqa: ANN202 - a step function and a description
    """One optimizer step of the training helper's char LM (default shape, stdlib corpus)."""
    import itertools

    from expkit.train import CharLMConfig, TrainConfig, WarmupCosine, load_corpus, setup_training, train_step

    corpus = load_corpus()
    mcfg, tcfg = CharLMConfig(), TrainConfig()
    schedule = WarmupCosine(lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=tcfg.warmup_steps, max_steps=1000)
    setup = setup_training(
        model_config=mcfg, train_config=tcfg, corpus=corpus, seed=seed, device=device, schedule=schedule
    )
    counter = itertools.count()
    what = (
        f"expkit.train char LM ({mcfg.n_layer} layers, d={mcfg.n_embd}), batch {tcfg.batch_size} x "
        f"{tcfg.seq_len} characters, AdamW, fp32 on {'the CPU' if device == 'cpu' else 'CUDA'}"
    )
    return (lambda: train_step(setup, next(counter))), what


@lab(
    id="C6.6",
    title="A profiler table read into buckets: one char-LM training step",
    claims=("C6.6",),
    seed=(SEED_BUCKETS,),
)
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.hardware.threads import torch_threads
    from expkit.perf.buckets import BUCKET_LABELS
    from expkit.perf.profiler import profile
    from expkit.render.figures import new_figure, save_figure

    cuda = ctx.device == "cuda" and torch.cuda.is_available()
    step_fn, what = _charlm_step(ctx.seed, "cuda" if cuda else "cpu")
    steps = 1 if ctx.quick else 3
    with torch_threads(THREADS):
        rep = profile(step_fn, steps=steps, warmup=1, trace_path=ctx.figure_path("c6_6_trace.json"))
    named = sum(rep.shares[b] for b in SEED_NAMED)
    other_ops = [o.name for o in rep.top_ops if o.bucket == "other_compute"][:3]

    fig, (ax1, ax2) = new_figure(2, width_in=6.0, height_in=4.0)
    order = sorted(rep.buckets, key=lambda b: -b.share)
    ax1.barh(
        [b.label for b in order][::-1],
        [100 * b.share for b in order][::-1],
        color=["C3" if b.name == "other_compute" else "C0" for b in order][::-1],
    )
    ax1.set(xlabel="% of the profiled step", title="Self time by bucket")
    tops = list(rep.top_ops[:8])[::-1]
    ax2.barh(
        [o.name.replace("aten::", "")[:34] for o in tops],
        [1e3 * o.self_s for o in tops],
        color=[f"C{list(BUCKET_LABELS).index(o.bucket)}" for o in tops],
    )
    ax2.set(xlabel="self time (ms)", title="Top ops (colour = bucket)")
    path = save_figure(fig, ctx.figure_path("c6_6_buckets.png"))

    label = "share of the step in GEMM, attention, copy/cast, launch overhead, idle"
    detail = (
        f"{steps} profiled step(s) after 1 warm-up; {what}; other compute "
        f"{100 * rep.shares['other_compute']:.0f}% ({', '.join(other_ops) or 'none'})"
    )
    if cuda:
        named_row = judged(
            "named_share", label + " (CUDA trace)", 100 * named, "%", rule=NAMED_RULE, seed=SEED_BUCKETS, detail=detail
        )
    else:  # checked: no CUDA trace here; the CPU shares are supporting figures
        found = "a CUDA GPU, not asked for (--device cpu)" if torch.cuda.is_available() else "no CUDA GPU"
        named_row = judged(
            "named_share",
            "the five buckets on a CUDA trace",
            found,
            "",
            rule=NEEDS,
            seed=SEED_BUCKETS,
            detail=f"torch.cuda.is_available() = {torch.cuda.is_available()}, --device {ctx.device}",
        )
    measurements = (
        named_row,
        *(() if cuda else (Measurement("named_share_cpu", label + " (CPU trace)", 100 * named, "%", detail=detail),)),
        *(
            Measurement(
                f"share_{b.name}",
                f"{b.label} share",
                100 * b.share,
                "%",
                detail=f"{1e3 * b.seconds / steps:.1f} ms per step",
            )
            for b in order
        ),
        Measurement("dominant", "dominant bucket", BUCKET_LABELS[rep.dominant], ""),
        Measurement(
            "profiling_overhead",
            "profiled / plain step time",
            rep.profiling_overhead_ratio,
            "x",
            detail="median step time with torch.profiler on vs without it (plain steps before and after)",
        ),
        Measurement("verdict", "expkit's verdict", rep.verdict, ""),
    )
    explanation = (
        f"One training step of the char LM ({what}) was run under torch.profiler and every op's self time "
        f"was sorted by name: aten::mm/addmm/bmm are GEMM, scaled_dot_product_attention is attention, "
        f"copy_/to/_to_copy are copy/cast, time outside every op is launch/Python overhead. GEMM took "
        f"{100 * rep.shares['gemm']:.0f}%, attention {100 * rep.shares['attention']:.0f}%, copy/cast "
        f"{100 * rep.shares['copy_cast']:.0f}%, overhead {100 * rep.shares['overhead']:.0f}% and other compute "
        f"{100 * rep.shares['other_compute']:.0f}% (top: {', '.join(other_ops) or 'none'}).\n\n"
        + (
            "On this CUDA trace idle is measured as gaps on the device timeline. "
            if cuda
            else "On a CPU the CPU is the device, so 'device idle' is 0 by construction: the trace has no separate "
            "device timeline whose gaps could be measured (on a CUDA trace expkit splits idle into host wait and "
            "gaps); hence no verdict here. "
        )
        + f"The profiler made the step {rep.profiling_overhead_ratio:.2f}x as long as without it; on 2 shared "
        f"cores this ratio is noisy. Verdict: {rep.verdict}"
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
