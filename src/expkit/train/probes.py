"""Measurements of what the loop's lines do, for the labs and for users checking their own setup:
gradient accumulation vs one big batch, the growth a missing ``zero_grad`` causes, memory kept by an
eval without ``no_grad``, the cost of ``.item()`` every step, bf16 autocast vs fp32, and a trace of
which object each line of ``train_step`` touches.
"""

from __future__ import annotations

import copy
import time
import weakref
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from expkit.train.model import CharLM, CharLMConfig

__all__ = [
    "AccumulationCheck",
    "AutocastTiming",
    "EvalMemoryTrace",
    "ItemSyncTiming",
    "compare_accumulated_gradients",
    "measure_autocast_slowdown",
    "measure_eval_memory",
    "measure_item_sync",
    "trace_grad_norm_growth",
]


def _batch(n: int, seq_len: int, seed: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(vocab, (n, seq_len + 1), generator=g)  # (n, T + 1)
    return ids[:, :-1], ids[:, 1:]


def _loss(model: CharLM, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(x)  # (B, T, V)
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))


def _flat_grad(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])


@dataclass(frozen=True)
class AccumulationCheck:
    """One batch of k*B rows vs k accumulated micro-batches of B rows (each loss divided by k)."""

    k: int
    micro_batch: int
    max_abs_diff: float
    rel_diff: float  # ||g_accum - g_big|| / ||g_big||
    grad_norm: float
    rel_tol: float
    within: bool


def compare_accumulated_gradients(
    *,
    model_config: CharLMConfig,
    k: int = 4,
    micro_batch: int = 4,
    seq_len: int = 64,
    seed: int = 0,
    rel_tol: float = 1e-5,
    divide_by_k: bool = True,
) -> AccumulationCheck:
    """Gradient of a mean loss over k*B rows vs the sum of k micro-batch gradients of loss/k (C3.2).

    In float32 the two differ only by summation order: relative difference ~1e-7, tolerance 1e-5.
    ``divide_by_k=False`` is the classic bug: the accumulated gradient is k times too large.
    """
    if k < 1 or micro_batch < 1:
        raise ValueError(f"k={k} and micro_batch={micro_batch} must be >= 1")
    torch.manual_seed(seed)
    model = CharLM(model_config)
    twin = copy.deepcopy(model)
    x, y = _batch(k * micro_batch, seq_len, seed, model_config.vocab_size)  # (kB, T)
    _loss(model, x, y).backward()
    big = _flat_grad(model)
    for i in range(k):  # accumulate: no zero_grad between micro-batches
        rows = slice(i * micro_batch, (i + 1) * micro_batch)
        (_loss(twin, x[rows], y[rows]) / (k if divide_by_k else 1)).backward()
    acc = _flat_grad(twin)
    rel = float((acc - big).norm() / big.norm())
    return AccumulationCheck(
        k=k,
        micro_batch=micro_batch,
        max_abs_diff=float((acc - big).abs().max()),
        rel_diff=rel,
        grad_norm=float(big.norm()),
        rel_tol=rel_tol,
        within=rel <= rel_tol,
    )


def trace_grad_norm_growth(
    *,
    model_config: CharLMConfig,
    steps: int = 8,
    batch_size: int = 4,
    seq_len: int = 64,
    seed: int = 0,
    zero_grad: bool,
) -> tuple[float, ...]:
    """Gradient norm after each of ``steps`` backward passes on fresh batches, with or without
    ``zero_grad`` between them (no optimizer step, so only the gradient buffers change). Without
    ``zero_grad`` each norm is the norm of the running sum: it grows step after step (C3.2)."""
    torch.manual_seed(seed)
    model = CharLM(model_config)
    norms = []
    for s in range(steps):
        if zero_grad:
            model.zero_grad(set_to_none=True)
        x, y = _batch(batch_size, seq_len, seed + 1 + s, model_config.vocab_size)
        _loss(model, x, y).backward()
        norms.append(float(_flat_grad(model).norm()))
    return tuple(norms)


@dataclass(frozen=True)
class EvalMemoryTrace:
    """Bytes held for a backward that never comes, after each eval step (``saved_bytes``: tensors
    autograd saved and still alive, parameters excluded) and the process RSS after each step."""

    mode: str
    saved_bytes: tuple[int, ...]
    rss_bytes: tuple[int, ...]


EvalMode = Literal["no_grad", "grad_keep_loss", "grad_item"]


def measure_eval_memory(
    *,
    model_config: CharLMConfig,
    mode: EvalMode,
    steps: int = 10,
    batch_size: int = 8,
    seq_len: int = 128,
    seed: int = 0,
) -> EvalMemoryTrace:
    """Run an eval loop three ways (C3.3):

    - ``no_grad``: under ``torch.no_grad()``, summing the loss tensors: nothing is saved.
    - ``grad_keep_loss``: no ``no_grad`` and ``total += loss`` (a tensor): every step's graph stays
      alive through ``total``, memory grows linearly until OOM.
    - ``grad_item``: no ``no_grad`` but ``total += loss.item()``: each graph is freed when the next
      step rebinds ``loss``; memory is flat but each step still pays for saving activations.
    """
    import contextlib

    import psutil

    if mode not in ("no_grad", "grad_keep_loss", "grad_item"):
        raise ValueError(f"mode={mode!r} is not no_grad, grad_keep_loss or grad_item")
    torch.manual_seed(seed)
    model = CharLM(model_config).eval()
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: list[tuple[weakref.ref, int, int]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        # keep a detached alias: returning ``t`` itself would tie it to its own grad_fn (a reference
        # cycle that outlives the graph); the alias dies exactly when the graph lets go of it.
        # Keyed by the storage, counted once: q, k, v views of one qkv storage are one allocation
        alias = t.detach()
        storage = t.untyped_storage()
        if storage.data_ptr() not in param_ptrs:
            saved.append((weakref.ref(alias), storage.data_ptr(), storage.nbytes()))
        return alias

    def alive_bytes() -> int:
        seen: dict[int, int] = {}
        for ref, ptr, nbytes in saved:
            if ref() is not None:
                seen[ptr] = nbytes
        return sum(seen.values())

    proc = psutil.Process()
    saved_trace, rss_trace = [], []
    total: torch.Tensor | float = 0.0
    ctx = torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()
    with ctx, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for s in range(steps):
            x, y = _batch(batch_size, seq_len, seed + s, model_config.vocab_size)
            loss = _loss(model, x, y)
            total = total + (loss.item() if mode == "grad_item" else loss)
            saved_trace.append(alive_bytes())
            rss_trace.append(int(proc.memory_info().rss))
    del total, loss
    return EvalMemoryTrace(mode=mode, saved_bytes=tuple(saved_trace), rss_bytes=tuple(rss_trace))


@dataclass(frozen=True)
class ItemSyncTiming:
    """Best-of-repeats step time when the loss is read with ``.item()`` every step vs every ``sparse_every``."""

    device: str
    steps: int
    every_step_s: float
    sparse_every: int
    sparse_step_s: float
    ratio: float  # every_step_s / sparse_step_s; ~1 on a CPU (no asynchronous queue to drain)
    item_call_s: float  # one .item() on a computed scalar, alone (mean of 2,000 calls)


def _timed_steps(model: CharLM, opt: torch.optim.Optimizer, batches: list, device: str, item_every: int) -> float:
    sync = (lambda: torch.cuda.synchronize()) if device.startswith("cuda") else (lambda: None)
    sync()
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(batches):
        loss = _loss(model, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if (i + 1) % item_every == 0:
            loss.item()  # the sync point: waits for every queued kernel
    sync()
    return (time.perf_counter() - t0) / len(batches)


def measure_item_sync(
    *,
    model_config: CharLMConfig,
    device: str = "cpu",
    steps: int = 50,
    sparse_every: int = 50,
    batch_size: int = 8,
    seq_len: int = 64,
    repeats: int = 3,
    seed: int = 0,
) -> ItemSyncTiming:
    """Step time with ``loss.item()`` every step vs every ``sparse_every`` steps (C3.7), best of
    ``repeats`` interleaved runs. On CUDA the difference is the cost of draining the launch queue."""
    torch.manual_seed(seed)
    model = CharLM(model_config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [
        tuple(t.to(device) for t in _batch(batch_size, seq_len, seed + i, model_config.vocab_size))
        for i in range(steps)
    ]
    _timed_steps(model, opt, batches[:3], device, 1)  # warm-up
    every, sparse = [], []
    for _ in range(repeats):
        every.append(_timed_steps(model, opt, batches, device, 1))
        sparse.append(_timed_steps(model, opt, batches, device, sparse_every))
    e, s = min(every), min(sparse)  # best of repeats: the run least disturbed by other processes
    scalar = _loss(model, *batches[0]).detach()
    t0 = time.perf_counter()
    for _ in range(2_000):
        scalar.item()  # nothing queued: the bare cost of the call and the copy to Python
    item_s = (time.perf_counter() - t0) / 2_000
    return ItemSyncTiming(
        device=device,
        steps=steps,
        every_step_s=e,
        sparse_every=sparse_every,
        sparse_step_s=s,
        ratio=e / s,
        item_call_s=item_s,
    )


@dataclass(frozen=True)
class AutocastTiming:
    """Forward + backward time in fp32 and under bf16 autocast on one device; ``slowdown`` = bf16 / fp32."""

    device: str
    fp32_s: float
    bf16_s: float
    slowdown: float
    repeats: int
    cpu_bf16_instructions: bool | None


def cpu_has_bf16_instructions() -> bool | None:
    """True when /proc/cpuinfo lists avx512_bf16 or amx_bf16; None when it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return None
    return bool(flags) and ("avx512_bf16" in flags or "amx_bf16" in flags)


def measure_autocast_slowdown(
    *,
    model_config: CharLMConfig,
    device: str = "cpu",
    batch_size: int = 8,
    seq_len: int = 128,
    repeats: int = 3,
    seed: int = 0,
) -> AutocastTiming:
    """Best-of-repeats forward + backward time, fp32 vs ``torch.autocast(dtype=torch.bfloat16)`` (C3.8)."""
    torch.manual_seed(seed)
    model = CharLM(model_config).to(device)
    x, y = (t.to(device) for t in _batch(batch_size, seq_len, seed, model_config.vocab_size))
    kind = device.split(":")[0]
    sync = (lambda: torch.cuda.synchronize()) if kind == "cuda" else (lambda: None)

    def once(bf16: bool) -> float:
        sync()
        t0 = time.perf_counter()
        with torch.autocast(device_type=kind, dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1)).backward()
        model.zero_grad(set_to_none=True)
        sync()
        return time.perf_counter() - t0

    once(False), once(True)  # warm-up both paths
    fp32, bf16 = [], []
    for _ in range(repeats):  # interleaved, so machine load hits both alike
        fp32.append(once(False))
        bf16.append(once(True))
    f, b = min(fp32), min(bf16)  # best of repeats: the run least disturbed by other processes
    return AutocastTiming(
        device=device,
        fp32_s=f,
        bf16_s=b,
        slowdown=b / f,
        repeats=repeats,
        cpu_bf16_instructions=cpu_has_bf16_instructions() if kind == "cpu" else None,
    )
