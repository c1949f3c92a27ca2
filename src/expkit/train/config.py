"""The training config and ``KEY=VALUE`` overrides (``expkit train charlm --config lr_max=2e-3``).

Defaults and why (tuned on this shared 2-core CPU for 60 s of training, README "Training something
small"): 2,048 characters per step as B = 32 windows of T = 64. At the same tokens, B = 32 x T = 64 reached
val PPL 9.39 after 200 steps where B = 16 x T = 128 reached 10.52 and B = 8 x T = 128 (400 steps) 9.96;
in 60 s runs back to back, 11.09 vs 11.85 (load average ~6, 1 thread). Short windows cost less attention
and give more distinct windows per step; a minute needs steps more than context. Peak lr 3e-3 beat 6e-3
(10.52 vs 12.15 at 200 steps).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expkit.errors import UsageError
from expkit.hardware.threads import MAX_THREADS

if TYPE_CHECKING:
    from expkit.train.corpus import Corpus
    from expkit.train.model import CharLMConfig

__all__ = ["TrainConfig", "TrainRequest", "apply_overrides", "config_keys"]

_INT_MAX = 2**63 - 1  # torch and the run record (orjson) hold integers as int64
_INT_MIN = -(2**63)


@dataclass(frozen=True)
class TrainConfig:
    """How to train. ``batch_size`` is per process and per micro-batch; the global batch per optimizer
    step is ``batch_size * grad_accum * world_size`` sequences of ``seq_len`` characters."""

    batch_size: int = 32
    seq_len: int = 64
    grad_accum: int = 1
    lr_max: float = 3e-3
    lr_min: float = 3e-4
    warmup_steps: int = 20
    max_steps: int | None = None  # None: as many as fit the time budget (calibrated before step 1)
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95  # nanoGPT's choice for small batches
    grad_clip: float = 1.0
    eval_interval: int = 200
    eval_windows: int = 256
    log_interval: int = 10
    checkpoint_interval: int | None = None
    num_workers: int = 0  # 2 cores: a worker process would take a core away from the model
    num_threads: int | None = None  # torch intra-op threads; None keeps torch's default (one per core)
    bf16_autocast: bool = False
    compile: bool = False
    check_first_loss: bool = True
    check_grads: bool = True
    check_zero_grad: bool = True
    nan_guard: bool = True

    def __post_init__(self) -> None:
        for name in ("batch_size", "seq_len", "grad_accum", "eval_interval", "eval_windows", "log_interval"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name}={getattr(self, name)} must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise UsageError(f"max_steps={self.max_steps} must be >= 1 (or None for a time budget)")
        if not 0 <= self.lr_min <= self.lr_max:
            raise UsageError(f"need 0 <= lr_min ({self.lr_min}) <= lr_max ({self.lr_max})")
        if self.warmup_steps < 0:
            raise UsageError(f"warmup_steps={self.warmup_steps} must be >= 0")
        if self.num_threads is not None and not 1 <= self.num_threads <= MAX_THREADS:
            raise UsageError(
                f"num_threads={self.num_threads} must be in [1, {MAX_THREADS}] (or None for torch's default)"
            )
        if self.num_workers < 0:
            raise UsageError(f"num_workers={self.num_workers} must be >= 0")


@dataclass(frozen=True)
class TrainRequest:
    """One training run of the char LM: what to train (``model_config``, ``train_config``), on what
    (``corpus``), where (``device``), for how long, and what to record. Derive variants with
    ``dataclasses.replace`` (a resume is ``replace(request, resume=checkpoint)``).

    Fields:
        model_config, train_config: None for the defaults (``CharLMConfig()``, ``TrainConfig()``).
        corpus: a Corpus, a path for ``load_corpus``, or None for the Python standard library's sources.
        seed: seeds init (``torch.manual_seed``) and the batch order.
        device: ``cpu`` or ``cuda``; under torchrun each rank takes ``cuda:LOCAL_RANK``.
        minutes: time budget when ``train_config.max_steps`` is None; the step count is fixed before
            step 1 from a measured step time, so the cosine schedule ends when the budget does.
        resume: a checkpoint directory (or a folder of them: the newest) to continue from.
        stop_at_step: stop after this step although the schedule goes on (to test resume).
        store, name, record: the run store (``expkit.runs``); ``record=False`` writes no run.
        checkpoint_dir: where checkpoints go (default: the run's ``checkpoints/``; None without a run).
    """

    model_config: CharLMConfig | None = None
    train_config: TrainConfig | None = None
    corpus: Corpus | str | Path | None = None
    seed: int = 0
    device: str = "cpu"
    minutes: float | None = None
    resume: str | Path | None = None
    stop_at_step: int | None = None
    store: str | Path | None = None
    name: str | None = None
    record: bool = True
    checkpoint_dir: str | Path | None = None


# names other trainers use for our keys (nanoGPT, HF TrainingArguments)
_ALIASES = {
    "learning_rate": "lr_max",
    "lr": "lr_max",
    "min_lr": "lr_min",
    "max_iters": "max_steps",
    "warmup_iters": "warmup_steps",
    "gradient_accumulation_steps": "grad_accum",
    "per_device_train_batch_size": "batch_size",
    "context_length": "seq_len",
    "n_embed": "n_embd",
    "d_model": "n_embd",
    "max_grad_norm": "grad_clip",
}


def closest_key(key: str, keys: list[str]) -> str:
    """The valid key nearest to ``key``: a known alias, else the highest difflib similarity."""
    if _ALIASES.get(key) in keys:
        return _ALIASES[key]
    return max(keys, key=lambda k: difflib.SequenceMatcher(None, key, k).ratio())


def config_keys(*configs: Any) -> list[str]:
    """Every field name of the given dataclass instances, in order."""
    return [f.name for c in configs for f in fields(c)]


def _parse(raw: str, current: Any, key: str) -> Any:
    kind = type(current)
    if raw.lower() in ("none", "null") and (
        current is None or key in ("max_steps", "checkpoint_interval", "num_threads")
    ):
        return None
    try:
        if isinstance(current, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if current is None or kind is int:
            number = float(raw)
            value = int(number) if number.is_integer() else int(raw)
        else:
            value = kind(raw)
    except (ValueError, OverflowError):
        want = "true/false" if isinstance(current, bool) else ("an integer" if current is None else kind.__name__)
        raise UsageError(f"config key {key}={raw}: not {want}") from None
    if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
        raise UsageError(
            f"config key {key}={raw}: {value} is outside the 64-bit integer range",
            hint="a count this large cannot be stored or run; give a realistic value",
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"config key {key}={raw}: not a finite number")
    return value


def apply_overrides(overrides: list[str] | tuple[str, ...], *configs: Any) -> tuple[Any, ...]:
    """Apply ``KEY=VALUE`` strings to whichever config has the field KEY; returns new configs.

    Raises:
        UsageError: no ``=``, or a key no config has (the message names the closest valid key), or a
            value of the wrong type.

    Example:
        >>> from expkit.train.model import CharLMConfig
        >>> apply_overrides(["n_layer=2", "lr_max=1e-3"], CharLMConfig(), TrainConfig())[0].n_layer
        2
    """
    keys = config_keys(*configs)
    changes: list[dict[str, Any]] = [{} for _ in configs]
    given: list[list[str]] = [[] for _ in configs]
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise UsageError(f"config override {item!r} is not KEY=VALUE", hint="e.g. lr_max=1e-3")
        if key not in keys:
            raise UsageError(
                f"config key {key}: no such config key",
                hint=f"did you mean {closest_key(key, keys)!r}? (valid keys: {', '.join(keys)})",
            )
        i = next(i for i, cfg in enumerate(configs) if key in asdict(cfg))
        changes[i][key] = _parse(raw.strip(), getattr(configs[i], key), key)
        given[i].append(item)
    # Validate each config once, after every override: n_embd=6 then n_head=2 is as valid as the other order.
    out = list(configs)
    for i, cfg in enumerate(configs):
        if not changes[i]:
            continue
        try:
            out[i] = replace(cfg, **changes[i])
        except ValueError as exc:  # CharLMConfig validates with ValueError
            raise UsageError(f"config overrides {' '.join(given[i])}: {exc}") from None
    return tuple(out)
