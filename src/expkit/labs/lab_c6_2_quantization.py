"""Lab C6.2: quantization helps inference, hardly training. Weight-only quantization moves the decode point
right and raises its ceiling; a training step already sits right of the ridge, where bytes do not limit."""

from __future__ import annotations

import time
from collections.abc import Callable

from expkit.labs.base import AtLeast, AtMost, LabContext, LabOutput, Measurement, RuleChange, SeedFigure, judged
from expkit.labs.registry import lab

SEED_DECODE = SeedFigure(
    "int8_decode_speedup",
    "weight-only quantization speeds decode up",
    None,
    "",
    "quantization helps inference: decode sits left of the ridge",
)
SEED_TRAIN = SeedFigure(
    "int8_train_speedup",
    "weight-only quantization hardly speeds training",
    None,
    "",
    "quantization hardly helps training: training sits right of the ridge",
)
MODEL = "qwen2.5-7b"
GPU = "H100"


DECODE_RULE = AtLeast(1.1, source="our margin: 'helps' = at least 10% faster than fp32 weights")
TRAIN_RULE = AtMost(1.1, source="our margin: 'hardly' = at most 10% faster, even if weights cost no time")

# issue 36: when and why the rules changed after the lab first ran (0623d0b, 2026-11-30), from `git log -p`
SEED_WORDS = "量化对推理有效、对训练用处不大，根本原因就是 decode 在 ridge 左边、训练在右边"  # noqa: RUF001 - the seed's own punctuation
RULE_HISTORY = (
    RuleChange(
        "int8_decode_speedup",
        "2026-12-01",
        "168fbd7",
        first="fp32 time / int8 weight-only time (torch._weight_int8pack_mm), decode GEMV, at least 1.1x",
        changed="fp32 time / stock int8 time (quantize_dynamic: int8 weights and int8 activations), at least 1.1x",
        why="the weight-only kernel measured 0.19x, and its 'differs' cause (the weight-read rate, the speed-up / 4) "
        "restated the figure; the stock path was judged instead. That argues about a cause, not from the seed: the "
        "seed's reason (decode left of the ridge: fewer weight bytes, less time) is about weight-only quantization",
    ),
    RuleChange(
        "weight_free_train_bound",
        "2026-12-01",
        "bdd0ec8",
        first="fp32 time / int8 weight-only time on a 512-token GEMM, at most 1.1x",
        changed="GEMM time / (GEMM time - the weight-streaming GEMV's time), at most 1.1x",
        why="the CPU int8 kernel is slower at every size, so 'hardly helps training' held whatever training's place "
        "on the roofline: a rule that could not fail",
        seed_text=f"'{SEED_WORDS}' (quantization helps inference, hardly training; the root cause is that decode "
        "sits left of the ridge and training right): the bound measures how much of a training GEMM is weight "
        "streaming, the seed's stated cause",
    ),
)


def _best_s(fn: Callable[[], object], reps: int) -> float:
    """One warm-up call, then the fastest of ``reps`` timed calls (a kernel's speed is the most it did)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def probe_int8_weight_only(seed: int, *, n: int = 4096, tokens: int = 1, reps: int = 4) -> tuple[float, float, float]:
    """A ``tokens`` x ``n`` by ``n`` x ``n`` matmul on this CPU, fp32 weights vs int8 weights with per-row scales
    (torch._weight_int8pack_mm, the weight-only kernel gpt-fast uses on CPU). ``tokens`` = 1 is a decode GEMV,
    hundreds of tokens a training-like GEMM. Returns (fp32 s, int8 s, max relative error), best of ``reps``."""
    import torch

    from expkit.hardware.threads import torch_threads

    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, n, generator=gen)  # 64 MiB fp32 at n = 4096: larger than the last-level cache
    scales = w.abs().amax(dim=1) / 127
    wq = torch.round(w / scales[:, None]).clamp(-127, 127).to(torch.int8)  # (out, in)
    x = torch.randn(tokens, n, generator=gen)  # (tokens, in)

    with torch_threads(1):
        t32 = _best_s(lambda: x @ w.T, reps)
        t8 = _best_s(lambda: torch._weight_int8pack_mm(x, wq, scales), reps)
        ref = x @ w.T
        err = float((ref - torch._weight_int8pack_mm(x, wq, scales)).abs().max() / ref.abs().max())
    return t32, t8, err


def probe_int8_dynamic(seed: int, *, n: int = 4096, tokens: int = 1, reps: int = 4) -> tuple[float, float, float]:
    """The stock int8 path: ``torch.ao.quantization.quantize_dynamic`` on an ``n`` x ``n`` ``nn.Linear`` (int8
    weights with per-tensor scale, activations quantized on the fly, fbgemm/onednn kernels), against the same
    Linear in fp32, ``tokens`` x ``n`` input. Returns (fp32 s, int8 s, max relative error), best of ``reps``."""
    import torch

    from expkit.hardware.threads import torch_threads

    gen = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(n, n, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, n, generator=gen))
    x = torch.randn(tokens, n, generator=gen)
    q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
    with torch_threads(1), torch.no_grad():
        t32 = _best_s(lambda: lin(x), reps)
        t8 = _best_s(lambda: q(x), reps)
        ref = lin(x)
        err = float((ref - q(x)).abs().max() / ref.abs().max())
    return t32, t8, err


def probe_fp32_gemm(seed: int, *, n: int = 4096, tokens: int = 512, reps: int = 3) -> float:
    """Seconds of a ``tokens`` x ``n`` by ``n`` x ``n`` fp32 matmul on the weights ``probe_int8_weight_only``
    builds from the same seed, best of ``reps``. With that probe's 1-token fp32 GEMV, which streams the same
    weights with almost no arithmetic, ``gemm / (gemm - gemv)`` bounds the speed-up of any weight-only
    quantization, whatever its kernel (weights that cost no time at all)."""
    import torch

    from expkit.hardware.threads import torch_threads

    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, n, generator=gen)
    x = torch.randn(tokens, n, generator=gen)
    with torch_threads(1):
        return _best_s(lambda: x @ w.T, reps)


@lab(
    id="C6.2",
    title="Weight-only quantization on the roofline: decode vs training",
    claims=("C6.2",),
    seed=(SEED_DECODE, SEED_TRAIN),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.models.description import load_model_description
    from expkit.perf.roofline import estimate_roofline, roof_for_gpu
    from expkit.render.figures import new_figure, save_figure
    from expkit.render.roofline import RoofLine, RoofPoint, draw_roofline

    shape = load_model_description(MODEL)
    roof = roof_for_gpu(GPU)
    bits = (16, 8, 4)
    dec = {
        b: estimate_roofline(model=shape, roof=roof, phase="decode", batch=1, context=1024, weight_bits=b) for b in bits
    }
    dec64 = {
        b: estimate_roofline(model=shape, roof=roof, phase="decode", batch=64, context=1024, weight_bits=b)
        for b in bits
    }
    train = {
        b: estimate_roofline(model=shape, roof=roof, phase="train", batch=4, context=2048, weight_bits=b) for b in bits
    }
    dec_speedup = dec[4].tokens_per_s / dec[16].tokens_per_s
    dec64_speedup = dec64[4].tokens_per_s / dec64[16].tokens_per_s
    train_speedup = train[4].tokens_per_s / train[16].tokens_per_s
    # measured here: the same weights as fp32 and as int8, decode (1 token) and a training-like GEMM (many tokens)
    t32, t8, err = probe_int8_weight_only(ctx.seed, tokens=1, reps=4 if ctx.quick else 10)
    train_tokens = 256 if ctx.quick else 512  # the CPU int8 kernel takes ~100x the fp32 time here: keep it short
    tt32, tt8, terr = probe_int8_weight_only(ctx.seed, n=2048, tokens=train_tokens, reps=2)
    dec_meas, train_meas = t32 / t8, tt32 / tt8
    # the training verdict: the most any weight-only quantization could save on a GEMM, from fp32 kernels only
    gemv_s = t32  # the decode probe's fp32 GEMV: the same 4096 x 4096 weights, streamed once
    gemm_s = probe_fp32_gemm(ctx.seed, tokens=train_tokens, reps=2 if ctx.quick else 3)
    train_bound = gemm_s / (gemm_s - gemv_s) if gemm_s > gemv_s else float("inf")
    # the stock int8 path on the same size: quantize_dynamic's int8 Linear (int8 weights and activations)
    d32, d8, derr = probe_int8_dynamic(ctx.seed, tokens=1, reps=4 if ctx.quick else 10)
    stock_meas = d32 / d8

    fig, (ax,) = new_figure(1, width_in=7.5, height_in=5)
    pts = []
    for b, marker in zip(bits, ("o", "s", "^"), strict=True):
        w = dec[b].parts[0]
        pts.append(
            RoofPoint(
                f"decode b=1, {b}-bit weights ({dec[b].tokens_per_s:.0f} tok/s)",
                w.intensity_flop_per_byte,
                w.flops / w.time_s,
                marker,
                "C1",
            )
        )
        t = train[b].parts[0]
        pts.append(
            RoofPoint(
                f"train 4x2048, {b}-bit weights ({train[b].tokens_per_s:,.0f} tok/s)",
                t.intensity_flop_per_byte,
                t.flops / t.time_s,
                marker,
                "C2",
            )
        )
    draw_roofline(
        ax,
        [RoofLine(f"{roof.name} bf16 dense", roof.peak_flop_s, roof.bandwidth_bytes_s)],
        pts,
        title=f"{MODEL}: weight matmuls with 16/8/4-bit weights (roofline model)",
    )
    path = save_figure(fig, ctx.figure_path("c6_2_quantization.png"))

    measurements = (
        judged(
            "int8_decode_speedup",
            "decode GEMV (1 token, 4096 x 4096): fp32 time / int8 weight-only time "
            "(torch._weight_int8pack_mm: int8 weights, fp32 activations), measured here",
            dec_meas,
            "x",
            rule=DECODE_RULE,
            seed=SEED_DECODE,
            detail=f"fp32 {t32 * 1e3:.2f} ms, int8 {t8 * 1e3:.2f} ms, 1 thread, best of {4 if ctx.quick else 10}; "
            f"max relative error {err:.3g}. Weight-only quantization is what the seed's reason (fewer weight bytes "
            "left of the ridge) is about; judged by the rule as first stated (rule history)",
        ),
        Measurement(
            "dynamic_int8_decode_speedup",
            "decode GEMV (1 token, 4096 x 4096 Linear): fp32 time / stock int8 time "
            "(torch.ao.quantization.quantize_dynamic: int8 weights and int8 activations), measured here",
            stock_meas,
            "x",
            detail=f"fp32 {d32 * 1e3:.2f} ms, int8 {d8 * 1e3:.2f} ms, 1 thread; max relative error {derr:.3g}. "
            f"Shown, not judged: it quantizes the activations too, which the claim is not about; under the changed "
            f"rule it would be {DECODE_RULE.judge(stock_meas).kind}",
        ),
        judged(
            "weight_free_train_bound",
            f"training-like GEMM ({train_tokens} tokens, 4096 x 4096, fp32): most speed-up any weight-only "
            "quantization could give = GEMM time / (GEMM time - weight-streaming GEMV time), measured here",
            train_bound,
            "x",
            rule=TRAIN_RULE,
            seed=SEED_TRAIN,
            detail=f"GEMM {gemm_s * 1e3:.1f} ms, GEMV {gemv_s * 1e3:.2f} ms (streams the same 64 MiB of weights), "
            "1 thread. Independent of the int8 kernel: it would fail if reading the weights were a large share "
            "of the GEMM (a memory-bound step)",
        ),
        Measurement(
            "int8_train_speedup",
            f"training-like GEMM ({train_tokens} tokens, 2048 x 2048): fp32 time / int8 "
            "weight-only time, measured here",
            train_meas,
            "x",
            detail=f"fp32 {tt32 * 1e3:.1f} ms, int8 {tt8 * 1e3:.1f} ms, 1 thread; max relative error {terr:.3g}. "
            "No verdict: this CPU's int8 kernel is slower at every size, so 'hardly helps' would hold whatever "
            "the roofline says; the bound above judges the claim",
        ),
        Measurement(
            "quant_decode_vs_train",
            f"{MODEL} on {roof.name}: 4-bit / 16-bit best-case speed, decode b=1 (roofline model)",
            dec_speedup,
            "x",
            detail=f"training step (4 x 2048 tokens): {train_speedup:.3f}x; decode b=64: {dec64_speedup:.2f}x; "
            "arithmetic from datasheet roofs, which cannot come out otherwise: not a verdict",
            provenance="computed",
        ),
        *(
            Measurement(
                f"decode_ai_{b}bit",
                f"decode b=1 weight-matmul intensity, {b}-bit weights",
                dec[b].parts[0].intensity_flop_per_byte,
                "FLOP/byte",
                detail=f"best case {dec[b].tokens_per_s:.0f} tokens/s; ridge {roof.ridge_flop_per_byte:.0f}",
                provenance="computed",
            )
            for b in bits
        ),
        Measurement(
            "train_ai_16bit",
            "training weight-matmul intensity, 16-bit weights",
            train[16].parts[0].intensity_flop_per_byte,
            "FLOP/byte",
            detail=f"{train[16].bound}-bound; 4-bit changes the step time by {100 * (1 / train_speedup - 1):+.1f}%",
            provenance="computed",
        ),
    )
    explanation = (
        f"Weight-only quantization shrinks the bytes each weight costs (2 -> 1 -> 0.5) but not the FLOPs. In decode "
        f"at batch 1 those bytes are the whole cost: {MODEL}'s weight matmuls move from "
        f"{dec[16].parts[0].intensity_flop_per_byte:.2f} to {dec[4].parts[0].intensity_flop_per_byte:.2f} FLOP/byte, "
        f"still left of the {roof.ridge_flop_per_byte:.0f} FLOP/byte ridge, and their ceiling (bandwidth x intensity) "
        f"rises with them: {dec_speedup:.2f}x the best-case tokens/s on the {roof.name} (not quite 4x: the KV cache "
        f"stays 16-bit). A training step of 4 x 2048 tokens already sits at "
        f"{train[16].parts[0].intensity_flop_per_byte:.0f} FLOP/byte, right of the ridge, where the time is FLOPs; "
        f"4-bit weights change it by {100 * (1 / train_speedup - 1):+.1f}%.\n\n"
        "These figures come from the roofline model with datasheet roofs, not from a GPU, and cannot come out "
        "otherwise; the verdicts are on what was measured here. On this CPU the weight-only int8 kernel "
        f"(torch._weight_int8pack_mm), the quantization the claim is about, runs a batch-1 GEMV in {t8 / t32:.2f}x "
        f"the fp32 time ({dec_meas:.2f}x faster), and {tt8 / tt32:.2f}x on a {train_tokens}-token GEMM. The stock "
        f"int8 path (quantize_dynamic, which quantizes the activations too) runs the same GEMV in {d8 / d32:.2f}x the "
        "fp32 time: the speed depends on the kernel. Fewer bytes pay off only when the kernel that reads them keeps "
        "up with memory."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
