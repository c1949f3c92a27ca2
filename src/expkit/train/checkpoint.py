"""Checkpoints for an exact resume: model (safetensors), optimizer + RNG + step (torch.save, read back
with ``weights_only=True``), and a manifest with sizes and sha256 of both, written last.

A checkpoint is a directory ``step-0000100/`` built under a temporary name and renamed into place
(``os.replace``), so a crash mid-write never leaves a half checkpoint under a real name, and the
previous good checkpoint is always kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from expkit.errors import InputError

__all__ = ["Checkpoint", "find_checkpoints", "load_checkpoint", "restore_checkpoint", "save_checkpoint"]

FORMAT = 1
_MODEL_FILE = "model.safetensors"
_STATE_FILE = "state.pt"
_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Checkpoint:
    """A verified checkpoint on disk: where, which step, and the configs it was written with."""

    path: Path
    step: int
    model_config: dict[str, Any]
    train_config: dict[str, Any]
    extra: dict[str, Any]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
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
    """Write ``directory/step-<step>/`` atomically and keep the newest ``keep`` checkpoints.

    Args:
        directory: the run's checkpoint folder (created when missing).
        model: the bare module (unwrap DDP first); tied weights are stored once.
        optimizer: its ``state_dict`` goes to ``state.pt`` with the RNG states and ``step``.
        step: optimizer steps completed; training resumes at this step.
        model_config, train_config: JSON-able dicts, compared on resume.
        extra: JSON-able facts to keep beside (corpus fingerprint, ...).
        keep: how many checkpoints to keep, newest first (>= 1).

    Returns:
        The checkpoint directory.
    """
    from safetensors.torch import save_model

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step-{step:07d}"
    tmp = directory / f".tmp-step-{step:07d}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    save_model(model, str(tmp / _MODEL_FILE))
    torch.save({"optimizer": optimizer.state_dict(), "rng": rng_state(), "step": step}, tmp / _STATE_FILE)
    files = {}
    for name in (_MODEL_FILE, _STATE_FILE):
        _fsync(tmp / name)
        files[name] = {"bytes": (tmp / name).stat().st_size, "sha256": _sha256(tmp / name)}
    manifest = {
        "format": FORMAT,
        "step": step,
        "model_config": model_config,
        "train_config": train_config,
        "extra": extra or {},
        "files": files,
    }
    (tmp / _MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    _fsync(tmp / _MANIFEST)
    if final.exists():  # the same step saved twice: replace it whole
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in find_checkpoints(directory)[:-keep] if keep >= 1 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def find_checkpoints(directory: str | Path) -> list[Path]:
    """Checkpoint directories under ``directory``, oldest first (temporary ones are ignored)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_dir() and p.name.startswith("step-"))


def _previous_good(path: Path) -> Path | None:
    for other in reversed(find_checkpoints(path.parent)):
        if other != path and other.name < path.name:
            try:
                _verify(other)
                return other
            except InputError:
                continue
    return None


def _verify(path: Path) -> dict[str, Any]:
    mpath = path / _MANIFEST
    if not mpath.is_file():
        raise InputError("not a checkpoint (no manifest.json): incomplete or not written by expkit", path=path)
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"manifest.json is corrupt: {exc.msg}", path=mpath, line=exc.lineno) from exc
    except (UnicodeDecodeError, OSError) as exc:
        raise InputError(f"manifest.json cannot be read: {exc}", path=mpath) from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not (
        isinstance(files, dict)
        and all(isinstance(w, dict) and {"bytes", "sha256"} <= set(w) for w in files.values())
        and all(isinstance(manifest.get(k), dict) for k in ("model_config", "train_config", "extra"))
        and isinstance(manifest.get("step"), int)
        and isinstance(manifest["extra"].get("schedule", {}), dict)
    ):
        raise InputError(
            "manifest.json is not an expkit checkpoint manifest (files with bytes and sha256, step, "
            "model_config, train_config, extra)",
            path=mpath,
        )
    for name, want in files.items():
        f = path / name
        if not f.resolve().is_relative_to(path.resolve()):
            raise InputError(f"manifest.json names a file outside the checkpoint: {name!r}", path=mpath)
        size = f.stat().st_size if f.is_file() else None
        if size != want["bytes"]:
            raise InputError(
                f"{name} has {size} bytes, the manifest says {want['bytes']}: the file is truncated or was replaced",
                path=f,
            )
        if _sha256(f) != want["sha256"]:
            raise InputError(f"{name} does not match its sha256 in the manifest: the file is corrupt", path=f)
    return manifest


def load_checkpoint(path: str | Path, *, model_config: dict[str, Any] | None = None) -> Checkpoint:
    """Verify a checkpoint (sizes, sha256, and optionally the model config) and describe it.

    Raises:
        InputError: missing/truncated/corrupt files (the hint names the previous good checkpoint, which is
            left in place), or a model config that differs (the message lists each differing key).
    """
    path = Path(path)
    if path.is_dir() and not (path / _MANIFEST).exists() and find_checkpoints(path):
        path = find_checkpoints(path)[-1]  # a run's checkpoint folder: take its newest
    try:
        manifest = _verify(path)
    except InputError as exc:
        prev = _previous_good(path)
        hint = f"the previous good checkpoint is kept: resume from {prev}" if prev else "no earlier good checkpoint"
        raise InputError(exc.message, hint=hint) from exc
    if model_config is not None and manifest["model_config"] != model_config:
        keys = sorted(set(manifest["model_config"]) | set(model_config))
        diffs = [
            f"{k}: checkpoint {manifest['model_config'].get(k)!r} vs now {model_config.get(k)!r}"
            for k in keys
            if manifest["model_config"].get(k) != model_config.get(k)
        ]
        raise InputError(
            "checkpoint was written for another model config (" + "; ".join(diffs) + ")",
            path=path,
            hint="resume with the checkpoint's config, or start a new run",
        )
    return Checkpoint(
        path=path,
        step=int(manifest["step"]),
        model_config=manifest["model_config"],
        train_config=manifest["train_config"],
        extra=manifest["extra"],
    )


def restore_checkpoint(
    ckpt: Checkpoint, *, model: nn.Module, optimizer: torch.optim.Optimizer, restore_rng: bool = True
) -> int:
    """Load model, optimizer and RNG states from a verified checkpoint; returns the step to resume at."""
    import pickle

    from safetensors.torch import load_model

    try:
        load_model(model, str(ckpt.path / _MODEL_FILE), strict=True)
    except Exception as exc:  # safetensors raises its own error types for a bad header
        raise InputError(
            f"cannot load the model weights: {type(exc).__name__}: {exc}", path=ckpt.path / _MODEL_FILE
        ) from exc
    try:
        # weights_only=True: tensors and plain containers only; a pickle that would run code is refused here
        state = torch.load(ckpt.path / _STATE_FILE, weights_only=True, map_location="cpu")
        optimizer.load_state_dict(state["optimizer"])
        if restore_rng:
            set_rng_state(state["rng"])
        return int(state["step"])
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, TypeError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"refused to load the optimizer/RNG state ({type(exc).__name__}: {first})",
            path=ckpt.path / _STATE_FILE,
            hint="only tensors and plain containers are read (torch.load weights_only=True); "
            "resume from a checkpoint written by expkit",
        ) from exc
