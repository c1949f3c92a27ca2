"""``expkit roofline``: the ridge point and where a model's step sits; ``gpus``, ``measure``, ``decode``."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json
from expkit.perf.roofline import PHASES, WEIGHT_BITS

app = typer.Typer(invoke_without_command=True)  # help: the callback's docstring, examples included


def _fmt(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _fmt_time(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def _cpu_roof(quick: bool = True, threads: int | None = None):  # noqa: ANN202 - a Roof
    from expkit.perf.roofline import Roof
    from expkit.perf.roofs import measure_roofs

    m = measure_roofs(
        device="cpu", gemm_n=1024 if quick else 2048, copy_bytes=256 * 1024**2, repeats=3, threads=threads
    )
    return Roof(
        name="cpu (measured here)",
        peak_flop_s=m.peak_flop_s,
        bandwidth_bytes_s=m.bandwidth_bytes_s,
        source=f"measured: float32 GEMM n={m.gemm.n}, {m.copy.method} of {m.copy.size_bytes // 1024**2} MiB, "
        f"{m.threads} threads",
    )


@app.callback()
def roofline(
    ctx: typer.Context,
    gpu: str = typer.Option("H100", "--gpu", help="A GPU from `expkit roofline gpus`, or 'cpu' (measures this CPU)."),
    model: str = typer.Option(
        "qwen2.5-0.5b",
        "--model",
        help="A catalog name, a model directory, a config.json or a Hub ID in the local HF cache.",
    ),
    phase: str = typer.Option("decode", "--phase", help=f"One of: {', '.join(PHASES)}."),
    batch: int = typer.Option(1, "--batch", help="Sequences per step."),
    context: int = typer.Option(
        1024, "--context", help="Tokens of context (decode: KV-cache length; else sequence length)."
    ),
    weight_bits: int | None = typer.Option(
        None,
        "--weight-bits",
        help=f"Weight-only quantization: {', '.join(map(str, WEIGHT_BITS))} "
        "(default: the checkpoint's, 16 when not quantized).",
    ),
    figure: Path | None = typer.Option(
        None, "--figure", help="Write a roofline figure (PNG) with all three phases placed."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the RooflineEstimate as JSON."),
) -> None:
    """The ridge point (peak FLOP/s / bandwidth) of a GPU and where one step of a model sits: arithmetic
    intensity per part (decode: weight matmuls and KV-cache attention apart), memory- or compute-bound,
    best-case tokens/s and the batch at which decode turns compute-bound. Mixture-of-experts models read
    the experts a step's tokens route to (uniform routing assumed); MLA caches its latent; sliding-window
    layers read at most their window. Assumptions and approximations are printed.

    Examples:

      expkit roofline --gpu H100 --json                      # ridge_flop_per_byte 295

      expkit roofline --gpu a100-80gb --model qwen2.5-7b --phase decode --batch 64 --weight-bits 4

      expkit roofline --gpu cpu --phase train --context 256 --figure roofline.png

      expkit roofline --model mixtral-8x7b --batch 64     # MoE: experts read per step under uniform routing

      expkit roofline gpus;  expkit roofline measure --compare;  expkit roofline decode
    """
    if ctx.invoked_subcommand is not None:
        return
    from expkit.perf.roofline import estimate_roofline, load_model_shape, roof_for_gpu

    if figure is not None:
        _check_figure_path(figure)
    from expkit.cli.mem import fields_as_flags

    shape = load_model_shape(model)
    roof = _cpu_roof() if gpu.strip().lower() == "cpu" else roof_for_gpu(gpu)
    with fields_as_flags():  # weight_bits None: as the checkpoint stores its weights (the memory ledger's bytes)
        est = estimate_roofline(
            model=shape, roof=roof, phase=phase, batch=batch, context=context, weight_bits=weight_bits
        )
    if figure is not None:
        figure = _write_figure(figure, shape, roof, est, batch=batch, context=context, weight_bits=weight_bits)
    if json_out:
        emit_json(est)
        return
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    con.print(
        f"[bold]{est.device}[/]: peak {_fmt(est.peak_flop_s, 'FLOP/s')}, bandwidth "
        f"{_fmt(est.bandwidth_bytes_s, 'B/s')} -> ridge [bold]{est.ridge_flop_per_byte:.0f} FLOP/byte[/]"
    )
    con.print(f"  source: {est.device_source}")
    con.print(
        f"{est.model} {est.phase}, batch {est.batch}, context {est.context}, {est.weight_bits}-bit weights; "
        f"{shape.active_linear_params:,} matmul weights per token of {shape.linear_params:,}; "
        f"{_fmt(est.weight_bytes, 'B')} of weights read per step"
    )
    table = Table("part", "FLOPs", "bytes", "FLOP/byte", "bound", "best-case time")
    for p in est.parts:
        table.add_row(
            p.name,
            _fmt(p.flops, ""),
            _fmt(p.bytes, "B"),
            f"{p.intensity_flop_per_byte:.3g}",
            p.bound,
            _fmt_time(p.time_s),
        )
    con.print(table)
    con.print(
        f"step: {est.intensity_flop_per_byte:.3g} FLOP/byte -> [bold]{est.bound}-bound[/]; best case "
        f"{est.tokens_per_s:,.0f} tokens/s ({_fmt_time(est.step_time_s)} per step of {est.tokens_per_step} tokens)"
    )
    if est.critical_batch is not None:
        con.print(f"critical batch: {est.critical_batch:.0f} ({est.critical_batch_note})")
    else:
        con.print(est.critical_batch_note)
    for a in est.assumptions:
        con.print(f"assumed: {a}")
    for a in est.approximations:
        con.print(f"approximation: {a}")
    if figure is not None:
        con.print(f"figure: {figure}")


FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def _check_figure_path(path: Path) -> None:
    """Refuse, before any work, a --figure that is a directory or has a suffix matplotlib would not write."""
    from expkit.errors import UsageError

    if path.is_dir():
        raise UsageError(f"--figure {str(path)!r} is a directory", hint="give a file name, e.g. roofline.png")
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise UsageError(
            f"--figure suffix {path.suffix or '(none)'!r} is not one of {', '.join(FIGURE_SUFFIXES)}",
            hint=f"e.g. --figure {path.with_suffix('.png')}",
        )


def _write_figure(path: Path, shape, roof, chosen, *, batch: int, context: int, weight_bits: int | None) -> Path:  # noqa: ANN001
    from expkit.perf.roofline import estimate_roofline
    from expkit.render.figures import new_figure, save_figure
    from expkit.render.roofline import RoofLine, RoofPoint, draw_roofline

    points = []
    markers = {"decode": "o", "prefill": "s", "train": "^"}
    for ph in PHASES:
        e = (
            chosen
            if ph == chosen.phase
            else estimate_roofline(
                model=shape, roof=roof, phase=ph, batch=batch, context=context, weight_bits=weight_bits
            )
        )
        for p in e.parts:
            points.append(RoofPoint(f"{ph}: {p.name}", p.intensity_flop_per_byte, p.flops / p.time_s, markers[ph]))
    fig, (ax,) = new_figure(1, width_in=7.5, height_in=5)
    draw_roofline(
        ax,
        [RoofLine(roof.name, roof.peak_flop_s, roof.bandwidth_bytes_s)],
        points,
        title=f"{shape.name}, batch {batch}, context {context}, {chosen.weight_bits}-bit weights",
    )
    return save_figure(fig, path)  # the path written


@app.command("gpus")
def gpus(json_out: bool = typer.Option(False, "--json", help="Print the registry as JSON.")) -> None:
    """List the GPU registry: bf16 dense TFLOP/s, bandwidth, memory, ridge, and the datasheet each came from.

    Examples:

      expkit roofline gpus

      expkit roofline gpus --json
    """
    from expkit.perf.hardware import list_gpus

    specs = list_gpus()
    if json_out:
        emit_json(specs)
        return
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


@app.command("measure")
def measure(
    device: str = typer.Option("auto", "--device", help="auto (CUDA when present, else cpu), cpu or cuda[:N]."),
    gemm_n: int = typer.Option(2048, "--gemm-n", help="GEMM matrix side."),
    copy_mib: int = typer.Option(256, "--copy-mib", help="Copy buffer size in MiB."),
    repeats: int = typer.Option(5, "--repeats", help="Timed runs of each (the best counts)."),
    threads: int | None = typer.Option(None, "--threads", help="torch CPU threads (default: torch's, all cores)."),
    compare: bool = typer.Option(
        False, "--compare", help="Also run torch.matmul n=4096 and a numpy copy of 1 GiB; report ratios."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the MeasuredRoofs as JSON."),
) -> None:
    """Measure this machine's roofs: a GEMM (peak FLOP/s) and a streaming copy (bandwidth), and the ridge.

    Examples:

      expkit roofline measure

      expkit roofline measure --compare --json     # ratios to torch.matmul 4096^2 and a numpy 1 GiB copy

      expkit roofline measure --threads 1          # one core (steadier on a shared machine)
    """
    from expkit.perf.roofs import measure_roofs

    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    m = measure_roofs(
        device=device, gemm_n=gemm_n, copy_bytes=copy_mib * 1024**2, repeats=repeats, compare=compare, threads=threads
    )
    if json_out:
        emit_json(m)
        return
    print(f"{m.device}, {m.threads} threads")
    print(
        f"GEMM {m.dtype} n={m.gemm.n}: {_fmt(m.peak_flop_s, 'FLOP/s')} (best of {m.gemm.repeats}; "
        f"median {_fmt(m.gemm.median_flop_s, 'FLOP/s')})"
    )
    print(
        f"copy {m.copy.size_bytes // 1024**2} MiB ({m.copy.method}): {_fmt(m.bandwidth_bytes_s, 'B/s')} (read + write; "
        f"median {_fmt(m.copy.median_bandwidth_bytes_s, 'B/s')})"
    )
    print(f"ridge: {m.ridge_flop_per_byte:.3g} FLOP/byte")
    ref_gemm, ref_copy = m.reference_gemm, m.reference_copy
    if ref_gemm is not None and m.gemm_vs_reference_ratio is not None:
        print(
            f"vs torch.matmul n={ref_gemm.n}: {_fmt(ref_gemm.best_flop_s, 'FLOP/s')}, "
            f"ratio {m.gemm_vs_reference_ratio:.2f}"
        )
    if ref_copy is not None and m.bandwidth_vs_reference_ratio is not None:
        print(
            f"vs {ref_copy.method} of {ref_copy.size_bytes / 1024**3:.3g} GiB: "
            f"{_fmt(ref_copy.best_bandwidth_bytes_s, 'B/s')}, ratio {m.bandwidth_vs_reference_ratio:.2f}"
        )


@app.command("decode")
def decode(
    batch_sizes: str = typer.Option("1,2,4,8,16,32,64", "--batch-sizes", help="Comma-separated batch sizes."),
    new_tokens: int = typer.Option(8, "--new-tokens", help="Timed decode steps per batch size."),
    threads: int | None = typer.Option(
        None, "--threads", help="torch CPU threads (default: torch's; 1 is steadier on a shared machine)."
    ),
    figure: Path | None = typer.Option(None, "--figure", help="Write the points on the measured CPU roofline (PNG)."),
    json_out: bool = typer.Option(False, "--json", help="Print the DecodePoints as JSON."),
) -> None:
    """Decode measured: greedy decoding of a small random Qwen2 (built here, nothing downloaded) at each
    batch size; tokens/s, intensity and achieved FLOP/s per point.

    Examples:

      expkit roofline decode

      expkit roofline decode --batch-sizes 1,8,64 --threads 1 --figure decode.png --json
    """
    from expkit.errors import UsageError
    from expkit.perf.decode import measure_decode_throughput

    try:
        sizes = tuple(int(s) for s in batch_sizes.split(",") if s.strip())
    except ValueError as exc:
        raise UsageError(f"--batch-sizes {batch_sizes!r} is not a comma-separated list of integers") from exc
    if figure is not None:
        _check_figure_path(figure)
    points = measure_decode_throughput(batch_sizes=sizes, new_tokens=new_tokens, threads=threads)
    if figure is not None:
        from expkit.render.figures import new_figure, save_figure
        from expkit.render.roofline import RoofLine, RoofPoint, draw_roofline

        roof = _cpu_roof(threads=threads)
        fig, (ax,) = new_figure(1, width_in=7, height_in=5)
        draw_roofline(
            ax,
            [RoofLine(roof.name, roof.peak_flop_s, roof.bandwidth_bytes_s)],
            [
                RoofPoint(f"batch {p.batch}: {p.tokens_per_s:.0f} tok/s", p.intensity_flop_per_byte, p.achieved_flop_s)
                for p in points
            ],
            title="greedy decode measured here",
        )
        save_figure(fig, figure)
    if json_out:
        emit_json(points)
        return
    print("batch  tokens/s  step ms  FLOP/byte  achieved FLOP/s")
    for p in points:
        print(
            f"{p.batch:>5}  {p.tokens_per_s:>8.0f}  {p.step_time_s * 1e3:>7.2f}  {p.intensity_flop_per_byte:>9.2f}  "
            f"{_fmt(p.achieved_flop_s, 'FLOP/s')}"
        )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="roofline")
