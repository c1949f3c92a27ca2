"""Activations measured, not assumed: replicas at 1, 2 and 4 layers, a per-layer + fixed fit, extrapolation.

Results are cached as JSON per (config, options) under ``cache_dir`` (default ``~/.cache/expkit/memory``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from expkit.memory.activations import ActivationQuery, estimate_activations
from expkit.memory.architecture import ModelSpec

__all__ = ["ActivationFit", "fit_activations", "measure_ckpt_time_ratio"]


@dataclass(frozen=True)
class ActivationFit:
    """Saved-for-backward bytes measured on replicas and extrapolated to the full model.

    ``per_layer_bytes`` and ``fixed_bytes`` are the least-squares fit of measured bytes against the
    number of layers at (1, ``replica_seq``); ``residual_bytes`` the largest absolute residual.
    ``extrapolated_bytes`` = (num_layers * per_layer + fixed) * batch * seq / replica_seq (linear in
    tokens: true for SDPA; eager attention's T x T term is not linear, see ``note``).
    ``formula_bytes`` is ``expkit.memory.activations`` at the same options, ``korthikanti_bytes`` the
    paper's formula. With ``grad_ckpt`` the ``ckpt_time_ratio`` is the measured (forward + backward with
    checkpointing) / (without) on the deepest replica.
    """

    model: str
    layers: tuple[int, ...]
    measured_bytes: tuple[int, ...]
    replica_seq: int
    per_layer_bytes: float
    fixed_bytes: float
    residual_bytes: float
    num_layers: int
    batch: int
    seq: int
    extrapolated_bytes: int
    formula_bytes: int
    korthikanti_bytes: int
    precision: str
    method: str
    grad_ckpt: bool
    ckpt_extrapolated_bytes: int | None
    ckpt_time_ratio: float | None
    note: str
    cached: bool = False


def _cache_key(spec: ModelSpec, opts: Mapping[str, object]) -> str:
    blob = json.dumps({"raw": spec.raw, **opts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _default_cache_dir() -> Path:
    root = os.environ.get("EXPKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "expkit")
    return Path(root) / "memory"


def _fit_line(xs: list[int], ys: list[int]) -> tuple[float, float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    icpt = my - slope * mx
    resid = max(abs(y - (icpt + slope * x)) for x, y in zip(xs, ys, strict=True))
    return slope, icpt, resid


def measure_ckpt_time_ratio(
    spec: ModelSpec,
    *,
    num_layers: int = 2,
    seq: int = 256,
    repeats: int = 3,
    precision: str = "fp32",
    method: str = "full",
    lora_r: int = 16,
    attention: str = "sdpa",
    seed: int = 0,
) -> float:
    """Median forward+backward time with gradient checkpointing / without, on a ``num_layers`` replica.

    The two replicas run interleaved (A, B, A, B, ...) after one warm-up round each, so load from other
    processes hits both alike.
    """
    import statistics

    from expkit.memory.replica import build_replica, time_forward_backward

    pair = [
        build_replica(
            spec,
            num_layers=num_layers,
            method=method,
            precision=precision,
            lora_r=lora_r,
            attention=attention,
            grad_ckpt=ckpt,
            seed=seed,
        )
        for ckpt in (False, True)
    ]
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeats + 1):
        for j, model in enumerate(pair):
            t = time_forward_backward(model, batch=1, seq=seq, repeats=1, precision=precision, warmup=False)
            if i:  # the first round is the warm-up
                times[j].append(t)
    return statistics.median(times[1]) / statistics.median(times[0])


def fit_activations(
    spec: ModelSpec,
    *,
    batch: int = 1,
    seq: int = 4096,
    replica_seq: int = 256,
    replica_vocab: int | None = 1024,
    layers: tuple[int, ...] = (1, 2, 4),
    precision: str = "fp32",
    method: str = "full",
    lora_r: int = 16,
    attention: str = "sdpa",
    with_ckpt: bool = True,
    time_repeats: int = 2,
    time_seq: int | None = None,
    time_precision: str = "fp32",
    cache_dir: Path | None = None,
    use_cache: bool = True,
    seed: int = 0,
) -> ActivationFit:
    """Measure saved-for-backward bytes of replicas of ``spec`` and extrapolate to full depth, batch, seq.

    Args:
        spec: the architecture (built at its real width; only the depth changes).
        batch, seq: the target micro-batch and sequence length.
        replica_seq: sequence length the replicas run at on the CPU (stated in the result).
        replica_vocab: vocabulary of the replicas (None: the real one). Only the fixed part depends on it,
            through the fp32 log-probs (4 B * vocab per token), which are added back for the real vocabulary.
            A small vocabulary keeps the LM head from dominating the timings.
        layers: replica depths (at least two).
        precision, method, lora_r, attention: as in ``estimate_training_memory``.
        with_ckpt: also measure with gradient checkpointing (bytes and the forward+backward time ratio).
        time_repeats: timed repeats for the checkpointing ratio (median).
        time_seq, time_precision: tokens and precision of the timed runs (default ``replica_seq``, fp32: CPUs
            without bf16 units run autocast bf16 slowly and unevenly, which would distort the ratio).
        cache_dir, use_cache: JSON cache per (config, options).

    Returns:
        ActivationFit.

    Example:
        >>> fit = fit_activations(load_model_spec("qwen2.5-0.5b"), seq=4096, replica_seq=128)  # doctest: +SKIP
    """
    opts = dict(
        batch=batch,
        seq=seq,
        replica_seq=replica_seq,
        replica_vocab=replica_vocab,
        layers=list(layers),
        precision=precision,
        method=method,
        lora_r=lora_r,
        attention=attention,
        with_ckpt=with_ckpt,
        time_seq=time_seq,
        time_precision=time_precision,
        v=3,
    )
    path = (cache_dir or _default_cache_dir()) / f"{_cache_key(spec, opts)}.json"
    if use_cache and path.is_file():
        data = json.loads(path.read_text())
        data.update(layers=tuple(data["layers"]), measured_bytes=tuple(data["measured_bytes"]), cached=True)
        return ActivationFit(**data)

    import gc

    from expkit.memory.replica import build_replica, measure_saved_bytes

    real_spec = spec
    vocab_fix = 0
    if replica_vocab is not None and replica_vocab < spec.vocab_size:
        from expkit.memory.architecture import spec_from_dict

        raw = {k: v for k, v in spec.raw.items() if k not in ("bos_token_id", "eos_token_id", "pad_token_id")}
        spec = spec_from_dict(dict(raw, vocab_size=replica_vocab), name=spec.name, source=spec.source)
        vocab_fix = 4 * (real_spec.vocab_size - replica_vocab) * replica_seq  # fp32 log-probs per token
    measured = []
    for n in layers:
        model = build_replica(
            spec, num_layers=n, method=method, precision=precision, lora_r=lora_r, attention=attention, seed=seed
        )
        measured.append(measure_saved_bytes(model, batch=1, seq=replica_seq, precision=precision).activation_bytes)
        del model
        gc.collect()
    measured = [m + vocab_fix for m in measured]
    slope, icpt, resid = _fit_line(list(layers), measured)
    scale = batch * seq / replica_seq
    extrapolated = int((real_spec.num_layers * slope + icpt) * scale)
    ckpt_bytes = ratio = None
    if with_ckpt:
        deep = max(layers)
        ck = []
        for n in (min(layers), deep):
            model = build_replica(
                spec,
                num_layers=n,
                method=method,
                precision=precision,
                lora_r=lora_r,
                attention=attention,
                grad_ckpt=True,
                seed=seed,
            )
            ck.append(measure_saved_bytes(model, batch=1, seq=replica_seq, precision=precision).activation_bytes)
            del model
        cslope = (ck[1] - ck[0]) / (deep - min(layers))
        cicpt = ck[0] - cslope * min(layers)
        # stored layer inputs for all layers + one layer rebuilt during backward
        ckpt_bytes = int((real_spec.num_layers * cslope + cicpt + vocab_fix + slope) * scale)
        ratio = measure_ckpt_time_ratio(
            spec,
            num_layers=deep,
            seq=time_seq or replica_seq,
            repeats=time_repeats,
            precision=time_precision,
            method=method,
            lora_r=lora_r,
            attention=attention,
            seed=seed,
        )
    spec = real_spec
    est = estimate_activations(
        spec,
        ActivationQuery(batch=batch, seq=seq, precision=precision, method=method, lora_r=lora_r, attention=attention),
    )
    note = (
        f"replicas at real width, {', '.join(map(str, layers))} layers, 1 x {replica_seq} tokens on the CPU; "
        f"scaled linearly to {batch} x {seq} tokens"
        + (
            f"; replica vocabulary {replica_vocab}, the fp32 log-probs of the real {spec.vocab_size:,} added"
            if vocab_fix
            else ""
        )
    )
    if attention == "eager":
        note += "; eager attention stores T x T probabilities, which grow as T^2: the linear scaling understates"
    fit = ActivationFit(
        model=spec.name,
        layers=tuple(layers),
        measured_bytes=tuple(measured),
        replica_seq=replica_seq,
        per_layer_bytes=slope,
        fixed_bytes=icpt,
        residual_bytes=resid,
        num_layers=spec.num_layers,
        batch=batch,
        seq=seq,
        extrapolated_bytes=extrapolated,
        formula_bytes=est.total_bytes,
        korthikanti_bytes=est.korthikanti_total_bytes,
        precision=precision,
        method=method,
        grad_ckpt=with_ckpt,
        ckpt_extrapolated_bytes=ckpt_bytes,
        ckpt_time_ratio=ratio,
        note=note,
    )
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({k: v for k, v in asdict(fit).items() if k != "cached"}))
            tmp.replace(path)
        except OSError:
            pass  # a read-only home only loses the cache, not the result
    return fit
