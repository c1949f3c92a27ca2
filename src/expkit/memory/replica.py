"""Scaled replicas measured on the CPU: saved-for-backward bytes, the peak of a training step, timings.

A replica is the real architecture (transformers, from the config) at its real width with fewer layers,
random weights. Saved bytes are counted with ``torch.autograd.graph.saved_tensors_hooks`` (unique
storages, parameters and their 16-bit autocast copies excluded); the peak of a step is read from the
allocator's events (``torch.profiler`` with ``profile_memory=True``), so temporaries inside kernels count.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from expkit.errors import InputError
from expkit.models.description import ModelDescription

__all__ = [
    "ReplicaQuery",
    "SavedBytes",
    "StepPeak",
    "build_replica",
    "measure_saved_bytes",
    "measure_step_peak",
    "model_inputs",
    "time_forward_backward",
    "training_state_bytes",
]


@dataclass(frozen=True)
class SavedBytes:
    """Bytes autograd keeps for backward after one forward: activations and 16-bit weight copies apart."""

    activation_bytes: int
    weight_copy_bytes: int
    num_tensors: int


@dataclass(frozen=True)
class StepPeak:
    """One training step measured at the allocator (CPU) or with ``torch.cuda.max_memory_allocated``.

    ``start_bytes`` is what is live when the step starts (weights, optimizer state); ``peak_bytes`` the
    highest live total during forward, backward and ``optimizer.step()``; ``device`` cpu or cuda.
    """

    start_bytes: int
    peak_bytes: int
    device: str
    method: str


def _autocast(precision: str, device: str) -> contextlib.AbstractContextManager[Any]:
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    return torch.autocast(device, dtype=dtype)


@dataclass(frozen=True)
class ReplicaQuery:
    """How a replica is built: ``num_layers`` deep (None: the config's), ``method`` (``full``, ``lora``,
    ``qlora``), ``precision`` (``fp32`` or ``*-mixed``), the LoRA rank and targets, ``attention``
    (``sdpa``/``eager``), gradient checkpointing, the weights' ``seed`` and the ``device``.
    Variants: ``dataclasses.replace(query, grad_ckpt=True)``."""

    num_layers: int | None = None
    method: str = "full"
    precision: str = "fp32"
    lora_r: int = 16
    lora_targets: tuple[str, ...] = ("all-linear",)
    attention: str = "sdpa"
    grad_ckpt: bool = False
    seed: int = 0
    device: str = "cpu"


def build_replica(desc: ModelDescription, query: ReplicaQuery | None = None) -> Any:
    """The HF model for ``desc`` (``query.num_layers`` deep), random weights, ready to train.

    Full fine-tune: fp32 parameters (autocast does the 16-bit part). LoRA: the base held in 16 bit when
    ``precision`` is mixed (as LoRA recipes load it), adapters fp32, built by peft.

    Args:
        desc: the model description.
        query: how to build it, whole (None: ``ReplicaQuery()``, the model's depth, full fp32 on the CPU);
            variants with ``dataclasses.replace(query, num_layers=2)``.

    Raises:
        InputError: the config has no ``model_type`` (transformers picks the model class by it).
    """
    q = query or ReplicaQuery()
    num_layers, method, precision, attention = q.num_layers, q.method, q.precision, q.attention
    lora_r, lora_targets, grad_ckpt, seed, device = q.lora_r, q.lora_targets, q.grad_ckpt, q.seed, q.device
    import warnings

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq

    s = desc.with_layers(num_layers) if num_layers is not None else desc
    if s.model_type is None:
        raise InputError(
            f"{desc.name}: the config has no model_type, so transformers cannot build a replica",
            hint="add the model_type of its architecture (e.g. llama) to config.json",
        )
    raw = {k: v for k, v in s.raw.items() if k not in ("model_type", "architectures", "transformers_version")}
    cfg = AutoConfig.for_model(s.model_type, **raw)
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto: Any = AutoModelForCausalLM
        if s.is_encoder_decoder:  # T5, BART: text seq2seq; Whisper: speech seq2seq
            auto = AutoModelForSpeechSeq2Seq if hasattr(cfg, "num_mel_bins") else AutoModelForSeq2SeqLM
        model = auto.from_config(cfg, attn_implementation=attention)
        model.to(device=device, dtype=torch.float32)  # config.json's torch_dtype would make it 16-bit
        model.config.use_cache = False
        if method != "full":
            from peft import LoraConfig, get_peft_model

            if precision != "fp32":
                model.to(torch.bfloat16 if precision == "bf16-mixed" else torch.float16)
            targets: Any = "all-linear" if lora_targets == ("all-linear",) else list(lora_targets)
            model = get_peft_model(model, LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules=targets))
        if grad_ckpt:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if method != "full":
                model.enable_input_require_grads()
    model.train()
    return model


def model_inputs(model: Any, *, batch: int, seq: int, seed: int = 0) -> dict[str, Any]:
    """One training batch for ``model``: ``seq`` random token ids as input and labels; an encoder-decoder's
    encoder reads ``seq`` token ids too, a speech encoder (Whisper) random log-mel features of its
    2 x max_source_positions frames, its decoder ``seq`` labels."""
    import torch

    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=gen).to(device)
    mels = getattr(model.config, "num_mel_bins", None)
    if mels is None:
        return {"input_ids": ids, "labels": ids}
    frames = 2 * model.config.max_source_positions
    feats = torch.randn(batch, mels, frames, generator=gen).to(device)
    return {"input_features": feats, "labels": ids}


_VIEW_NODES = {"TBackward0", "ViewBackward0", "TransposeBackward0", "PermuteBackward0", "ExpandBackward0"}


def _is_weight_copy(t: Any) -> bool:
    """True for autocast's 16-bit copy of a parameter (a ToCopy whose input is a leaf parameter)."""
    fn = t.grad_fn
    while fn is not None and type(fn).__name__ in _VIEW_NODES:  # linear saves weight.t(), a view
        fn = fn.next_functions[0][0]
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return False
    return any(nf is not None and type(nf).__name__ == "AccumulateGrad" for nf, _ in fn.next_functions)


def measure_saved_bytes(model: Any, *, batch: int, seq: int, precision: str = "fp32", seed: int = 0) -> SavedBytes:
    """Unique storage bytes saved for backward by one forward pass with labels (loss included).

    Parameters are excluded (they are weights, not activations); autocast's 16-bit parameter copies are
    reported apart as ``weight_copy_bytes``.
    """
    import torch

    device = next(model.parameters()).device.type
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    acts: dict[int, int] = {}
    copies: dict[int, int] = {}

    def pack(t: Any) -> Any:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr in params or st.device.type == "meta":
            return t
        (copies if _is_weight_copy(t) else acts)[ptr] = st.nbytes()
        return t

    inputs = model_inputs(model, batch=batch, seq=seq, seed=seed)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), _autocast(precision, device):
        loss = model(**inputs).loss
    del loss
    return SavedBytes(
        activation_bytes=sum(acts.values()), weight_copy_bytes=sum(copies.values()), num_tensors=len(acts) + len(copies)
    )


def training_state_bytes(model: Any, optimizer: Any) -> int:
    """Bytes of the unique storages of parameters, their gradients, buffers and the optimizer's state."""
    seen: dict[int, int] = {}
    for p in model.parameters():
        seen[p.untyped_storage().data_ptr()] = p.untyped_storage().nbytes()
        if p.grad is not None:
            seen[p.grad.untyped_storage().data_ptr()] = p.grad.untyped_storage().nbytes()
    for state in optimizer.state.values():
        for v in state.values():
            if hasattr(v, "untyped_storage"):
                seen[v.untyped_storage().data_ptr()] = v.untyped_storage().nbytes()
    for b in model.buffers():
        seen[b.untyped_storage().data_ptr()] = b.untyped_storage().nbytes()
    return sum(seen.values())


def _make_optimizer(model: Any, optimizer: str, impl: str | None = None) -> Any:
    """torch's SGD or AdamW over the trainable parameters; ``impl`` (``foreach``, ``for-loop``, ``fused``;
    None: torch's default for the device) picks AdamW's implementation."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    foreach = {"foreach": True, "for-loop": False}.get(impl or "")  # None: torch decides
    return torch.optim.AdamW(params, lr=1e-4, foreach=foreach, fused=True if impl == "fused" else None)


def measure_step_peak(
    model: Any,
    *,
    batch: int,
    seq: int,
    precision: str = "fp32",
    optimizer: str = "adamw",
    optimizer_impl: str | None = None,
    seed: int = 0,
) -> StepPeak:
    """Peak memory of one steady-state training step (the second: optimizer state already exists).

    The step is ``zero_grad(set_to_none=True)``, forward with labels, ``loss.backward()``,
    ``optimizer.step()``. CPU: live bytes at the start plus the highest running sum of the allocator's
    events (torch.profiler, ``profile_memory=True``). CUDA: ``torch.cuda.max_memory_allocated``.
    ``optimizer_impl``: AdamW's implementation (``foreach``, ``for-loop``, ``fused``; None: torch's default).
    """
    import torch

    device = next(model.parameters()).device.type
    opt = _make_optimizer(model, optimizer, optimizer_impl)
    inputs = model_inputs(model, batch=batch, seq=seq, seed=seed)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with _autocast(precision, device):
            loss = model(**inputs).loss
        loss.backward()
        del loss
        opt.step()

    step()  # warm-up: creates the optimizer state
    opt.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        return StepPeak(
            start_bytes=start,
            peak_bytes=torch.cuda.max_memory_allocated(),
            device="cuda",
            method="torch.cuda.max_memory_allocated",
        )
    start = training_state_bytes(model, opt)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted(
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type().name == "CPU"
    )
    running = peak = 0
    for _, nbytes in events:
        running += nbytes
        peak = max(peak, running)
    return StepPeak(
        start_bytes=start,
        peak_bytes=start + peak,
        device="cpu",
        method="torch.profiler memory events (allocator level)",
    )


def time_forward_backward(
    model: Any, *, batch: int, seq: int, repeats: int = 3, precision: str = "fp32", seed: int = 0, warmup: bool = True
) -> float:
    """Median seconds of forward + backward (no optimizer) over ``repeats`` runs (after one warm-up)."""
    import statistics

    import torch

    device = next(model.parameters()).device.type
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=gen).to(device)
    times = []
    for i in range(repeats + int(warmup)):
        t0 = time.perf_counter()
        with _autocast(precision, device):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        if i or not warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)
