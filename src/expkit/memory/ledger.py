"""The memory ledger: every block of a training step (or of inference) as a named line with its formula.

Lines are bytes on one GPU. ``per_gpu_bytes`` is their sum (every block at once, the figure other tools
print); ``peak_bytes`` is the predicted peak of one step, which is lower because activations are freed
while gradients are being written (the blocks that coexist at the peak are named in ``peak_phase``).
GiB = 2**30 bytes throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from expkit.errors import UsageError
from expkit.memory.activations import PRECISIONS, ActivationEstimate, ActivationQuery, estimate_activations
from expkit.memory.params import count_parameters
from expkit.models.counting import ParameterCount
from expkit.models.description import ModelDescription
from expkit.models.quantization import NF4, WeightParams
from expkit.models.sanity import check_non_negative

__all__ = [
    "CUDA_OVERHEAD_BYTES",
    "Ledger",
    "LedgerLine",
    "TrainingQuery",
    "estimate_training_memory",
]

METHODS = ("full", "lora", "qlora")
OPTIMIZERS = ("adamw", "adamw8bit", "sgd", "adafactor")
SHARDS = ("none", "fsdp", "zero1", "zero2", "zero3")
GRAD_CKPT = ("none", "full")
ATTENTION = ("sdpa", "eager")
OPTIMIZER_IMPLS = ("foreach", "for-loop", "fused")
# CUDA context + cuBLAS/cuDNN workspaces on a recent GPU, as nvidia-smi shows for an idle PyTorch
# process: ~0.5 GiB. An estimate, stated as such on the line; 0 on the CPU.
CUDA_OVERHEAD_BYTES = 512 * 2**20
ALLOCATOR_SLACK = 0.05  # caching-allocator fragmentation, estimate: 5% of activations
# bitsandbytes NF4 with double quantization: 4 bits + 8-bit absmax per 64 + fp32 per 256 blocks
# (QLoRA paper, Dettmers et al. 2023, sec. 3: 0.127 bits/param of constants).
NF4_BYTES_PER_PARAM = NF4.bits / 8


@dataclass(frozen=True)
class LedgerLine:
    """One block: bytes on one GPU and the formula that produced them (with the numbers filled in)."""

    name: str
    bytes: int
    formula: str
    estimate: bool = False

    def __post_init__(self) -> None:
        check_non_negative(f"ledger line {self.name!r}", [("bytes", self.bytes)])


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
    query: TrainingQuery | None = None  # the query this training ledger answers (None for inference ledgers)
    assumptions: tuple[str, ...] = ()  # what the figures assume about the framework's kernels, in words

    def __post_init__(self) -> None:
        figures = ("total_params", "trainable_params", "per_gpu_bytes", "total_bytes", "peak_bytes", "active_params")
        check_non_negative(f"{self.model} {self.mode} ledger", [(f, getattr(self, f)) for f in figures])

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


def _matrix_rows_cols(desc: ModelDescription, method: str, count: ParameterCount) -> int:
    """Sum of rows + cols over the trainable matrices (Adafactor's factored state)."""
    if method != "full":
        return count.trainable_params // max(count.lora_r or 1, 1)  # r x in, out x r: rows + cols ~ size / r
    return desc.matrix_rows_cols()


@dataclass(frozen=True)
class TrainingQuery:
    """Everything a training ledger depends on, in one frozen value (kept on the Ledger as ``query``).

    Variants are ``dataclasses.replace(query, method="lora")`` then ``estimate_training_memory``: the OOM remedies
    are ranked that way, so they keep every option of the run (its LoRA rank, targets, GPUs ...).
    """

    model: ModelDescription
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
    optimizer_impl: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.lora_targets, str):  # "q_proj,v_proj" as typed on a command line
            targets = tuple(t.strip() for t in self.lora_targets.split(",") if t.strip())
            object.__setattr__(self, "lora_targets", targets)
        else:
            object.__setattr__(self, "lora_targets", tuple(self.lora_targets))

    @property
    def resolved_optimizer_impl(self) -> str:
        """``optimizer_impl``, or torch's default for the device when None: torch.optim picks foreach when
        every tensor is on CUDA, else the for-loop (``torch.optim.optimizer._default_to_fused_or_foreach``)."""
        return self.optimizer_impl or ("foreach" if self.device == "cuda" else "for-loop")

    def __json__(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "model"}
        return {"model": self.model.name, "model_source": self.model.source, **out}


def estimate_training_memory(query: TrainingQuery) -> Ledger:
    """Predict the memory of one training step, line by line, per GPU.

    Args:
        query: the run, whole (``TrainingQuery``; its defaults are there, once): ``model`` (a
            ``ModelDescription``: ``expkit.models.load_model_description``), ``batch`` (micro-batch per GPU),
            ``seq`` (tokens per sequence), ``method`` (``full``, ``lora``: 16-bit frozen base under mixed
            precision, ``qlora``: NF4 base), ``lora_r``, ``lora_targets`` (``all-linear``, names, or one
            comma-separated string), ``optimizer`` (``adamw``, ``adamw8bit``, ``sgd``, ``adafactor``),
            ``precision`` (``bf16-mixed`` / ``fp16-mixed``: autocast over fp32 parameters, or ``fp32``),
            ``grad_ckpt`` (``none`` or ``full``), ``attention`` (``sdpa`` or ``eager``), ``gpus`` and
            ``shard`` (``zero1`` optimizer state, ``zero2`` + gradients, ``zero3``/``fsdp`` + weights),
            ``device`` (``cuda`` adds the runtime-overhead line) and ``gpu`` (a registry name, for ``fits``).

    Returns:
        Ledger; ``ledger.query`` is the query it answers (vary it with ``dataclasses.replace``). Other tools'
        conventions are views of it: ``expkit.memory.conventions``.

    Raises:
        UsageError: a bad field value (names the field).

    Example:
        >>> from expkit.models import load_model_description
        >>> q = TrainingQuery(model=load_model_description("qwen2.5-0.5b"), seq=1024, method="lora")
        >>> estimate_training_memory(q).trainable_params
        8798208

    Reference: ZeRO (Rajbhandari et al. 2020) sec. 3.1 for the 16 B/param model state; Korthikanti et al.
    2022 for activations (compared in ``expkit.memory.activations``).
    """
    q = query
    _validate(q)
    desc, lora = q.model, q.method != "full"
    count = count_parameters(desc, lora_r=q.lora_r if lora else None, lora_targets=q.lora_targets)
    n = _Split.of(q)
    lines = (_adapter_weight_lines if lora else _full_weight_lines)(q, count, n)
    lines += _state_lines(q, count, n)
    act = estimate_activations(desc, _activation_query(q))
    static = sum(ln.bytes for ln in lines if ln.name != "gradients")
    lines += _activation_lines(q, act)
    peak = _peak(q, count, act, grads=lines[[ln.name for ln in lines].index("gradients")].bytes, n=n)
    lines.append(peak.temporaries)
    overhead = 0
    if q.device == "cuda":
        slack = int(ALLOCATOR_SLACK * (act.stored_bytes + act.fixed_bytes))
        overhead = CUDA_OVERHEAD_BYTES + slack
        lines.append(
            LedgerLine(
                "runtime overhead",
                overhead,
                f"CUDA context + workspaces ~{_gib(CUDA_OVERHEAD_BYTES)} + allocator slack "
                f"{ALLOCATOR_SLACK:.0%} of activations (estimate)",
                estimate=True,
            )
        )
    per_gpu = sum(ln.bytes for ln in lines)
    notes = list(desc.notes) + ([count.counted_by] if not count.counted_by.startswith("meta") else [])
    led = Ledger(
        model=desc.name,
        mode="train",
        method=q.method,
        precision=q.precision,
        optimizer=q.optimizer,
        batch=q.batch,
        seq=q.seq,
        gpus=q.gpus,
        shard=q.shard,
        grad_ckpt=q.grad_ckpt,
        attention=q.attention,
        convention="expkit",
        total_params=count.total_params,
        trainable_params=count.trainable_params,
        trainable_fraction=count.trainable_fraction,
        lines=tuple(lines),
        per_gpu_bytes=per_gpu,
        total_bytes=per_gpu * q.gpus,
        peak_bytes=static + peak.phase_bytes + overhead,
        peak_phase=peak.phase,
        device=q.device,
        notes=tuple(notes),
        largest_layer_params=max(
            count.embedding_params,
            count.lm_head_params,
            desc.largest_matmul_params(),
            *(k.routed_expert_params_per_layer for k in count.layer_kinds),
        ),
        approximations=desc.approximations,
        active_params=count.active_params,
        query=q,
    )
    return with_fit(led, q.gpu)


def _activation_query(q: TrainingQuery) -> ActivationQuery:
    """The forward pass of ``q`` whose saved tensors the activations line counts."""
    return ActivationQuery(
        batch=q.batch,
        seq=q.seq,
        precision=q.precision,
        method=q.method,
        lora_targets=q.lora_targets,
        lora_r=q.lora_r,
        grad_ckpt=q.grad_ckpt == "full",
        attention=q.attention,
        device=q.device,
    )


def _validate(q: TrainingQuery) -> None:
    for value, choices, option in (
        (q.method, METHODS, "method"),
        (q.optimizer, OPTIMIZERS, "optimizer"),
        (q.precision, PRECISIONS, "precision"),
        (q.grad_ckpt, GRAD_CKPT, "grad_ckpt"),
        (q.attention, ATTENTION, "attention"),
        (q.shard, SHARDS, "shard"),
        (q.device, ("cuda", "cpu"), "device"),
        (q.resolved_optimizer_impl, OPTIMIZER_IMPLS, "optimizer_impl"),
    ):
        _check_choice(value, choices, option)
    for count_value, option in ((q.batch, "batch"), (q.seq, "seq"), (q.gpus, "gpus"), (q.lora_r, "lora_r")):
        _check_positive(count_value, option)
    if not q.lora_targets:
        raise UsageError("lora_targets is empty", hint="give module names like q_proj,v_proj or all-linear")


@dataclass(frozen=True)
class _Split:
    """How many GPUs share each part of the training state (1: replicated)."""

    model: int
    grad: int
    opt: int

    @classmethod
    def of(cls, q: TrainingQuery) -> _Split:
        return cls(
            model=q.gpus if q.shard in ("fsdp", "zero3") else 1,
            grad=q.gpus if q.shard in ("fsdp", "zero2", "zero3") else 1,
            opt=q.gpus if q.shard != "none" else 1,
        )


def _div(n: int) -> str:
    return f" / {n} GPUs" if n > 1 else ""


def _full_weight_lines(q: TrainingQuery, count: ParameterCount, n: _Split) -> list[LedgerLine]:
    """fp32 master weights and their 16-bit copies when every weight is trained."""
    desc, P = q.model, count.total_params
    lines = [LedgerLine("fp32 master weights", 4 * P // n.model, f"4 B * {P:,} params{_div(n.model)}")]
    if q.precision == "fp32":
        return lines
    if n.model > 1:
        unit = max((k.params_per_layer for k in count.layer_kinds), default=count.per_layer_params)
        unit_kind = max(count.layer_kinds, key=lambda k: k.params_per_layer).label if count.layer_kinds else "layer"
        return [
            *lines,
            LedgerLine(
                "bf16 weights",
                2 * 2 * unit,
                f"2 B * 2 gathered units * {unit:,} (the largest FSDP unit: {unit_kind}; "
                "mixed-precision policy: 16-bit copies of the current and prefetched unit only)",
            ),
        ]
    linear_params = P - count.embedding_params - desc.num_layers * (2 * desc.hidden_size) - desc.hidden_size
    if desc.tied_embeddings:
        linear_params += count.embedding_params  # the tied lm_head is a matmul weight too
    experts = sum(k.layers * k.routed_expert_params_per_layer for k in count.layer_kinds)
    cpu_experts = experts if q.device == "cpu" else 0
    note = (
        f"; the {experts:,} fused expert weights get none (torch._grouped_mm is not cast by CPU autocast, measured)"
        if cpu_experts
        else ""
    )
    copied = linear_params - cpu_experts
    return [
        *lines,
        LedgerLine(
            "bf16 weights", 2 * copied, f"2 B * {copied:,} matmul weights (autocast copies, kept for backward){note}"
        ),
    ]


def _adapter_weight_lines(q: TrainingQuery, count: ParameterCount, n: _Split) -> list[LedgerLine]:
    """The frozen base (16-bit, or NF4 under QLoRA) and the adapters' master weights and copies."""
    desc, P, Pt = q.model, count.total_params, count.trainable_params
    mixed = q.precision != "fp32"
    if q.method == "qlora":
        # bitsandbytes quantizes the decoder's linears; the LM head (tied or not) stays 16-bit
        decoder = (
            sum(k.layers * k.params_per_layer for k in count.layer_kinds) or desc.num_layers * count.per_layer_params
        )
        quantized = decoder - desc.num_layers * 2 * desc.hidden_size
        # peft's prepare_model_for_kbit_training (the QLoRA recipe) casts what is not 4-bit to fp32
        base = int(NF4.bytes_of(WeightParams(linear=quantized, other=P - quantized), 4))
        line = LedgerLine(
            "frozen base weights",
            base // n.model,
            f"NF4 {NF4_BYTES_PER_PARAM:.3f} B * {quantized:,} decoder linear + 4 B * "
            f"{P - quantized:,} embeddings, head, norms (fp32: prepare_model_for_kbit_training){_div(n.model)}",
        )
    else:
        fb = 2 if mixed else 4
        line = LedgerLine(
            "frozen base weights",
            fb * P // n.model,
            f"{fb} B * {P:,} params ({'16-bit' if mixed else 'fp32'}){_div(n.model)}",
        )
    lines = [line, LedgerLine("fp32 master weights", 4 * Pt // n.model, f"4 B * {Pt:,} adapter params{_div(n.model)}")]
    if mixed:
        lines.append(LedgerLine("bf16 weights", 2 * Pt // n.model, f"2 B * {Pt:,} adapter params (autocast copies)"))
    return lines


def _state_lines(q: TrainingQuery, count: ParameterCount, n: _Split) -> list[LedgerLine]:
    """Gradients and optimizer state of the trainable parameters."""
    Pt = count.trainable_params
    lines = [LedgerLine("gradients", 4 * Pt // n.grad, f"4 B * {Pt:,} trainable (fp32){_div(n.grad)}")]
    shapes_sum = _matrix_rows_cols(q.model, q.method, count)
    for name, b, f in _optimizer_state(q.optimizer, Pt, shapes_sum):
        lines.append(LedgerLine(name, b // n.opt, f + _div(n.opt)))
    return lines


@dataclass(frozen=True)
class _Peak:
    """The phase at which a step peaks, the bytes of its phase-specific terms, and its temporaries line."""

    phase: str
    phase_bytes: int
    temporaries: LedgerLine


def _peak(q: TrainingQuery, count: ParameterCount, act: ActivationEstimate, grads: int, n: _Split) -> _Peak:
    """Each phase's coexisting terms beyond the static state; the largest is the step's peak."""
    desc, mixed, tokens = q.model, q.precision != "fp32", q.batch * q.seq
    V = desc.vocab_size
    act_bytes = act.stored_bytes + act.fixed_bytes
    unit = max((k.params_per_layer for k in count.layer_kinds), default=count.per_layer_params)
    # (a) loss forward: logits (16-bit under autocast) + their fp32 upcast (mixed only) before log_softmax.
    loss_fwd = tokens * V * ((2 if mixed else 4) + (4 if mixed else 0))
    # (b) loss backward: grad of the log-probs + grad of the logits (fp32); the 16-bit cast of the latter
    #     for lm_head comes after the grad of the log-probs is freed (measured: it does not add).
    loss_bwd = tokens * V * 8
    # (c) checkpointing: the layer being rebuilt in backward (act.recompute_bytes).
    # (d) optimizer step: AdamW's temporaries, by implementation (``_optimizer_temporaries``).
    opt_tmp, opt_what = _optimizer_temporaries(q, count, n)
    # (e) sharded weights: FSDP/ZeRO-3 gather one layer and prefetch the next (fp32 runs; the 16-bit
    #     gathered copies of mixed runs are the "bf16 weights" line).
    gather = (2 * 4 * unit) if (n.model > 1 and not mixed) else 0
    phases = {
        "forward, at the loss (all activations + logits)": (
            act_bytes + act.loss_bytes + loss_fwd + gather,
            loss_fwd + gather,
            "logits + fp32 upcast",
        ),
        "backward, at the loss (all activations + logits grads)": (
            act_bytes + act.loss_bytes + loss_bwd + gather,
            loss_bwd + gather,
            "grad log-probs + grad logits",
        ),
        "backward, last layer rebuilt (checkpointing)": (
            act_bytes + act.recompute_bytes + grads // max(desc.num_layers, 1) + gather,
            act.recompute_bytes + gather,
            "one layer's activations rebuilt",
        ),
        "optimizer step (all gradients + step temporaries)": (grads + opt_tmp, opt_tmp, opt_what),
    }
    phase = max(phases, key=lambda k: phases[k][0])
    total, tmp, what = phases[phase]
    return _Peak(phase, total, LedgerLine("temporaries", tmp, f"at the peak phase: {what}"))


def _optimizer_temporaries(q: TrainingQuery, count: ParameterCount, n: _Split) -> tuple[int, str]:
    """Bytes AdamW allocates during its step beyond its state, and what they are, by implementation.

    foreach (``torch._foreach_sqrt`` of every v at once, then divided and eps-added in place): one fp32
    tensor per trainable parameter, 4 B each, alive until the update is applied. for-loop: per tensor,
    ``exp_avg_sq.sqrt() / bias_correction2_sqrt`` and its eps-added result, two fp32 temporaries of the
    largest tensor (the embedding under a full fine-tune). fused: one kernel per tensor group, no
    temporaries. Other optimizers: none modeled.
    """
    if q.optimizer != "adamw":
        return 0, "none modeled for this optimizer"
    impl, Pt = q.resolved_optimizer_impl, count.trainable_params
    if impl == "foreach":
        return 4 * Pt // n.opt, f"foreach AdamW sqrt(v) of all state: 4 B * {Pt:,}{_div(n.opt)}"
    if impl == "fused":
        return 0, "fused AdamW: no temporaries"
    largest = count.embedding_params if q.method == "full" else max(Pt // max(q.model.num_layers, 1), 1)
    return 2 * 4 * largest, f"for-loop AdamW: 2 fp32 temporaries of the largest tensor, 2 * 4 B * {largest:,}"


def _activation_lines(q: TrainingQuery, act: ActivationEstimate) -> list[LedgerLine]:
    desc, tokens = q.model, q.batch * q.seq
    ckpt = q.grad_ckpt == "full"
    per_kind = " + ".join(f"{n} x {b:,} B ({label})" for label, n, b in act.layer_kinds)
    source = desc.source_tokens(q.seq)
    if source:
        per_kind += f" (encoder layers over {q.batch} x {source:,} source tokens)"
    return [
        LedgerLine(
            "activations",
            act.stored_bytes + act.fixed_bytes,
            (f"{desc.num_layers} layer inputs" if ckpt else per_kind)
            + f" + fixed {act.fixed_bytes:,} B at {q.batch} x {q.seq} tokens"
            + (f" (checkpointed: {desc.num_layers} layer inputs)" if ckpt else ""),
        ),
        LedgerLine(
            "logits / loss", act.loss_bytes, f"fp32 log-probs 4 B * {tokens:,} tokens * vocab {desc.vocab_size:,}"
        ),
    ]


def with_fit(led: Ledger, gpu: str | None) -> Ledger:
    if gpu is None:
        return led
    from expkit.hardware import get_gpu

    g = get_gpu(gpu)
    return replace(led, gpu=g.name, gpu_memory_bytes=g.memory_bytes, fits=led.peak_bytes <= g.memory_bytes)
