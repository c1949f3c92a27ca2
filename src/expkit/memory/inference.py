"""The inference ledger: weights, the KV cache, and the two moments generation can peak at.

Generation peaks either while the prompt is processed (prefill: the prompt's KV cache plus the transient
tensors of one layer over every prompt token) or at the end of decoding (the KV cache of the full context
plus one step's logits). Lines are bytes on one GPU, GiB = 2**30 B; ``peak_bytes`` is the larger moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.errors import UsageError
from expkit.memory.activations import PRECISIONS
from expkit.memory.ledger import CUDA_OVERHEAD_BYTES, Ledger, LedgerLine, with_fit
from expkit.memory.params import count_parameters
from expkit.models.description import ModelDescription, resolve_description
from expkit.models.quantization import NF4, WeightParams

__all__ = ["InferenceQuery", "estimate_inference_memory", "ledger_for_inference"]

PREFILL_LINES = ("prefill: prompt logits", "prefill: attention workspace", "prefill: largest intermediate")
ENCODER_LINE = "prefill: encoder output"
DECODE_LINES = ("weights", "KV cache", "logits / loss")
# What the prefill terms assume about the framework (transformers' generate, eager PyTorch, no_grad).
PREFILL_ASSUMPTIONS = (
    "prefill logits: generate asks for the last position's only (transformers >= 4.45, logits_to_keep=1), "
    "in the compute dtype, plus their fp32 copy for sampling",
    "prefill attention: an SDPA/flash kernel (no T x T matrix); its workspace is the fp32 log-sum-exp per head "
    "per prompt token",
    "prefill largest intermediate: the MLP of one layer over the whole prompt, with the embedding output, the "
    "layer's input, its residual and the MLP's input alive (transformers' decoder loop holds them), and the "
    "MLP's intermediate-width tensors (gated MLP: SiLU(gate), up, their product), in the compute dtype",
    "encoder-decoder: the prefill is the encoder's pass over the source tokens (its output is kept for the "
    "cross-attention); the KV cache line holds every decoder layer's self-attention K/V over the context and "
    "its cross-attention K/V over the source tokens",
    "peak = the larger of prefill (prompt KV cache + the prefill terms) and the end of decoding (full KV cache "
    "+ one step's logits); the runtime-overhead line is an estimate added to both",
)


@dataclass(frozen=True)
class InferenceQuery:
    """Everything an inference ledger depends on. ``context``: tokens in the KV cache at the end of
    generation; ``prompt``: tokens processed at once by the prefill (None: the whole context, the worst
    case); ``method`` ``qlora``: NF4 weights; ``gpus``: tensor-parallel split; ``gpu``: a registry name for
    the fits verdict. Variants: ``dataclasses.replace``."""

    model: ModelDescription
    context: int = 4096
    prompt: int | None = None
    batch: int = 1
    precision: str = "bf16-mixed"
    method: str = "full"
    gpus: int = 1
    device: str = "cuda"
    gpu: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.context if self.prompt is None else self.prompt


def _validate(q: InferenceQuery) -> None:
    for choice, choices, field in (
        (q.method, ("full", "qlora"), "method (inference)"),
        (q.precision, PRECISIONS, "precision"),
        (q.device, ("cuda", "cpu"), "device"),
    ):
        if choice not in choices:
            raise UsageError(f"{field} {choice!r} is not one of {', '.join(choices)}")
    for count, field in ((q.context, "context"), (q.batch, "batch"), (q.gpus, "gpus"), (q.prompt_tokens, "prompt")):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise UsageError(f"{field} must be a positive integer, got {count!r}")
    if q.prompt_tokens > q.context:
        raise UsageError(f"prompt {q.prompt_tokens} is longer than context {q.context}")


def _per_gpu(q: InferenceQuery) -> str:
    return f" / {q.gpus} GPUs" if q.gpus > 1 else ""


def _weight_line(q: InferenceQuery, b: int) -> LedgerLine:
    """Weights as the checkpoint's storage scheme stores them (NF4 under qlora), split over the GPUs."""
    desc = q.model
    count = count_parameters(desc)
    matmul = sum(k.layers * k.matmul_params_per_layer for k in count.layer_kinds) or sum(
        layer.linear_params(desc.hidden_size) for layer in desc.layers
    )
    experts = sum(k.layers * k.routed_expert_params_per_layer for k in count.layer_kinds)
    params = WeightParams(linear=matmul - experts, experts=experts, other=count.total_params - matmul)
    scheme = NF4 if q.method == "qlora" else desc.quantization
    return LedgerLine("weights", int(scheme.bytes_of(params, b)) // q.gpus, scheme.formula(params, b) + _per_gpu(q))


def _intermediate_per_token(desc: ModelDescription) -> tuple[int, str]:
    """Elements per token alive at the prefill's largest intermediate, and how they were counted: 4 hidden-
    width tensors and the MLP's intermediate-width ones (its matmul inputs and outputs, as the model spec
    counts them on the active path, less the 3 hidden-width ends), the widest layer's."""
    h = desc.hidden_size
    widest = max(layer.mlp.matmul_io_per_token(h) for layer in (*desc.layers, *desc.encoder_layers)) - 3 * h
    return 4 * h + widest, f"(4 * hidden {h:,} + MLP intermediate-width {widest:,})"


def _prefill_lines(q: InferenceQuery, b: int) -> list[LedgerLine]:
    """The prefill's transient terms over ``prompt`` tokens (see PREFILL_ASSUMPTIONS); an encoder-decoder's
    prefill is its encoder's pass over the source tokens, whose output the decoder keeps."""
    desc, B = q.model, q.batch
    S = desc.source_tokens(q.prompt_tokens)
    T = max(q.prompt_tokens, S)
    heads = max(layer.attention.num_heads for layer in (*desc.layers, *desc.encoder_layers))
    per_token, what = _intermediate_per_token(desc)
    encoder = (
        [
            LedgerLine(
                "prefill: encoder output",
                B * S * desc.hidden_size * b // q.gpus,
                f"{b} B * {B} * {S:,} encoder tokens * hidden {desc.hidden_size:,} (kept for the cross-attention)",
            )
        ]
        if S
        else []
    )
    return [
        *encoder,
        LedgerLine(
            PREFILL_LINES[0],
            B * desc.vocab_size * (b + 4),
            f"last position only: {B} * vocab {desc.vocab_size:,} * ({b} B + 4 B fp32 copy)",
        ),
        LedgerLine(
            PREFILL_LINES[1],
            B * T * heads * 4 // q.gpus,
            f"fp32 log-sum-exp: 4 B * {B} * {T:,} prompt tokens * {heads} heads{_per_gpu(q)}",
        ),
        LedgerLine(
            PREFILL_LINES[2],
            B * T * per_token * b // q.gpus,
            f"{b} B * {B} * {T:,} prompt tokens * {what}{_per_gpu(q)}",
        ),
    ]


def ledger_for_inference(query: InferenceQuery) -> Ledger:
    """The inference ledger of ``query``: weights, KV cache, one step's logits and the prefill's transient
    terms, and the peak of the two moments (see the module docstring and PREFILL_ASSUMPTIONS).

    KV cache per layer = 2 (K and V) * kv_heads * head_dim * tokens * batch * bytes (Pope et al. 2022,
    "Efficiently Scaling Transformer Inference", sec. 2); each attention kind says what it caches per token
    and how many tokens it keeps (``expkit.models``).

    Raises:
        UsageError: a bad field value (names the field).
    """
    q = query
    _validate(q)
    desc, b = q.model, 4 if q.precision == "fp32" else 2
    weights = _weight_line(q, b)
    kv = LedgerLine(
        "KV cache",
        desc.cache_bytes(q.context, b) * q.batch // q.gpus,
        desc.cache_formula(q.context) + f", * {q.batch} * {b} B{_per_gpu(q)}",
    )
    logits = LedgerLine(
        "logits / loss", 4 * desc.vocab_size * q.batch, f"fp32 logits of one step: 4 * {q.batch} * vocab"
    )
    prefill = _prefill_lines(q, b)
    lines = [weights, kv, logits, *prefill]
    overhead = CUDA_OVERHEAD_BYTES if q.device == "cuda" else 0
    if overhead:
        lines.append(
            LedgerLine("runtime overhead", overhead, "CUDA context + workspaces ~0.50 GiB (estimate)", estimate=True)
        )
    prompt_kv = desc.cache_bytes(q.prompt_tokens, b) * q.batch // q.gpus
    at_prefill = weights.bytes + prompt_kv + sum(ln.bytes for ln in prefill)
    at_decode = weights.bytes + kv.bytes + logits.bytes + sum(ln.bytes for ln in prefill if ln.name == ENCODER_LINE)
    per_gpu = sum(ln.bytes for ln in lines)
    count = count_parameters(desc)
    led = Ledger(
        model=desc.name,
        mode="infer",
        method=q.method,
        precision=q.precision,
        optimizer="none",
        batch=q.batch,
        seq=q.context,
        gpus=q.gpus,
        shard="tensor-parallel" if q.gpus > 1 else "none",
        grad_ckpt="none",
        attention="sdpa",
        convention="expkit",
        total_params=count.total_params,
        trainable_params=0,
        trainable_fraction=0.0,
        lines=tuple(lines),
        per_gpu_bytes=per_gpu,
        total_bytes=per_gpu * q.gpus,
        peak_bytes=max(at_prefill, at_decode) + overhead,
        peak_phase=f"prefill of {q.prompt_tokens:,} prompt tokens"
        if at_prefill > at_decode
        else "decode at full context",
        device=q.device,
        notes=desc.notes,
        approximations=desc.approximations,
        active_params=count.active_params,
        assumptions=PREFILL_ASSUMPTIONS,
    )
    return with_fit(led, q.gpu)


def estimate_inference_memory(
    model: ModelDescription | str | Path | dict[str, Any],
    *,
    context: int = 4096,
    batch: int = 1,
    precision: str = "bf16-mixed",
    method: str = "full",
    gpus: int = 1,
    device: str = "cuda",
    gpu: str | None = None,
) -> Ledger:
    """The inference ledger at ``context`` tokens, the prompt filling the whole context (the worst case;
    ``ledger_for_inference(InferenceQuery(..., prompt=N))`` for a shorter prompt).

    Example:
        >>> led = estimate_inference_memory("llama-3-8b", context=8192)
        >>> led.line("KV cache").bytes / 2**30  # 2 * 32 * 8 * 128 * 8192 * 2 B
        1.0
    """
    query = InferenceQuery(
        model=resolve_description(model),
        context=context,
        batch=batch,
        precision=precision,
        method=method,
        gpus=gpus,
        device=device,
        gpu=gpu,
    )
    return ledger_for_inference(query)
