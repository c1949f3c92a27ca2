"""``expkit mem``: will it fit. The memory ledger of a model config, line by line, with its formulas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from expkit.cli.output import emit_json

from expkit.memory.architecture import catalog_names

_GIB = 2**30


def _gib(n: int | float | None) -> str:
    return "-" if n is None else f"{n / _GIB:,.2f} GiB"


def _print_ledger(led: Any, count: Any | None) -> None:
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    head = (f"{led.model}: {led.mode} {led.method}, {led.precision}, "
            + (f"optimizer {led.optimizer}, batch {led.batch} x seq {led.seq}, grad-ckpt {led.grad_ckpt}, "
               f"attention {led.attention}, " if led.mode == "train" else f"batch {led.batch}, context {led.seq}, ")
            + f"{led.gpus} GPU(s), shard {led.shard}, convention {led.convention}")
    con.print(head)
    if count is not None:
        con.print(f"parameters: {led.total_params:,} total, {led.trainable_params:,} trainable "
                  f"({100 * led.trainable_fraction:.2f}% of the base"
                  + (f"; {100 * count.trainable_fraction_of_all:.2f}% of base + adapters" if count.adapter_params else "")
                  + f"); {count.counted_by}")
    table = Table(title="bytes per GPU (GiB = 2^30 B)")
    table.add_column("line")
    table.add_column("GiB", justify="right")
    table.add_column("formula")
    for ln in led.lines:
        table.add_row(ln.name + (" (estimate)" if ln.estimate else ""), f"{ln.bytes / _GIB:,.3f}", ln.formula)
    table.add_row("sum of lines (per GPU)", f"{led.per_gpu_bytes / _GIB:,.3f}", "every block at once")
    con.print(table)
    con.print(f"predicted peak per GPU: {_gib(led.peak_bytes)} at {led.peak_phase}")
    if led.gpus > 1:
        con.print(f"all {led.gpus} GPUs together: {_gib(led.total_bytes)}")
    if led.fits is not None:
        verdict = "fits" if led.fits else "does NOT fit"
        con.print(f"{led.gpu} ({_gib(led.gpu_memory_bytes)}): {verdict}")
    for note in led.notes:
        con.print(f"note: {note}")


def _print_comparison(cmp: Any) -> None:
    from rich.table import Table

    from expkit.render.console import out_console

    table = Table(title="the same run under each tool's convention (GiB per GPU)")
    table.add_column("line")
    for c in cmp.conventions:
        table.add_column(c, justify="right")
    for row in cmp.rows:
        cells = ["-" if v is None else f"{v / _GIB:,.2f}" for v in row.bytes_by_convention.values()]
        table.add_row(row.line, *cells)
    table.add_row("total", *[f"{cmp.per_gpu_bytes[c] / _GIB:,.2f}" for c in cmp.conventions])
    if cmp.model_state_bytes_per_param:
        table.add_row("model state B/param (1 GPU)",
                      *[f"{cmp.model_state_bytes_per_param[c]:.1f}" for c in cmp.conventions])
    con = out_console()
    con.print(table)
    con.print("why they differ:")
    for row in cmp.rows:
        con.print(f"  {row.line}: {row.why}")


def _print_fit(fit: Any) -> None:
    from expkit.render.console import out_console

    con = out_console()
    con.print(f"activations measured on replicas ({fit.note}):")
    for n, b in zip(fit.layers, fit.measured_bytes):
        con.print(f"  {n} layer(s): {b / 2**20:,.2f} MiB saved for backward")
    con.print(f"  fit: {fit.per_layer_bytes / 2**20:,.3f} MiB per layer + {fit.fixed_bytes / 2**20:,.3f} MiB fixed "
              f"(largest residual {fit.residual_bytes:,.0f} B)")
    con.print(f"  extrapolated to {fit.num_layers} layers, {fit.batch} x {fit.seq}: {_gib(fit.extrapolated_bytes)}; "
              f"ledger formula {_gib(fit.formula_bytes)}; Korthikanti 34sbhL {_gib(fit.korthikanti_bytes)}")
    if fit.ckpt_extrapolated_bytes is not None:
        con.print(f"  with gradient checkpointing: {_gib(fit.ckpt_extrapolated_bytes)}, forward+backward time x"
                  f"{fit.ckpt_time_ratio:.2f} (measured here)")
    if fit.cached:
        con.print("  (from the cache)")


def _read_oom(source: str) -> Any:
    import sys

    from expkit.errors import InputError

    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(source).read_text(errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=source) from exc
    from expkit.diagnose import diagnose_text

    diag = diagnose_text(text)
    info = diag.explanation.oom
    if info is None:
        raise InputError("no out-of-memory error in this traceback", path=None if source == "-" else source,
                         hint="give the traceback of a CUDA/CPU out-of-memory error")
    return info


def mem(
    model: str = typer.Argument(..., help=f"A model directory, a config.json, or a catalog name: {', '.join(catalog_names())}."),
    seq: int = typer.Option(2048, "--seq", help="Tokens per sequence."),
    batch: int = typer.Option(1, "--batch", help="Micro-batch per GPU."),
    method: str = typer.Option("full", "--method", help="full | lora | qlora."),
    lora_r: int = typer.Option(16, "--lora-r", help="LoRA rank."),
    lora_targets: str = typer.Option("all-linear", "--lora-targets", help="all-linear or names, e.g. q_proj,v_proj."),
    optimizer: str = typer.Option("adamw", "--optimizer", help="adamw | adamw8bit | sgd | adafactor."),
    precision: str = typer.Option("bf16-mixed", "--precision", help="bf16-mixed | fp16-mixed | fp32."),
    grad_ckpt: str = typer.Option("none", "--grad-ckpt", help="none | full."),
    attention: str = typer.Option("sdpa", "--attention", help="sdpa | eager."),
    gpus: int = typer.Option(1, "--gpus", help="Data-parallel GPUs."),
    shard: str = typer.Option("none", "--shard", help="none | fsdp | zero1 | zero2 | zero3."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU name for a fits verdict (e.g. h100, a100-40gb, 4090)."),
    mode: str = typer.Option("train", "--mode", help="train | infer."),
    context: int = typer.Option(4096, "--context", help="Inference: tokens in the KV cache."),
    convention: str = typer.Option("expkit", "--convention", help="expkit | zero | hf | deepspeed | accelerate."),
    explain: bool = typer.Option(False, "--explain", help="Show every convention side by side, line by line."),
    measure: bool = typer.Option(False, "--measure", help="Measure activations on 1/2/4-layer replicas (CPU)."),
    replica_seq: int = typer.Option(256, "--replica-seq", help="With --measure: tokens per replica run."),
    oom: str | None = typer.Option(None, "--oom", metavar="FILE|-", help="An OOM traceback to reconcile."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """The memory ledger: parameters counted exactly from the config (meta device, no weights), then
    every block of a training step (or of inference) per GPU, with its formula and the predicted peak.

    Examples:

      expkit mem qwen2.5-0.5b --method lora --lora-r 16 --seq 1024

      expkit mem llama-2-7b --seq 4096 --gpus 8 --shard fsdp --gpu a100-40gb

      expkit mem ./my_model/config.json --explain

      expkit mem qwen2.5-7b --mode infer --context 32768 --gpu 4090 --json

      expkit mem qwen2.5-0.5b --measure --seq 4096 --replica-seq 256

      expkit mem llama-3-8b --gpu 4090 --oom crash.log
    """
    from expkit.errors import UsageError
    from expkit.memory import (
        compare_conventions,
        count_parameters,
        estimate_inference_memory,
        estimate_training_memory,
        load_model_spec,
    )

    if mode not in ("train", "infer"):
        raise UsageError(f"--mode {mode!r} is not one of train, infer")
    spec = load_model_spec(model)
    if mode == "infer":
        led = estimate_inference_memory(spec, context=context, batch=batch, precision=precision,
                                        method="qlora" if method == "qlora" else "full", gpus=gpus, gpu=gpu)
        count = None
    else:
        led = estimate_training_memory(spec, batch=batch, seq=seq, method=method, lora_r=lora_r,
                                       lora_targets=lora_targets, optimizer=optimizer, precision=precision,
                                       grad_ckpt=grad_ckpt, attention=attention, gpus=gpus, shard=shard, gpu=gpu,
                                       convention=convention)
        count = count_parameters(spec, lora_r=lora_r if method != "full" else None, lora_targets=lora_targets)
    result: dict[str, Any] = {"ledger": led}
    if count is not None:
        result["parameters"] = count
    if explain:
        if mode != "train":
            raise UsageError("--explain compares training conventions; drop --mode infer")
        base = led if convention == "expkit" else estimate_training_memory(
            spec, batch=batch, seq=seq, method=method, lora_r=lora_r, lora_targets=lora_targets,
            optimizer=optimizer, precision=precision, grad_ckpt=grad_ckpt, attention=attention, gpus=gpus,
            shard=shard)
        one = None
        if gpus > 1 and shard != "none":
            one = estimate_training_memory(spec, batch=batch, seq=seq, method=method, lora_r=lora_r,
                                           lora_targets=lora_targets, optimizer=optimizer, precision=precision,
                                           grad_ckpt=grad_ckpt, attention=attention)
        result["conventions"] = compare_conventions(base, unsharded=one)
    if measure:
        from expkit.memory.activation_fit import fit_activations
        from expkit.render.console import progress_steps

        with progress_steps(1, "measuring replicas") as advance:
            advance(f"{spec.name} at {replica_seq} tokens")
            result["measured"] = fit_activations(spec, batch=batch, seq=seq, replica_seq=replica_seq,
                                                 precision="fp32" if precision == "fp32" else precision,
                                                 method="full" if method == "full" else "lora", lora_r=lora_r,
                                                 attention=attention)
    if oom is not None:
        if mode != "train":
            raise UsageError("--oom reconciles a training ledger; drop --mode infer")
        from expkit.memory.oom import attribute_oom

        info = _read_oom(oom)
        result["oom"] = attribute_oom(led, model=spec, phase=info.phase, capacity_bytes=info.capacity_bytes,
                                      requested_bytes=info.requested_bytes, allocated_bytes=info.allocated_bytes)
    if json_out:
        from expkit.render.jsonout import to_jsonable

        out = to_jsonable(led)  # the ledger's fields at the top: total_params, lines, per_gpu_bytes, fits ...
        out.update({k: to_jsonable(v) for k, v in result.items() if k != "ledger"})
        emit_json(out)
        return
    _print_ledger(led, count)
    if "conventions" in result:
        _print_comparison(result["conventions"])
    if "measured" in result:
        _print_fit(result["measured"])
    if "oom" in result:
        ex = result["oom"]
        print(f"OOM: {ex.reason}")
        for i, r in enumerate(ex.remedies, 1):
            fits = "" if r.fits is None else (", fits" if r.fits else ", still too big")
            print(f"  {i}. {r.name} ({r.option}): saves {_gib(r.savings_bytes)} -> peak {_gib(r.peak_bytes)}"
                  f"{fits}; cost: {r.cost}")


def register(root: typer.Typer) -> None:
    root.command("mem")(mem)
