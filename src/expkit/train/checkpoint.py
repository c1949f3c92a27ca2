"""Training checkpoints for an exact resume, in the one checkpoint format of ``expkit.runs.checkpoint``:
``step-0000100/`` holds the model and optimizer state, the RNG states and the step; its manifest keeps the
model and training configs, so a resume is checked against them before any tensor is loaded. The two newest
are kept.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from expkit.errors import InputError
from expkit.runs.checkpoint import (
    CheckpointInfo,
    capture_rng_state,
    find_checkpoints,
    load_checkpoint_state,
    read_checkpoint,
    restore_rng_state,
    save_checkpoint,
)

__all__ = ["TrainCheckpoint", "open_train_checkpoint", "restore_train_checkpoint", "save_train_checkpoint"]

_PREFIX = "step-"


@dataclass(frozen=True)
class TrainCheckpoint:
    """A verified training checkpoint on disk: where, which step, and the configs it was written with."""

    path: Path
    step: int
    model_config: dict[str, Any]
    train_config: dict[str, Any]
    extra: dict[str, Any]
    files: tuple[str, ...]


def save_train_checkpoint(
    directory: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    model_config: dict[str, Any],
    train_config: dict[str, Any],
    extra: dict[str, Any] | None = None,
    keep: int = 2,
) -> Path:
    """Write ``directory/step-<step>/`` atomically and keep the newest ``keep`` step checkpoints.

    Args:
        directory: the run's checkpoint folder (created when missing).
        model: the bare module (unwrap DDP first).
        optimizer: its ``state_dict`` is saved with the RNG states and ``step``.
        step: optimizer steps completed; training resumes at this step.
        model_config, train_config: JSON-able dicts, compared on resume.
        extra: JSON-able facts to keep beside (corpus fingerprint, schedule, ...).
        keep: how many step checkpoints to keep, newest first (>= 1).

    Returns:
        The checkpoint directory.
    """
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": capture_rng_state(), "step": step}
    meta = {"step": step, "model_config": model_config, "train_config": train_config, "extra": extra or {}}
    info = save_checkpoint(state, directory, f"{_PREFIX}{step:07d}", meta=meta)
    for old in _step_checkpoints(directory)[:-keep] if keep >= 1 else []:
        shutil.rmtree(old, ignore_errors=True)
    return info.path


def _step_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """The ``step-N`` checkpoints under ``directory``, oldest first by their step number (past step 9,999,999
    the zero-padded names no longer sort by step)."""
    steps = [p for p in find_checkpoints(directory, _PREFIX) if p.name[len(_PREFIX) :].isdigit()]
    return sorted(steps, key=lambda p: int(p.name[len(_PREFIX) :]))


def _config_diff(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [
        f"{k}: checkpoint {saved.get(k)!r} vs now {now.get(k)!r}"
        for k in sorted(set(saved) | set(now))
        if saved.get(k) != now.get(k)
    ]


def open_train_checkpoint(path: str | Path, *, model_config: dict[str, Any] | None = None) -> TrainCheckpoint:
    """Verify a training checkpoint (sizes, sha256, and optionally the model config) and describe it.

    ``path`` may be a run's checkpoint folder: its newest step checkpoint is taken.

    Raises:
        InputError: missing/truncated/corrupt files (the hint names the previous good checkpoint, which is
            left in place), a checkpoint that is not a training one, or a model config that differs (the
            message lists each differing key).
    """
    path = Path(path)
    steps = _step_checkpoints(path) if path.is_dir() and not (path / "manifest.json").exists() else []
    if steps:
        path = steps[-1]  # a run's checkpoint folder: take its newest
    info = read_checkpoint(path)
    meta = info.meta
    if not (
        isinstance(meta.get("step"), int)
        and all(isinstance(meta.get(k), dict) for k in ("model_config", "train_config", "extra"))
        and isinstance(meta["extra"].get("schedule", {}), dict)
    ):
        raise InputError(
            "not a training checkpoint: its manifest's meta lacks step, model_config, train_config or extra",
            path=path / "manifest.json",
            hint="resume from a step-NNNNNNN checkpoint written by expkit train",
        )
    if model_config is not None and meta["model_config"] != model_config:
        raise InputError(
            "checkpoint was written for another model config ("
            + "; ".join(_config_diff(meta["model_config"], model_config))
            + ")",
            path=path,
            hint="resume with the checkpoint's config, or start a new run",
        )
    return TrainCheckpoint(
        path=path,
        step=meta["step"],
        model_config=meta["model_config"],
        train_config=meta["train_config"],
        extra=meta["extra"],
        files=info.files,
    )


def restore_train_checkpoint(
    ckpt: TrainCheckpoint, *, model: nn.Module, optimizer: torch.optim.Optimizer, restore_rng: bool = True
) -> int:
    """Load model, optimizer and RNG states from a verified checkpoint; returns the step to resume at."""
    info = CheckpointInfo(path=ckpt.path, name=ckpt.path.name, meta={}, files=ckpt.files)  # verified on open
    state = load_checkpoint_state(info)
    try:
        model.load_state_dict(state["model"], strict=True)
    except (KeyError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"cannot load the model weights: {type(exc).__name__}: {first}", path=info.path / "tensors.safetensors"
        ) from exc
    try:
        optimizer.load_state_dict(state["optimizer"])
        if restore_rng:
            restore_rng_state(state["rng"])
        return int(state["step"])
    except (KeyError, ValueError, TypeError, IndexError, RuntimeError) as exc:
        raise InputError(
            f"refused to load the optimizer/RNG state ({type(exc).__name__}: {exc})",
            path=info.path / "state.pt",
            hint="resume from a checkpoint written by expkit train",
        ) from exc
