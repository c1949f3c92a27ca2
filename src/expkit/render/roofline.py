"""Roofline for a person: the estimate of one step (parts, bound, critical batch), the GPU registry, measured
roofs, decode points; and the figures (log-log: arithmetic intensity vs attainable FLOP/s)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from expkit.hardware import GPUSpec
    from expkit.perf.decode import DecodeMeasurement
    from expkit.perf.roofline import RooflineResult
    from expkit.perf.roofs import MeasuredRoofs

__all__ = [
    "RoofLine",
    "RoofPoint",
    "draw_roofline",
    "render_decode",
    "render_gpus",
    "render_measured_roofs",
    "render_roofline",
    "write_decode_figure",
    "write_roofline_figure",
]

_MARKERS = {"decode": "o", "prefill": "s", "train": "^"}


def format_si(x: float, unit: str) -> str:
    """``3.96e+14`` FLOP/s as ``396 TFLOP/s`` (3 significant digits, SI prefixes P T G M k)."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def format_time(seconds: float) -> str:
    """Seconds as ``1.2 s`` or, under a second, ``3.4 ms``."""
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


@dataclass(frozen=True)
class RoofLine:
    """One roof to draw: peak FLOP/s and bandwidth bytes/s."""

    label: str
    peak_flop_s: float
    bandwidth_bytes_s: float


@dataclass(frozen=True)
class RoofPoint:
    """A point under a roof: intensity (FLOP/byte) and achieved or attainable FLOP/s."""

    label: str
    intensity_flop_per_byte: float
    flop_s: float
    marker: str = "o"
    color: str | None = None


def draw_roofline(
    ax: Any,
    roofs: Sequence[RoofLine],
    points: Sequence[RoofPoint],
    *,
    title: str = "",
    x_range: tuple[float, float] | None = None,
) -> None:
    """Draw each roof (bandwidth slope up to the ridge, then flat) and the points, log-log."""
    import numpy as np

    xs = [p.intensity_flop_per_byte for p in points] + [r.peak_flop_s / r.bandwidth_bytes_s for r in roofs]
    lo, hi = x_range or (min(min(xs) / 4, 0.1), max(xs) * 4)
    grid = np.logspace(np.log10(lo), np.log10(hi), 200)
    for i, r in enumerate(roofs):
        ridge = r.peak_flop_s / r.bandwidth_bytes_s
        ax.plot(
            grid,
            np.minimum(r.peak_flop_s, grid * r.bandwidth_bytes_s),
            color=f"C{i}",
            lw=1.6,
            label=f"{r.label} (ridge {ridge:.3g} FLOP/B)",
        )
        ax.axvline(ridge, color=f"C{i}", lw=0.6, ls=":")
    for j, p in enumerate(points):
        ax.plot(
            [p.intensity_flop_per_byte],
            [p.flop_s],
            p.marker,
            color=p.color or f"C{(j + len(roofs)) % 10}",
            ms=7,
            label=p.label,
        )
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="FLOP/s", title=title)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=7, loc="lower right")


def render_roofline(result: RooflineResult) -> None:
    """Print where one step sits: the roof and its ridge, each part (FLOPs, bytes, intensity, bound, time),
    the step's bound and best-case speed, the critical batch, assumptions and the figure written."""
    from rich.table import Table

    from expkit.render.console import out_console

    est, con = result.estimate, out_console()
    con.print(
        f"[bold]{est.device}[/]: peak {format_si(est.peak_flop_s, 'FLOP/s')}, bandwidth "
        f"{format_si(est.bandwidth_bytes_s, 'B/s')} -> ridge [bold]{est.ridge_flop_per_byte:.0f} FLOP/byte[/]"
    )
    con.print(f"  source: {est.device_source}")
    con.print(
        f"{est.model} {est.phase}, batch {est.batch}, context {est.context}, {est.weight_bits}-bit weights; "
        f"{est.active_params:,} matmul weights per token of {est.linear_params:,}; "
        f"{format_si(est.weight_bytes, 'B')} of weights read per step"
    )
    table = Table("part", "FLOPs", "bytes", "FLOP/byte", "bound", "best-case time")
    for p in est.parts:
        table.add_row(
            p.name,
            format_si(p.flops, ""),
            format_si(p.bytes, "B"),
            f"{p.intensity_flop_per_byte:.3g}",
            p.bound,
            format_time(p.time_s),
        )
    con.print(table)
    con.print(
        f"step: {est.intensity_flop_per_byte:.3g} FLOP/byte -> [bold]{est.bound}-bound[/]; best case "
        f"{est.tokens_per_s:,.0f} tokens/s ({format_time(est.step_time_s)} per step of {est.tokens_per_step} tokens)"
    )
    if est.critical_batch is not None:
        con.print(f"critical batch: {est.critical_batch:.0f} ({est.critical_batch_note})")
    else:
        con.print(est.critical_batch_note)
    for a in est.assumptions:
        con.print(f"assumed: {a}")
    for a in est.approximations:
        con.print(f"approximation: {a}")
    if result.figure is not None:
        con.print(f"figure: {result.figure}")


def write_roofline_figure(result: RooflineResult, path: Path) -> Path:
    """Every phase's parts placed under the result's roof; returns the path written."""
    from expkit.render.figures import new_figure, save_figure

    points = [
        RoofPoint(f"{e.phase}: {p.name}", p.intensity_flop_per_byte, p.flops / p.time_s, _MARKERS[e.phase])
        for e in result.phases
        for p in e.parts
    ]
    est, roof = result.estimate, result.roof
    fig, (ax,) = new_figure(1, width_in=7.5, height_in=5)
    draw_roofline(
        ax,
        [RoofLine(roof.name, roof.peak_flop_s, roof.bandwidth_bytes_s)],
        points,
        title=f"{est.model}, batch {est.batch}, context {est.context}, {est.weight_bits}-bit weights",
    )
    return save_figure(fig, path)


def render_gpus(specs: Sequence[GPUSpec]) -> None:
    """The GPU registry as a table, then the datasheet each row came from."""
    from rich.table import Table

    from expkit.render.console import out_console

    table = Table("GPU", "bf16 TFLOP/s", "printed", "GB/s", "GB", "ridge")
    for g in specs:
        printed = f"{g.datasheet_tflops:g}" + (" sparse/2" if g.datasheet_sparse else " dense")
        table.add_row(
            g.name,
            f"{g.bf16_dense_tflops:g}",
            printed,
            f"{g.bandwidth_gb_s:g}",
            f"{g.memory_gb:g}",
            f"{g.ridge_flop_per_byte:.0f}",
        )
    con = out_console()
    con.print(table)
    con.print(
        "bf16 dense tensor peak; 'printed' is the datasheet figure ('sparse/2': printed with 2:4 sparsity, "
        "halved); GB/s = 1e9 bytes/s; ridge in FLOP/byte. Sources:"
    )
    for g in specs:
        con.print(f"[dim]{g.name}: {g.source}[/]")


def render_measured_roofs(m: MeasuredRoofs) -> None:
    """The GEMM and copy measured (best and median), the ridge, and the ratios to the references if run."""
    from expkit.render.console import out_console

    con = out_console()
    con.print(f"{m.device}, {m.threads} threads", markup=False)
    con.print(
        f"GEMM {m.dtype} n={m.gemm.n}: {format_si(m.peak_flop_s, 'FLOP/s')} (best of {m.gemm.repeats}; "
        f"median {format_si(m.gemm.median_flop_s, 'FLOP/s')})",
        markup=False,
    )
    con.print(
        f"copy {m.copy.size_bytes // 1024**2} MiB ({m.copy.method}): {format_si(m.bandwidth_bytes_s, 'B/s')} "
        f"(read + write; median {format_si(m.copy.median_bandwidth_bytes_s, 'B/s')})",
        markup=False,
    )
    con.print(f"ridge: {m.ridge_flop_per_byte:.3g} FLOP/byte", markup=False)
    ref_gemm, ref_copy = m.reference_gemm, m.reference_copy
    if ref_gemm is not None and m.gemm_vs_reference_ratio is not None:
        con.print(
            f"vs torch.matmul n={ref_gemm.n}: {format_si(ref_gemm.best_flop_s, 'FLOP/s')}, "
            f"ratio {m.gemm_vs_reference_ratio:.2f}",
            markup=False,
        )
    if ref_copy is not None and m.bandwidth_vs_reference_ratio is not None:
        con.print(
            f"vs {ref_copy.method} of {ref_copy.size_bytes / 1024**3:.3g} GiB: "
            f"{format_si(ref_copy.best_bandwidth_bytes_s, 'B/s')}, ratio {m.bandwidth_vs_reference_ratio:.2f}",
            markup=False,
        )


def render_decode(result: DecodeMeasurement) -> None:
    """One row per batch size: tokens/s, step time, intensity, achieved FLOP/s."""
    from expkit.render.console import out_console

    con = out_console()
    con.print("batch  tokens/s  step ms  FLOP/byte  achieved FLOP/s", markup=False)
    for p in result.points:
        con.print(
            f"{p.batch:>5}  {p.tokens_per_s:>8.0f}  {p.step_time_s * 1e3:>7.2f}  {p.intensity_flop_per_byte:>9.2f}  "
            f"{format_si(p.achieved_flop_s, 'FLOP/s')}",
            markup=False,
        )


def write_decode_figure(result: DecodeMeasurement, path: Path) -> Path:
    """The decode points under the CPU roof measured with them; returns the path written."""
    from expkit.render.figures import new_figure, save_figure

    if result.roof is None:
        raise ValueError("a decode figure needs the roof: measure_decode(..., with_roof=True)")
    roof = result.roof
    fig, (ax,) = new_figure(1, width_in=7, height_in=5)
    draw_roofline(
        ax,
        [RoofLine(roof.name, roof.peak_flop_s, roof.bandwidth_bytes_s)],
        [
            RoofPoint(f"batch {p.batch}: {p.tokens_per_s:.0f} tok/s", p.intensity_flop_per_byte, p.achieved_flop_s)
            for p in result.points
        ],
        title="greedy decode measured here",
    )
    return save_figure(fig, path)
