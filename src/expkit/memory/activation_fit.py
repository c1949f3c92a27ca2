"""Activations measured, not assumed: replicas at 1, 2 and 4 layers, a per-layer + fixed fit, extrapolation.

Results are cached as JSON per (config, options) under ``cache_dir`` (default ``~/.cache/expkit/memory``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from expkit.memory.activations import ActivationQuery, estimate_activations
from expkit.memory.replica import ReplicaQuery
from expkit.models.description import ModelDescription, describe_config

__all__ = ["ActivationFit", "FitQuery", "fit_activations", "measure_ckpt_time_ratio"]


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


def _cache_key(desc: ModelDescription, opts: Mapping[str, object]) -> str:
    blob = json.dumps({"raw": desc.raw, **opts}, sort_keys=True, default=str)
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


@dataclass(frozen=True)
class FitQuery:
    """What ``fit_activations`` measures and extrapolates to (variants: ``dataclasses.replace``).

    ``batch``, ``seq``: the target micro-batch and sequence length. ``replica_seq``: tokens the replicas
    run at on the CPU (stated in the result). ``replica_vocab``: vocabulary of the replicas (None: the real
    one); only the fixed part depends on it, through the fp32 log-probs (4 B * vocab per token), which are
    added back for the real vocabulary; a small vocabulary keeps the LM head from dominating the timings.
    ``layers``: replica depths (at least two). ``precision``, ``method``, ``lora_r``, ``attention``: as in
    ``estimate_training_memory``. ``with_ckpt``: also measure with gradient checkpointing (bytes and the
    forward+backward time ratio); ``time_repeats``: timed repeats for that ratio (median); ``time_seq``,
    ``time_precision``: tokens and precision of the timed runs (default ``replica_seq``, fp32: CPUs without
    bf16 units run autocast bf16 slowly and unevenly, which would distort the ratio). ``cache_dir``,
    ``use_cache``: JSON cache per (config, options). ``seed``: the replicas' weights.
    """

    batch: int = 1
    seq: int = 4096
    replica_seq: int = 256
    replica_vocab: int | None = 1024
    layers: tuple[int, ...] = (1, 2, 4)
    precision: str = "fp32"
    method: str = "full"
    lora_r: int = 16
    attention: str = "sdpa"
    with_ckpt: bool = True
    time_repeats: int = 2
    time_seq: int | None = None
    time_precision: str = "fp32"
    cache_dir: Path | None = None
    use_cache: bool = True
    seed: int = 0

    def replica(self, num_layers: int, *, grad_ckpt: bool = False) -> ReplicaQuery:
        """The replica this fit builds at ``num_layers`` deep."""
        return ReplicaQuery(
            num_layers=num_layers,
            method=self.method,
            precision=self.precision,
            lora_r=self.lora_r,
            attention=self.attention,
            grad_ckpt=grad_ckpt,
            seed=self.seed,
        )

    def cache_options(self) -> dict[str, object]:
        """The options that change the measured bytes (the cache key's part beside the config)."""
        keep = ("batch", "seq", "replica_seq", "replica_vocab", "precision", "method", "lora_r", "attention")
        opts: dict[str, object] = {k: getattr(self, k) for k in keep}
        opts.update(layers=list(self.layers), with_ckpt=self.with_ckpt, time_seq=self.time_seq)
        opts.update(time_precision=self.time_precision, v=3)
        return opts


def measure_ckpt_time_ratio(desc: ModelDescription, query: ReplicaQuery, *, seq: int = 256, repeats: int = 3) -> float:
    """Median forward+backward time with gradient checkpointing / without, on the replica ``query`` builds
    (its ``grad_ckpt`` is set both ways).

    The two replicas run interleaved (A, B, A, B, ...) after one warm-up round each, so load from other
    processes hits both alike.
    """
    import statistics

    from expkit.memory.replica import build_replica, time_forward_backward

    pair = [build_replica(desc, replace(query, grad_ckpt=ckpt)) for ckpt in (False, True)]
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeats + 1):
        for j, model in enumerate(pair):
            t = time_forward_backward(model, batch=1, seq=seq, repeats=1, precision=query.precision, warmup=False)
            if i:  # the first round is the warm-up
                times[j].append(t)
    return statistics.median(times[1]) / statistics.median(times[0])


def _read_cached(path: Path) -> ActivationFit:
    data = json.loads(path.read_text())
    data.update(layers=tuple(data["layers"]), measured_bytes=tuple(data["measured_bytes"]), cached=True)
    return ActivationFit(**data)


def _write_cache(path: Path, fit: ActivationFit) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({k: v for k, v in asdict(fit).items() if k != "cached"}))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home only loses the cache, not the result


def _replica_description(desc: ModelDescription, q: FitQuery) -> tuple[ModelDescription, int]:
    """The description the replicas are built from (the small vocabulary when asked) and the bytes per replica
    run that the real vocabulary's fp32 log-probs add back."""
    if q.replica_vocab is None or q.replica_vocab >= desc.vocab_size:
        return desc, 0
    raw = {k: v for k, v in desc.raw.items() if k not in ("bos_token_id", "eos_token_id", "pad_token_id")}
    small = describe_config(dict(raw, vocab_size=q.replica_vocab), name=desc.name, source=desc.source)
    return small, 4 * (desc.vocab_size - q.replica_vocab) * q.replica_seq  # fp32 log-probs per token


def _measure_depths(desc: ModelDescription, q: FitQuery, depths: tuple[int, ...], *, grad_ckpt: bool) -> list[int]:
    """Saved-for-backward bytes of one replica per depth, at 1 x ``replica_seq`` tokens."""
    import gc

    from expkit.memory.replica import build_replica, measure_saved_bytes

    measured = []
    for n in depths:
        model = build_replica(desc, q.replica(n, grad_ckpt=grad_ckpt))
        measured.append(measure_saved_bytes(model, batch=1, seq=q.replica_seq, precision=q.precision).activation_bytes)
        del model
        gc.collect()
    return measured


def _fit_note(desc: ModelDescription, q: FitQuery, vocab_fix: int) -> str:
    note = (
        f"replicas at real width, {', '.join(map(str, q.layers))} layers, 1 x {q.replica_seq} tokens on the CPU; "
        f"scaled linearly to {q.batch} x {q.seq} tokens"
    )
    if vocab_fix:
        note += f"; replica vocabulary {q.replica_vocab}, the fp32 log-probs of the real {desc.vocab_size:,} added"
    if q.attention == "eager":
        note += "; eager attention stores T x T probabilities, which grow as T^2: the linear scaling understates"
    return note


def fit_activations(desc: ModelDescription, query: FitQuery | None = None) -> ActivationFit:
    """Measure saved-for-backward bytes of replicas of ``desc`` and extrapolate to full depth, batch, seq.

    Args:
        desc: the model description (built at its real width; only the depth changes).
        query: what to measure, whole (None: ``FitQuery()``); variants with ``dataclasses.replace``.

    Returns:
        ActivationFit.

    Example:
        >>> from expkit.models import load_model_description
        >>> qwen = load_model_description("qwen2.5-0.5b")
        >>> fit = fit_activations(qwen, FitQuery(seq=4096, replica_seq=128))  # doctest: +SKIP
    """
    q = query or FitQuery()
    q = replace(q, layers=tuple(q.layers))
    path = (q.cache_dir or _default_cache_dir()) / f"{_cache_key(desc, q.cache_options())}.json"
    if q.use_cache and path.is_file():
        return _read_cached(path)
    small, vocab_fix = _replica_description(desc, q)
    measured = [m + vocab_fix for m in _measure_depths(small, q, q.layers, grad_ckpt=False)]
    slope, icpt, resid = _fit_line(list(q.layers), measured)
    scale = q.batch * q.seq / q.replica_seq
    ckpt_bytes = ratio = None
    if q.with_ckpt:
        lo, deep = min(q.layers), max(q.layers)
        ck = _measure_depths(small, q, (lo, deep), grad_ckpt=True)
        cslope = (ck[1] - ck[0]) / (deep - lo)
        cicpt = ck[0] - cslope * lo
        # stored layer inputs for all layers + one layer rebuilt during backward
        ckpt_bytes = int((desc.num_layers * cslope + cicpt + vocab_fix + slope) * scale)
        timed = replace(q.replica(deep), precision=q.time_precision)
        ratio = measure_ckpt_time_ratio(small, timed, seq=q.time_seq or q.replica_seq, repeats=q.time_repeats)
    est = estimate_activations(
        desc,
        ActivationQuery(
            batch=q.batch, seq=q.seq, precision=q.precision, method=q.method, lora_r=q.lora_r, attention=q.attention
        ),
    )
    fit = ActivationFit(
        model=desc.name,
        layers=q.layers,
        measured_bytes=tuple(measured),
        replica_seq=q.replica_seq,
        per_layer_bytes=slope,
        fixed_bytes=icpt,
        residual_bytes=resid,
        num_layers=desc.num_layers,
        batch=q.batch,
        seq=q.seq,
        extrapolated_bytes=int((desc.num_layers * slope + icpt) * scale),
        formula_bytes=est.total_bytes,
        korthikanti_bytes=est.korthikanti_total_bytes,
        precision=q.precision,
        method=q.method,
        grad_ckpt=q.with_ckpt,
        ckpt_extrapolated_bytes=ckpt_bytes,
        ckpt_time_ratio=ratio,
        note=_fit_note(desc, q, vocab_fix),
    )
    if q.use_cache:
        _write_cache(path, fit)
    return fit
