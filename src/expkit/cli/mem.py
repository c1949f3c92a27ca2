"""``expkit mem``: will it fit. The memory ledger of a model config, line by line, with its formulas."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import typer

from expkit.cli.output import emit
from expkit.models.description import catalog_names

_FLAG_FIELDS = (
    "batch", "seq", "method", "lora_r", "lora_targets", "optimizer", "precision", "grad_ckpt", "attention",
    "gpus", "shard", "context", "phase", "weight_bits", "mode", "prompt", "explain", "oom", "optimizer_impl",
    "convention",
)  # fmt: skip


@contextmanager
def fields_as_flags() -> Iterator[None]:
    """The library names a bad value by its field (``lora_r 0 ...``); the user typed a flag (``--lora-r``)."""
    from expkit.errors import UsageError

    try:
        yield
    except UsageError as exc:
        field, sep, rest = exc.message.partition(" ")
        if sep and field in _FLAG_FIELDS:
            exc.message = f"--{field.replace('_', '-')} {rest}"
        raise


def _read_oom(source: str) -> Any:
    """The OOM record of a traceback file (``-``: standard input), read through the library's bounded reader:
    /dev/zero, a FIFO fed forever or a huge file stop with one InputError line instead of filling memory."""
    from expkit.diagnose import diagnose_source
    from expkit.errors import InputError

    info = diagnose_source(source).explanation.oom
    if info is None:
        raise InputError(
            "no out-of-memory error in this traceback",
            path=None if source == "-" else source,
            hint="give the traceback of a CUDA/CPU out-of-memory error",
        )
    return info


def mem(
    model: str = typer.Argument(
        ...,
        help=(
            "A model directory, a config.json, a Hub ID in the local HF cache, or a catalog name: "
            f"{', '.join(catalog_names())}."
        ),
    ),
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
    prompt: int | None = typer.Option(
        None, "--prompt", help="Inference: prompt tokens prefilled at once (default: the whole --context)."
    ),
    optimizer_impl: str | None = typer.Option(
        None, "--optimizer-impl", help="foreach | for-loop | fused (default: torch's on the device)."
    ),
    convention: str = typer.Option("expkit", "--convention", help="expkit | zero | hf | deepspeed | accelerate."),
    explain: bool = typer.Option(False, "--explain", help="Show every convention side by side, line by line."),
    measure: bool = typer.Option(False, "--measure", help="Measure activations on 1/2/4-layer replicas (CPU)."),
    replica_seq: int = typer.Option(256, "--replica-seq", help="With --measure: tokens per replica run."),
    oom: str | None = typer.Option(None, "--oom", metavar="FILE|-", help="An OOM traceback to reconcile."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """The memory ledger: parameters counted exactly from the config (meta device, no weights), then
    every block of a training step (or of inference) per GPU, with its formula and the predicted peak.
    Mixture-of-experts, latent attention (MLA), sliding windows and quantized checkpoints are modeled per
    layer kind; what is assumed is printed as an approximation. Exit 1 when --gpu is given and the peak
    does not fit.

    Examples:

      expkit mem qwen2.5-0.5b --method lora --lora-r 16 --seq 1024

      expkit mem llama-2-7b --seq 4096 --gpus 8 --shard fsdp --gpu a100-40gb

      expkit mem ./my_model/config.json --explain

      expkit mem qwen2.5-7b --mode infer --context 32768 --gpu 4090 --json

      expkit mem qwen2.5-0.5b --measure --seq 4096 --replica-seq 256

      expkit mem llama-3-8b --gpu 4090 --oom crash.log

      expkit mem deepseek-v3 --mode infer --context 8192 --gpus 8 --gpu h200   # MLA latent cache, fp8 weights
    """
    from expkit.errors import CheckFailed
    from expkit.memory.ledger import TrainingQuery
    from expkit.memory.report import MemoryRequest, build_memory_report
    from expkit.models.description import load_model_description
    from expkit.render.console import progress_steps
    from expkit.render.ledger import render_memory_report

    targets = tuple(t.strip() for t in lora_targets.split(",") if t.strip())
    query = TrainingQuery(
        model=load_model_description(model),
        batch=batch,
        seq=seq,
        method=method,
        lora_r=lora_r,
        lora_targets=targets,
        optimizer=optimizer,
        precision=precision,
        grad_ckpt=grad_ckpt,
        attention=attention,
        gpus=gpus,
        shard=shard,
        gpu=gpu,
        optimizer_impl=optimizer_impl,
    )
    request = MemoryRequest(
        training=query,
        mode=mode,
        context=context,
        prompt=prompt,
        convention=convention,
        explain=explain,
        measure=measure,
        replica_seq=replica_seq,
        oom=_read_oom(oom) if oom is not None else None,
    )
    steps = progress_steps(1, "measuring replicas") if measure else nullcontext(None)  # a bar only when measuring
    with fields_as_flags(), steps as advance:
        report = build_memory_report(request, on_step=advance)
    emit(report, json_out, human=render_memory_report)
    if report.does_not_fit is not None:
        raise CheckFailed(
            report.does_not_fit,
            hint="try --method lora, --grad-ckpt full or --gpus N --shard fsdp (ranked with --oom FILE)",
        )


def register(root: typer.Typer) -> None:
    root.command("mem")(mem)
