"""``expkit roofline``: the ridge point and where a model's step sits; ``gpus``, ``measure``, ``decode``."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.mem import fields_as_flags
from expkit.cli.output import emit
from expkit.perf.roofline import PHASES, WEIGHT_BITS

app = typer.Typer(invoke_without_command=True)  # help: the callback's docstring, examples included


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
    from expkit.perf.roofline import RooflineQuery, estimate_roofline_for
    from expkit.render.roofline import render_roofline, write_roofline_figure

    if figure is not None:
        _check_figure_path(figure)
    query = RooflineQuery(model=model, gpu=gpu, phase=phase, batch=batch, context=context, weight_bits=weight_bits)
    with fields_as_flags():  # weight_bits None: as the checkpoint stores its weights (the memory ledger's bytes)
        result = estimate_roofline_for(query)
    if figure is not None:
        result = result.with_figure(write_roofline_figure(result, figure))
    emit(result, json_out, human=render_roofline)


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


@app.command("gpus")
def gpus(json_out: bool = typer.Option(False, "--json", help="Print the registry as JSON.")) -> None:
    """List the GPU registry: bf16 dense TFLOP/s, bandwidth, memory, ridge, and the datasheet each came from.

    Examples:

      expkit roofline gpus

      expkit roofline gpus --json
    """
    from expkit.perf.hardware import list_gpus
    from expkit.render.roofline import render_gpus

    emit(list_gpus(), json_out, human=render_gpus)


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
    from expkit.perf.roofs import RoofQuery, measure_roofs
    from expkit.render.roofline import render_measured_roofs

    query = RoofQuery(
        device=device, gemm_n=gemm_n, copy_bytes=copy_mib * 2**20, repeats=repeats, compare=compare, threads=threads
    )
    emit(measure_roofs(query), json_out, human=render_measured_roofs)


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
    from expkit.perf.decode import measure_decode
    from expkit.render.roofline import render_decode, write_decode_figure

    try:
        sizes = tuple(int(s) for s in batch_sizes.split(",") if s.strip())
    except ValueError as exc:
        raise UsageError(f"--batch-sizes {batch_sizes!r} is not a comma-separated list of integers") from exc
    if figure is not None:
        _check_figure_path(figure)
    result = measure_decode(batch_sizes=sizes, new_tokens=new_tokens, threads=threads, with_roof=figure is not None)
    if figure is not None:
        write_decode_figure(result, figure)
    emit(result, json_out, human=render_decode)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="roofline")
