"""Lab C3.8: bf16 autocast on a CPU: the gain of lower precision comes from hardware (seed: ~30x slower)."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, verdict_within
from expkit.labs.registry import lab

SEED_BF16 = SeedFigure("bf16_slowdown", "bf16 autocast vs fp32 on a CPU", 30.0, "x", "~30x slower on CPU")


@lab(id="C3.8", title="bf16 autocast on a CPU", claims=("C3.8",), seed=(SEED_BF16,))
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_autocast_slowdown

    repeats = 3 if ctx.quick else 5
    sizes = ((8, 128),) if ctx.quick else ((8, 128), (16, 256))
    runs = [measure_autocast_slowdown(model_config=CharLMConfig(), batch_size=b, seq_len=t, repeats=repeats,
                                      seed=ctx.seed) for b, t in sizes]
    main = runs[0]
    has_bf16 = main.cpu_bf16_instructions
    isa = torch.backends.cpu.get_cpu_capability()
    hw = ("this CPU lists avx512_bf16 (bf16 dot-product instructions), so oneDNN has native bf16 kernels for "
          "the matmuls; what is left is the cost of casts and of ops without a bf16 kernel"
          if has_bf16 else
          "this CPU has no bf16 instructions: every bf16 op is emulated through fp32 conversions")
    measurements = tuple(
        Measurement(f"bf16_slowdown_b{b}_t{t}", f"bf16 autocast / fp32, forward + backward, B = {b}, T = {t}",
                    r.slowdown, "x",
                    verdict_within(r.slowdown, SEED_BF16.value, rel_tol=0.5, differs_reason=hw) if i == 0 else None,
                    SEED_BF16 if i == 0 else None,
                    detail=f"fp32 {r.fp32_s * 1e3:.1f} ms, bf16 {r.bf16_s * 1e3:.1f} ms, best of {repeats}; "
                           f"torch CPU capability {isa}")
        for i, (r, (b, t)) in enumerate(zip(runs, sizes)))
    explanation = (
        f"Forward + backward of the 837,888-parameter char LM under torch.autocast(bfloat16) took "
        f"{main.slowdown:.2f}x the fp32 time here (the seed: ~30x). {hw[0].upper() + hw[1:]}. "
        "Lower precision pays only where the hardware has units for it (tensor cores, AMX, avx512_bf16); on a "
        "CPU without them bf16 is pure conversion overhead, which is the seed's ~30x. Timings are best of "
        "interleaved repeats on a shared 2-core machine."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
