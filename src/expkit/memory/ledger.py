"""The memory ledger: every block of a training step (or of inference) as a named line with its formula.

Lines are bytes on one GPU. ``per_gpu_bytes`` is their sum (every block at once, the figure other tools
print); ``peak_bytes`` is the predicted peak of one step, which is lower because activations are freed
while gradients are being written (the blocks that coexist at the peak are named in ``peak_phase``).
GiB = 2**30 bytes throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from expkit.errors import UsageError
from expkit.memory.activations import PRECISIONS, estimate_activations
from expkit.memory.architecture import ModelSpec
from expkit.memory.params import count_parameters, resolve_spec

__all__ = [
    "CUDA_OVERHEAD_BYTES",
    "Ledger",
    "LedgerLine",
    "TrainingQuery",
    "estimate_inference_memory",
    "estimate_training_memory",
    "ledger_for_query",
]

METHODS = ("full", "lora", "qlora")
OPTIMIZERS = ("adamw", "adamw8bit", "sgd", "adafactor")
SHARDS = ("none", "fsdp", "zero1", "zero2", "zero3")
GRAD_CKPT = ("none", "full")
ATTENTION = ("sdpa", "eager")
# CUDA context + cuBLAS/cuDNN workspaces on a recent GPU, as nvidia-smi shows for an idle PyTorch
# process: ~0.5 GiB. An estimate, stated as such on the line; 0 on the CPU.
CUDA_OVERHEAD_BYTES = 512 * 2**20
ALLOCATOR_SLACK = 0.05  # caching-allocator fragmentation, estimate: 5% of activations
# bitsandbytes NF4 with double quantization: 4 bits + 8-bit absmax per 64 + fp32 per 256 blocks
# (QLoRA paper, Dettmers et al. 2023, sec. 3: 0.127 bits/param of constants).
NF4_BYTES_PER_PARAM = (4 + 0.127) / 8


@dataclass(frozen=True)
class LedgerLine:
    """One block: bytes on one GPU and the formula that produced them (with the numbers filled in)."""

    name: str
    bytes: int
    formula: str
    estimate: bool = False


@dataclass(frozen=True)
class Ledger:
    """A memory ledger. ``per_gpu_bytes`` == sum of ``lines``; ``total_bytes`` = per GPU * ``gpus``.

    ``peak_bytes`` is the predicted peak of one step on one GPU (lines that coexist at ``peak_phase``).
    ``fits`` is None unless a GPU was named; then ``peak_bytes <= gpu_memory_bytes``.
    """

    model: str
    mode: str
    method: str
    precision: str
    optimizer: str
    batch: int
    seq: int
    gpus: int
    shard: str
    grad_ckpt: str
    attention: str
    convention: str
    total_params: int
    trainable_params: int
    trainable_fraction: float
    lines: tuple[LedgerLine, ...]
    per_gpu_bytes: int
    total_bytes: int
    peak_bytes: int
    peak_phase: str
    device: str
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    fits: bool | None = None
    notes: tuple[str, ...] = ()
    largest_layer_params: int = 0
    approximations: tuple[str, ...] = ()
    active_params: int = 0
    query: Any = None  # the TrainingQuery this training ledger answers (None for inference ledgers)

    def line(self, name: str) -> LedgerLine:
        """The line called ``name`` (KeyError listing the names if absent)."""
        for ln in self.lines:
            if ln.name == name:
                return ln
        raise KeyError(f"no line {name!r}; lines: {', '.join(ln.name for ln in self.lines)}")

    def bytes_of(self, *names: str) -> int:
        """Sum of the named lines that exist (0 for absent ones)."""
        return sum(ln.bytes for ln in self.lines if ln.name in names)


def _check_choice(value: str, choices: tuple[str, ...], option: str) -> None:
    if value not in choices:
        raise UsageError(f"{option} {value!r} is not one of {', '.join(choices)}")


def _check_positive(value: int, option: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{option} must be a positive integer, got {value!r}")


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def _optimizer_state(optimizer: str, trainable: int, shapes_sum: int) -> list[tuple[str, int, str]]:
    """(name, bytes, formula) of the optimizer state for ``trainable`` parameters, unsharded."""
    if optimizer == "adamw":
        return [
            ("Adam m", 4 * trainable, f"4 B * {trainable:,} trainable (fp32)"),
            ("Adam v", 4 * trainable, f"4 B * {trainable:,} trainable (fp32)"),
        ]
    if optimizer == "adamw8bit":
        return [
            ("Adam m", trainable, f"1 B * {trainable:,} (bitsandbytes 8-bit, block-wise)"),
            ("Adam v", trainable, f"1 B * {trainable:,} (bitsandbytes 8-bit, block-wise)"),
        ]
    if optimizer == "sgd":
        return [("SGD momentum", 4 * trainable, f"4 B * {trainable:,} (fp32 momentum buffer)")]
    return [
        (
            "Adafactor row/col stats",
            4 * shapes_sum,
            f"4 B * sum(rows + cols) = 4 * {shapes_sum:,} (factored second moment, no first moment)",
        )
    ]


def _matrix_rows_cols(spec: ModelSpec, method: str, count: Any) -> int:
    """Sum of rows + cols over the trainable matrices (Adafactor's factored state)."""
    if method != "full":
        return count.trainable_params // max(count.lora_r or 1, 1)  # r x in, out x r: rows + cols ~ size / r
    h, hq, kv, inter = spec.hidden_size, spec.num_heads * spec.head_dim, spec.kv_dim, spec.intermediate_size
    per_layer = (h + hq) + 2 * (h + kv) + (hq + h) + 3 * (h + inter)
    emb = (spec.vocab_size + h) * (1 if spec.tied_embeddings else 2)
    return spec.num_layers * per_layer + emb


@dataclass(frozen=True)
class TrainingQuery:
    """Everything a training ledger depends on, in one frozen value (kept on the Ledger as ``query``).

    Variants are ``dataclasses.replace(query, method="lora")`` then ``ledger_for_query``: the OOM remedies
    are ranked that way, so they keep every option of the run (its LoRA rank, targets, GPUs ...).
    """

    model: ModelSpec
    batch: int = 1
    seq: int = 2048
    method: str = "full"
    lora_r: int = 16
    lora_targets: tuple[str, ...] = ("all-linear",)
    optimizer: str = "adamw"
    precision: str = "bf16-mixed"
    grad_ckpt: str = "none"
    attention: str = "sdpa"
    gpus: int = 1
    shard: str = "none"
    device: str = "cuda"
    gpu: str | None = None

    def __json__(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "model"}
        return {"model": self.model.name, "model_source": self.model.source, **out}


def estimate_training_memory(
    model: ModelSpec | str | Path | dict[str, Any],
    *,
    batch: int = 1,
    seq: int = 2048,
    method: str = "full",
    lora_r: int = 16,
    lora_targets: str | tuple[str, ...] = "all-linear",
    optimizer: str = "adamw",
    precision: str = "bf16-mixed",
    grad_ckpt: str = "none",
    attention: str = "sdpa",
    gpus: int = 1,
    shard: str = "none",
    device: str = "cuda",
    gpu: str | None = None,
) -> Ledger:
    """Predict the memory of one training step, line by line, per GPU.

    Args:
        model: catalog name, model directory, config.json, config dict or ModelSpec.
        batch: micro-batch per GPU; seq: tokens per sequence.
        method: ``full``, ``lora`` (16-bit frozen base under mixed precision) or ``qlora`` (NF4 base).
        lora_r, lora_targets: LoRA rank and target modules (``all-linear`` or names).
        optimizer: ``adamw``, ``adamw8bit``, ``sgd`` (momentum) or ``adafactor``.
        precision: ``bf16-mixed`` / ``fp16-mixed`` (autocast over fp32 parameters) or ``fp32``.
        grad_ckpt: ``none`` or ``full`` (checkpoint every decoder layer).
        attention: ``sdpa`` (no T x T matrix stored) or ``eager``.
        gpus, shard: data-parallel GPUs and how the training state is split (``zero1`` optimizer state,
            ``zero2`` + gradients, ``zero3``/``fsdp`` + weights, plus one gathered layer).
        device: ``cuda`` adds the runtime-overhead line; ``cpu`` does not (used by the validation).
        gpu: a GPU name from ``expkit.hardware`` (the registry) for the ``fits`` verdict.

    Returns:
        Ledger; ``ledger.query`` is the TrainingQuery it answers (vary it with ``dataclasses.replace`` and
        ``ledger_for_query``). Other tools' conventions are views of it: ``expkit.memory.conventions``.

    Raises:
        UsageError: a bad option value (names it), ``gpus`` < 1, sharding with one GPU is allowed.

    Example:
        >>> led = estimate_training_memory("qwen2.5-0.5b", seq=1024, method="lora")
        >>> led.trainable_params
        8798208

    Reference: ZeRO (Rajbhandari et al. 2020) sec. 3.1 for the 16 B/param model state; Korthikanti et al.
    2022 for activations (compared in ``expkit.memory.activations``).
    """
    targets = (
        tuple(t.strip() for t in lora_targets.split(",") if t.strip())
        if isinstance(lora_targets, str)
        else tuple(lora_targets)
    )
    return ledger_for_query(
        TrainingQuery(
            model=resolve_spec(model),
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
            device=device,
            gpu=gpu,
        )
    )


def ledger_for_query(query: TrainingQuery) -> Ledger:
    """The training ledger of ``query`` (see ``estimate_training_memory`` for the options and references).

    Raises:
        UsageError: a bad option value (names it).
    """
    q = query
    batch, seq, method, lora_r, optimizer, precision = q.batch, q.seq, q.method, q.lora_r, q.optimizer, q.precision
    grad_ckpt, attention, gpus, shard, device, gpu = q.grad_ckpt, q.attention, q.gpus, q.shard, q.device, q.gpu
    for value, choices, option in (
        (method, METHODS, "--method"),
        (optimizer, OPTIMIZERS, "--optimizer"),
        (precision, PRECISIONS, "--precision"),
        (grad_ckpt, GRAD_CKPT, "--grad-ckpt"),
        (attention, ATTENTION, "--attention"),
        (shard, SHARDS, "--shard"),
        (device, ("cuda", "cpu"), "device"),
    ):
        _check_choice(value, choices, option)
    for count_value, option in ((batch, "--batch"), (seq, "--seq"), (gpus, "--gpus"), (lora_r, "--lora-r")):
        _check_positive(count_value, option)
    if not q.lora_targets:
        raise UsageError("--lora-targets is empty", hint="give module names like q_proj,v_proj or all-linear")
    spec = q.model
    targets = q.lora_targets
    lora = method != "full"
    count = count_parameters(spec, lora_r=lora_r if lora else None, lora_targets=targets)
    P, Pt = count.total_params, count.trainable_params
    mixed = precision != "fp32"
    n_model = gpus if shard in ("fsdp", "zero3") else 1
    n_grad = gpus if shard in ("fsdp", "zero2", "zero3") else 1
    n_opt = gpus if shard != "none" else 1

    def div(n: int) -> str:
        return f" / {n} GPUs" if n > 1 else ""

    decoder_params = (
        sum(k.layers * k.params_per_layer for k in count.layer_kinds) or spec.num_layers * count.per_layer_params
    )
    # FSDP wraps each decoder layer: the largest layer kind is the unit gathered (a MoE layer, not a dense one)
    unit = max((k.params_per_layer for k in count.layer_kinds), default=count.per_layer_params)
    unit_kind = max(count.layer_kinds, key=lambda k: k.params_per_layer).label if count.layer_kinds else "layer"
    lines: list[LedgerLine] = []
    linear_params = P - count.embedding_params - spec.num_layers * (2 * spec.hidden_size) - spec.hidden_size
    if spec.tied_embeddings:
        linear_params += count.embedding_params  # the tied lm_head is a matmul weight too
    if not lora:
        w = 4 * P // n_model
        lines.append(LedgerLine("fp32 master weights", w, f"4 B * {P:,} params{div(n_model)}"))
        if mixed and n_model > 1:
            wc = 2 * 2 * unit
            lines.append(
                LedgerLine(
                    "bf16 weights",
                    wc,
                    f"2 B * 2 gathered units * {unit:,} (the largest FSDP unit: {unit_kind}; "
                    "mixed-precision policy: 16-bit copies of the current and prefetched unit only)",
                )
            )
        elif mixed:
            experts = sum(k.layers * k.routed_expert_params_per_layer for k in count.layer_kinds)
            copied = linear_params - (experts if device == "cpu" else 0)
            wc = 2 * copied
            lines.append(
                LedgerLine(
                    "bf16 weights",
                    wc,
                    f"2 B * {copied:,} matmul weights (autocast copies, kept for backward)"
                    + (
                        f"; the {experts:,} fused expert weights get none (torch._grouped_mm is "
                        "not cast by CPU autocast, measured)"
                        if experts and device == "cpu"
                        else ""
                    ),
                )
            )
    else:
        if method == "qlora":
            # bitsandbytes quantizes the decoder's linears; the LM head (tied or not) stays 16-bit
            quantized = decoder_params - spec.num_layers * 2 * spec.hidden_size
            nf4_bytes = int(NF4_BYTES_PER_PARAM * quantized)
            rest = 2 * (P - quantized)
            lines.append(
                LedgerLine(
                    "frozen base weights",
                    (nf4_bytes + rest) // n_model,
                    f"NF4 {NF4_BYTES_PER_PARAM:.3f} B * {quantized:,} decoder linear + 2 B * "
                    f"{P - quantized:,} embeddings, head, norms{div(n_model)}",
                )
            )
        else:
            fb = 2 if mixed else 4
            lines.append(
                LedgerLine(
                    "frozen base weights",
                    fb * P // n_model,
                    f"{fb} B * {P:,} params ({'16-bit' if mixed else 'fp32'}){div(n_model)}",
                )
            )
        lines.append(LedgerLine("fp32 master weights", 4 * Pt // n_model, f"4 B * {Pt:,} adapter params{div(n_model)}"))
        if mixed:
            lines.append(
                LedgerLine("bf16 weights", 2 * Pt // n_model, f"2 B * {Pt:,} adapter params (autocast copies)")
            )
    lines.append(LedgerLine("gradients", 4 * Pt // n_grad, f"4 B * {Pt:,} trainable (fp32){div(n_grad)}"))
    shapes_sum = _matrix_rows_cols(spec, method, count)
    for name, b, f in _optimizer_state(optimizer, Pt, shapes_sum):
        lines.append(LedgerLine(name, b // n_opt, f + div(n_opt)))

    act = estimate_activations(
        spec,
        batch=batch,
        seq=seq,
        precision=precision,
        method=method,
        lora_targets=("all-linear",) if targets == ("all-linear",) else targets,
        lora_r=lora_r,
        grad_ckpt=grad_ckpt == "full",
        attention=attention,
        device=device,
    )
    tokens = batch * seq
    act_bytes = act.stored_bytes + act.fixed_bytes
    ckpt_note = f" (checkpointed: {spec.num_layers} layer inputs)" if grad_ckpt == "full" else ""
    per_kind = " + ".join(f"{n} x {b:,} B ({label})" for label, n, b in act.layer_kinds)
    lines.append(
        LedgerLine(
            "activations",
            act_bytes,
            (f"{spec.num_layers} layer inputs" if grad_ckpt == "full" else per_kind)
            + f" + fixed {act.fixed_bytes:,} B at {batch} x {seq} tokens{ckpt_note}",
        )
    )
    V = spec.vocab_size
    logit_b = 2 if mixed else 4
    lines.append(LedgerLine("logits / loss", act.loss_bytes, f"fp32 log-probs 4 B * {tokens:,} tokens * vocab {V:,}"))

    # Transients: each phase's short-lived tensors; the temporaries line is the one at the peak phase.
    # (a) loss forward: logits (16-bit under autocast) + their fp32 upcast (mixed only) before log_softmax.
    loss_fwd = tokens * V * (logit_b + (4 if mixed else 0))
    # (b) loss backward: grad of the log-probs + grad of the logits (fp32); the 16-bit cast of the latter
    #     for lm_head comes after the grad of the log-probs is freed (measured: it does not add).
    loss_bwd = tokens * V * 8
    # (c) checkpointing: the layer being rebuilt in backward.
    recompute = act.recompute_bytes
    # (d) optimizer step: CUDA foreach AdamW makes a sqrt(v) copy of all state; CPU loops per tensor
    #     (largest tensor: the embedding), two temporaries of it.
    largest = count.embedding_params if not lora else max(Pt // max(spec.num_layers, 1), 1)
    opt_tmp = (4 * Pt // n_opt) if device == "cuda" else 2 * 4 * largest
    if optimizer not in ("adamw",):
        opt_tmp = 0
    # (e) sharded weights: FSDP/ZeRO-3 gather one layer and prefetch the next (fp32 runs; the 16-bit
    #     gathered copies of mixed runs are the "bf16 weights" line).
    gather = (2 * 4 * unit) if (n_model > 1 and not mixed) else 0

    static = sum(ln.bytes for ln in lines if ln.name not in ("gradients", "activations", "logits / loss"))
    grads = next(ln.bytes for ln in lines if ln.name == "gradients")
    phases = {
        "forward, at the loss (all activations + logits)": act_bytes + act.loss_bytes + loss_fwd + gather,
        "backward, at the loss (all activations + logits grads)": act_bytes + act.loss_bytes + loss_bwd + gather,
        "backward, last layer rebuilt (checkpointing)": act_bytes
        + recompute
        + grads // max(spec.num_layers, 1)
        + gather,
        "optimizer step (all gradients + step temporaries)": grads + opt_tmp,
    }
    phase_tmp = {
        "forward, at the loss (all activations + logits)": (loss_fwd + gather, "logits + fp32 upcast"),
        "backward, at the loss (all activations + logits grads)": (loss_bwd + gather, "grad log-probs + grad logits"),
        "backward, last layer rebuilt (checkpointing)": (recompute + gather, "one layer's activations rebuilt"),
        "optimizer step (all gradients + step temporaries)": (opt_tmp, "AdamW sqrt(v) temporaries"),
    }
    peak_phase = max(phases, key=phases.__getitem__)
    tmp_bytes, tmp_what = phase_tmp[peak_phase]
    lines.append(LedgerLine("temporaries", tmp_bytes, f"at the peak phase: {tmp_what}"))
    notes = list(spec.assumed)
    if device == "cuda":
        slack = int(ALLOCATOR_SLACK * act_bytes)
        lines.append(
            LedgerLine(
                "runtime overhead",
                CUDA_OVERHEAD_BYTES + slack,
                f"CUDA context + workspaces ~{_gib(CUDA_OVERHEAD_BYTES)} + allocator slack "
                f"{ALLOCATOR_SLACK:.0%} of activations (estimate)",
                estimate=True,
            )
        )
    per_gpu = sum(ln.bytes for ln in lines)
    overhead = per_gpu - sum(ln.bytes for ln in lines if ln.name != "runtime overhead")
    peak = static + phases[peak_phase] + overhead
    if not count.counted_by.startswith("meta"):
        notes.append(count.counted_by)
    led = Ledger(
        model=spec.name,
        mode="train",
        method=method,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        gpus=gpus,
        shard=shard,
        grad_ckpt=grad_ckpt,
        attention=attention,
        convention="expkit",
        total_params=P,
        trainable_params=Pt,
        trainable_fraction=count.trainable_fraction,
        lines=tuple(lines),
        per_gpu_bytes=per_gpu,
        total_bytes=per_gpu * gpus,
        peak_bytes=peak,
        peak_phase=peak_phase,
        device=device,
        notes=tuple(notes),
        largest_layer_params=max(
            count.embedding_params,
            count.lm_head_params,
            spec.hidden_size * spec.intermediate_size,
            *(k.routed_expert_params_per_layer for k in count.layer_kinds),
        ),
        approximations=spec.desc.approximations,
        active_params=count.active_params,
        query=q,
    )
    return _with_fit(led, gpu)


def _with_fit(led: Ledger, gpu: str | None) -> Ledger:
    if gpu is None:
        return led
    from expkit.hardware import get_gpu

    g = get_gpu(gpu)
    return replace(led, gpu=g.name, gpu_memory_bytes=g.memory_bytes, fits=led.peak_bytes <= g.memory_bytes)


def estimate_inference_memory(
    model: ModelSpec | str | Path | dict[str, Any],
    *,
    context: int = 4096,
    batch: int = 1,
    precision: str = "bf16-mixed",
    method: str = "full",
    gpus: int = 1,
    device: str = "cuda",
    gpu: str | None = None,
) -> Ledger:
    """Weights + KV cache per attention kind + one step's logits for generation at ``context`` tokens.

    KV cache per layer = 2 (K and V) * kv_heads * head_dim * tokens * batch * bytes (Pope et al. 2022,
    "Efficiently Scaling Transformer Inference", sec. 2); MLA layers cache the latent + rotary key
    (kv_lora_rank + qk_rope_head_dim, DeepSeek-V2 paper sec. 2.1); a sliding-window layer holds at most its
    window. Weights at the checkpoint's quantized bytes (``quantization_config``) or the precision's, split
    over ``gpus`` (tensor parallel).

    Example:
        >>> led = estimate_inference_memory("llama-3-8b", context=8192)
        >>> led.line("KV cache").bytes / 2**30  # 2 * 32 * 8 * 128 * 8192 * 2 B
        1.0
    """
    _check_choice(method, ("full", "qlora"), "--method (inference)")
    _check_choice(precision, PRECISIONS, "--precision")
    for value, option in ((context, "--context"), (batch, "--batch"), (gpus, "--gpus")):
        _check_positive(value, option)
    spec = resolve_spec(model)
    desc = spec.desc
    count = count_parameters(spec)
    P = count.total_params
    b = 4 if precision == "fp32" else 2
    decoder = sum(k.layers * k.params_per_layer for k in count.layer_kinds) or spec.num_layers * count.per_layer_params
    if method == "qlora":
        wbytes = int(NF4_BYTES_PER_PARAM * P)
        wformula = f"NF4 {NF4_BYTES_PER_PARAM:.3f} B * {P:,} params"
    elif desc.quant_method is not None:
        # the checkpoint's own quantization: decoder layers at its bits, the rest (embeddings, head) 16-bit
        wbytes = int(desc.weight_bits / 8 * decoder) + b * (P - decoder)
        wformula = (
            f"{desc.quant_method} {desc.weight_bits / 8:.4g} B * {decoder:,} decoder-layer params + {b} B * "
            f"{P - decoder:,} others (embeddings, head, norms)"
        )
    else:
        wbytes, wformula = b * P, f"{b} B * {P:,} params"
    kv = desc.kv_cache_elements(context) * batch * b
    kinds = []
    for layer, n in desc.layer_groups():
        a = layer.attention
        form = (
            f"latent {a.kv_lora_rank} + rope key {a.qk_rope_head_dim}"
            if a.kind == "mla"
            else f"2 * {a.num_kv_heads} kv heads * {a.head_dim}"
        )
        toks = f"min({context:,}, window {a.window:,})" if a.window else f"{context:,}"
        kinds.append(f"{n} {a.kind} layers * {form} * {toks} tokens")
    kv_formula = " + ".join(dict.fromkeys(kinds)) + f", * {batch} * {b} B"
    lines = [
        LedgerLine("weights", wbytes // gpus, wformula + (f" / {gpus} GPUs" if gpus > 1 else "")),
        LedgerLine("KV cache", kv // gpus, kv_formula + (f" / {gpus} GPUs" if gpus > 1 else "")),
        LedgerLine("logits / loss", 4 * spec.vocab_size * batch, f"fp32 logits of one step: 4 * {batch} * vocab"),
    ]
    if device == "cuda":
        lines.append(
            LedgerLine(
                "runtime overhead",
                CUDA_OVERHEAD_BYTES,
                f"CUDA context + workspaces ~{_gib(CUDA_OVERHEAD_BYTES)} (estimate)",
                estimate=True,
            )
        )
    per_gpu = sum(ln.bytes for ln in lines)
    led = Ledger(
        model=spec.name,
        mode="infer",
        method=method,
        precision=precision,
        optimizer="none",
        batch=batch,
        seq=context,
        gpus=gpus,
        shard="tensor-parallel" if gpus > 1 else "none",
        grad_ckpt="none",
        attention="sdpa",
        convention="expkit",
        total_params=P,
        trainable_params=0,
        trainable_fraction=0.0,
        lines=tuple(lines),
        per_gpu_bytes=per_gpu,
        total_bytes=per_gpu * gpus,
        peak_bytes=per_gpu,
        peak_phase="decode at full context",
        device=device,
        notes=spec.assumed,
        approximations=desc.approximations,
        active_params=count.active_params,
    )
    return _with_fit(led, gpu)
