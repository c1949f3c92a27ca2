"""Lab C3.8: bf16 autocast on a CPU (the seed: ~30x slower), and where lower precision pays: hardware with
bf16 units. The CPU figures are measured here; the GPU side only when torch sees a CUDA device."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from expkit.labs.base import (
    AtLeast,
    Cause,
    LabContext,
    LabOutput,
    Measurement,
    Needs,
    RuleChange,
    SeedFigure,
    Within,
    judged,
)
from expkit.labs.lab_c3_7_item_sync import MAD, RANGE, range_spread_of, spread_of
from expkit.labs.registry import lab

BF16_SLOWDOWN = 30.0  # seed: ~30x slower on CPU
SEED_BF16 = SeedFigure("bf16_slowdown", "bf16 autocast vs fp32 on a CPU", BF16_SLOWDOWN, "x", "~30x slower on CPU")
SEED_SLOW = SeedFigure("bf16_slower", "bf16 autocast on a CPU is slow", None, "", "bf16 autocast on a CPU is slow")
SEED_HW = SeedFigure(
    "bf16_gain_cuda", "where lower precision gains", None, "", "the gain of lower precision comes from hardware"
)
CPU_RULE = Within(BF16_SLOWDOWN, rel=0.5, source="our choice: '~30x' read as 15x to 45x")
# H100/H200 datasheets: ~67 TFLOP/s fp32 vs ~990 dense bf16 on tensor cores; 2x is far below that on purpose
CUDA_RULE = AtLeast(
    2.0, source="our choice: tensor-core bf16 against non-TF32 fp32; datasheets give ~15x on H100, so 2x is a low bar"
)
GEMM_N_CPU, GEMM_N_CUDA = 512, 8192
# char LM widths swept for where bf16 starts to win on this CPU (4 layers, B = 8, T = 128; 128 is the 840K model)
SWEEP_WIDTHS_QUICK, SWEEP_WIDTHS_FULL = (64, 128, 192), (64, 128, 256, 512)


@dataclass(frozen=True)
class SizePoint:
    """One model size of the sweep: its parameters and bf16 autocast / fp32 step time (best of 2)."""

    n_embd: int
    params: int
    slowdown: float


def sweep_model_sizes(widths: tuple[int, ...], *, seed: int, batch: int = 8, seq: int = 128) -> tuple[SizePoint, ...]:
    """bf16 autocast / fp32 forward + backward time of the 4-layer char LM at each width, on the CPU (the caller
    sets the threads)."""
    from expkit.train import CharLM, CharLMConfig, count_parameters
    from expkit.train.probes import measure_autocast_slowdown

    points = []
    for d in widths:
        cfg = CharLMConfig(n_embd=d)
        timing = measure_autocast_slowdown(model_config=cfg, batch_size=batch, seq_len=seq, repeats=2, seed=seed)
        points.append(SizePoint(d, count_parameters(CharLM(cfg)), timing.slowdown))
    return tuple(points)


def bf16_wins_from(points: tuple[SizePoint, ...]) -> SizePoint | None:
    """The smallest swept size from which bf16 autocast is faster than fp32 at every larger size; None if it never
    is at the largest."""
    wins: SizePoint | None = None
    for p in sorted(points, key=lambda p: p.params):
        wins = (wins or p) if p.slowdown < 1.0 else None
    return wins


def slower_rule(spread: float, statistic: str = RANGE) -> AtLeast:
    """bf16 slower than fp32 by more than the timing noise: twice the measured run-to-run ``spread`` (``statistic``:
    the range (max - min) / median, as first stated, :func:`range_spread_of`), at least 5%."""
    return AtLeast(
        1 + max(0.05, 2 * spread),
        source=f"our choice: over 1 by twice the runs' {statistic} measured here ({spread:.0%}), at least 5%",
    )


# issue 36: when and why the rule changed after the lab first ran (bc4ede5, 2026-11-29), from `git log -p`
RULE_HISTORY = (
    RuleChange(
        "bf16_slower",
        "2026-11-30",
        "ed5c74c",
        first=f"bf16 / fp32 step time at least 1 + max(5%, 2 x the runs' {RANGE})",
        changed=f"the same with 2 x the runs' {MAD}",
        why="in a full run one of 7 runs disturbed by other work (10.39x among 3.8-4.6x) made max - min 160%, "
        "which raised the bar over the measured 4.1x and flipped the verdict; the median deviation ignores one such "
        "run",
    ),
)


def cpu_cause(has_bf16: bool | None, slowdown: float, gemm_ratio: float) -> Cause | None:
    """Why the step slowdown is under the seed's ~30x, from a probe apart from the step: a bf16 matmul that runs
    faster than an fp32 one here (``gemm_ratio``: bf16 / fp32 time of one 512 x 512 matmul, < 1) on a CPU whose
    /proc/cpuinfo lists bf16 instructions; None when either is missing (nothing measured here explains it)."""
    if has_bf16 and gemm_ratio < 1 and slowdown < CPU_RULE.target:
        return Cause(
            f"bf16 / fp32 time of one {GEMM_N_CPU} x {GEMM_N_CPU} matmul (measured)",
            gemm_ratio,
            f"a bf16 matmul runs {1 / gemm_ratio:.1f}x as fast as an fp32 one on this CPU, whose /proc/cpuinfo lists "
            "bf16 instructions (avx512_bf16 or amx_bf16): it has the bf16 units whose absence makes bf16 slow",
            unit="x",
            measured_by=f"a separate {GEMM_N_CPU} x {GEMM_N_CPU} matmul timed in bf16 and fp32 (best of 5, 1 thread) "
            "and the flags line of /proc/cpuinfo",
        )
    return None


def _step_slowdowns(
    *,
    device: str,
    runs: int,
    batch: int,
    seq: int,
    seed: int,  # noqa: ANN202
    model_config=None,
):  # noqa: ANN001 - CharLMConfig; None: the 840K char LM
    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_autocast_slowdown

    return [
        measure_autocast_slowdown(
            model_config=model_config or CharLMConfig(),
            device=device,
            batch_size=batch,
            seq_len=seq,
            repeats=1,
            seed=seed + i,
        )
        for i in range(runs)
    ]


def gpu_rows(
    *,
    device: str,
    name: str,
    runs: int,
    seed: int,
    gemm_n: int = GEMM_N_CUDA,
    batch: int = 32,
    seq: int = 256,
    model_config=None,
) -> tuple[Measurement, Measurement, str]:  # noqa: ANN001
    """The judged tensor-core row (bf16 / fp32 matmul throughput), the char LM's step slowdown beside it, and
    their sentence. (Tests run this on the CPU with small shapes.)"""
    import torch

    from expkit.perf.roofs import measure_gemm

    c32 = measure_gemm(n=gemm_n, dtype="float32", device=device, repeats=10)
    c16 = measure_gemm(n=gemm_n, dtype="bfloat16", device=device, repeats=10)
    gain = c16.best_flop_s / c32.best_flop_s
    steps = [
        s.slowdown
        for s in _step_slowdowns(device=device, runs=runs, batch=batch, seq=seq, seed=seed, model_config=model_config)
    ]
    judged_row = judged(
        "bf16_gain_cuda",
        f"{name}: bf16 / fp32 matmul throughput, {gemm_n} x {gemm_n}",
        gain,
        "x",
        rule=CUDA_RULE,
        seed=SEED_HW,
        detail=f"fp32 {c32.best_flop_s / 1e12:.2f} TFLOP/s "
        f"(TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}), "
        f"bf16 {c16.best_flop_s / 1e12:.2f} TFLOP/s, best of 10",
    )
    step_row = Measurement(
        "bf16_slowdown_cuda",
        f"{name}: bf16 autocast / fp32 step time, char LM B = {batch}, T = {seq}, median",
        statistics.median(steps),
        "x",
        detail=f"{runs} runs: {', '.join(f'{v:.2f}' for v in steps)}",
    )
    text = f"On {name} a bf16 matmul ran at {gain:.1f}x the fp32 rate: " + (
        "lower precision pays where the hardware has units for it."
        if CUDA_RULE.holds(gain)
        else "less than the 2x this lab asks of tensor cores; see the detail for the rates."
    )
    return judged_row, step_row, text


@lab(
    id="C3.8",
    title="bf16 autocast on a CPU",
    claims=("C3.8",),
    seed=(SEED_BF16, SEED_SLOW, SEED_HW),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.hardware.threads import torch_threads
    from expkit.perf.roofs import measure_gemm

    runs = 3 if ctx.quick else 7
    isa = torch.backends.cpu.get_cpu_capability()
    # one thread: on shared cores torch's threads spin-wait on each other and swing the timings
    with torch_threads(1):
        steps = _step_slowdowns(device="cpu", runs=runs, batch=8, seq=128, seed=ctx.seed)
        g32 = measure_gemm(n=GEMM_N_CPU, dtype="float32", repeats=5)
        g16 = measure_gemm(n=GEMM_N_CPU, dtype="bfloat16", repeats=5)
        sizes = sweep_model_sizes(SWEEP_WIDTHS_QUICK if ctx.quick else SWEEP_WIDTHS_FULL, seed=ctx.seed)
    wins = bf16_wins_from(sizes)
    sweep_text = ", ".join(f"{p.params / 1e6:.2f}M {p.slowdown:.2f}x" for p in sizes)
    slow = [s.slowdown for s in steps]
    med = statistics.median(slow)
    spread, mad = range_spread_of(slow), spread_of(slow)  # the range judges: the rule as first stated
    has_bf16 = steps[0].cpu_bf16_instructions
    gemm_slow = g32.best_flop_s / g16.best_flop_s
    flags = {True: "lists", False: "does not list", None: "could not be read for"}[has_bf16]
    measurements = [
        judged(
            "bf16_slowdown",
            "CPU: bf16 autocast / fp32 step time, char LM B = 8, T = 128, median",
            med,
            "x",
            rule=CPU_RULE,
            seed=SEED_BF16,
            cause=cpu_cause(has_bf16, med, gemm_slow),
            detail=f"{runs} runs: {', '.join(f'{v:.2f}' for v in slow)} (spread {spread:.0%}); fp32 "
            f"{statistics.median(s.fp32_s for s in steps) * 1e3:.1f} ms, bf16 "
            f"{statistics.median(s.bf16_s for s in steps) * 1e3:.1f} ms; forward + backward, 1 thread",
        ),
        judged(
            "bf16_slower",
            "CPU: bf16 autocast / fp32 step time, same runs",
            med,
            "x",
            rule=slower_rule(spread),
            seed=SEED_SLOW,
            detail=f"the direction of the claim at the 840K char LM; its size is judged in the row above. Spread "
            f"{RANGE} {spread:.0%}, median deviation {mad:.0%}: under the changed rule '{slower_rule(mad, MAD)}' it "
            f"would be {slower_rule(mad, MAD).judge(med).kind} (rule history). Measured "
            f"beside it: /proc/cpuinfo {flags} bf16 instructions (torch CPU capability {isa}); bf16 / fp32 step time "
            f"by size {sweep_text}: bf16 wins "
            + (f"from {wins.params / 1e6:.2f}M parameters" if wins is not None else "at no size swept here"),
        ),
        Measurement(
            "bf16_gemm_slowdown_cpu",
            f"CPU: bf16 / fp32 time of one {GEMM_N_CPU} x {GEMM_N_CPU} matmul",
            gemm_slow,
            "x",
            detail=f"fp32 {g32.best_flop_s / 1e9:.1f} GFLOP/s, bf16 {g16.best_flop_s / 1e9:.1f} GFLOP/s, best of 5",
        ),
        Measurement(
            "bf16_wins_from_params",
            "smallest char LM (of the sweep) from which bf16 autocast beats fp32 on this CPU",
            wins.params if wins is not None else f"none up to {max(p.params for p in sizes):,}",
            "params" if wins is not None else "",
            detail=f"bf16 / fp32 step time by size (4 layers, B = 8, T = 128, 1 thread, best of 2): {sweep_text}",
        ),
        Measurement(
            "cpu_bf16_instructions",
            "bf16 instructions listed by /proc/cpuinfo",
            "n/a" if has_bf16 is None else has_bf16,
            "",
            detail=f"torch CPU capability {isa}",
        ),
    ]
    slower = slower_rule(spread).holds(med)
    size_text = (
        "within the 15x-45x read as '~30x'"
        if CPU_RULE.holds(med)
        else f"{'under' if med < CPU_RULE.target else 'over'} the 15x-45x read as the seed's '~30x'"
    )
    verdict_text = f"{'slower' if slower else 'not slower'} than fp32 beyond the noise and {size_text}"
    text = (
        f"Forward + backward of the 840K char LM under torch.autocast(bfloat16) took {med:.2f}x the fp32 time "
        f"on this CPU (median of {runs}, spread {spread:.0%}), {verdict_text}; one bf16 "
        f"{GEMM_N_CPU}x{GEMM_N_CPU} matmul took {gemm_slow:.2f}x the fp32 one. /proc/cpuinfo {flags} bf16 "
        f"instructions (avx512_bf16, amx_bf16); torch's CPU capability is {isa}. The verdict holds for this model "
        f"size on this CPU only: by model size the bf16 / fp32 step time was {sweep_text}, so "
        + (
            f"bf16 autocast wins here from {wins.params / 1e6:.2f}M parameters on. "
            if wins is not None
            else "bf16 autocast won at none of the sizes swept here (on a CPU with bf16 units it wins as the matmuls "
            "grow). "
        )
    )
    if torch.cuda.is_available():
        gain_row, step_row, gpu_text = gpu_rows(
            device="cuda", name=f"CUDA ({torch.cuda.get_device_name()})", runs=runs, seed=ctx.seed
        )
        measurements.insert(2, gain_row)
        measurements.append(step_row)
        text += gpu_text
    else:
        measurements.insert(
            2,
            judged(
                "bf16_gain_cuda",
                "bf16 / fp32 matmul throughput on tensor cores",
                "no CUDA device",
                "",
                rule=Needs("a CUDA GPU with tensor cores"),
                seed=SEED_HW,
                detail="torch.cuda.is_available() is False; the CPU figures are the other half of the comparison",
            ),
        )
        text += "torch sees no CUDA device here, so the hardware side of the claim (tensor cores) is not measured."
    return LabOutput(measurements=tuple(measurements), explanation=text)
