"""The one checkpoint format of expkit (``Run.save_checkpoint``, ``train_charlm``'s exact resume).

A checkpoint is a directory ``NAME/`` in a checkpoints folder:

- ``tensors.safetensors``: the state's top-level tensors and tensor dicts (``model.state_dict()``), keys
  ``top/sub``; tensors that share storage (tied weights) are stored once each.
- ``state.pt``: everything else (optimizer state, RNG state, step), checked at save time to load with
  ``torch.load(weights_only=True)`` and read back only that way.
- ``manifest.json``: the format number, JSON metadata (configs, ...), and each file's size and sha256;
  written last.

It is built under a temporary name and renamed into place (``os.replace``), so a crash mid-write never
leaves a half checkpoint under a real name; reading verifies every size and sha256 first and, on a bad
file, names the newest earlier checkpoint that still verifies.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.errors import InputError, UsageError

__all__ = [
    "FORMAT",
    "CheckpointInfo",
    "capture_rng_state",
    "find_checkpoints",
    "load_checkpoint",
    "load_checkpoint_state",
    "read_checkpoint",
    "restore_rng_state",
    "save_checkpoint",
]

FORMAT = 2
TENSORS_FILE = "tensors.safetensors"
STATE_FILE = "state.pt"
MANIFEST = "manifest.json"
_SEP = "/"


@dataclass(frozen=True)
class CheckpointInfo:
    """A verified checkpoint directory: where, its name, its metadata and its files (sizes and sha256 checked)."""

    path: Path
    name: str
    meta: dict[str, Any]
    files: tuple[str, ...]


def _is_tensor_map(value: Any, torch: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items())
    )


def capture_rng_state() -> dict[str, Any]:
    """python, numpy and torch RNG state as plain lists and tensors (loadable with weights_only=True)."""
    import numpy as np
    import torch

    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(np.asarray(keys).astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: Mapping[str, Any]) -> None:
    """Inverse of ``capture_rng_state``."""
    import numpy as np
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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


def _split(state: Mapping[str, Any], torch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(flat tensors ``top`` / ``top/sub``, the rest) of a checkpoint state."""
    if not isinstance(state, Mapping) or not all(isinstance(k, str) for k in state):
        raise UsageError("a checkpoint state must be a dict with str keys", hint="e.g. {'model': net.state_dict()}")
    tensors: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in state.items():
        if _SEP in key:
            raise UsageError(f"checkpoint key {key!r} contains {_SEP!r}", hint="use another key")
        if isinstance(value, torch.Tensor):
            tensors[key] = value
        elif _is_tensor_map(value, torch):
            tensors.update({f"{key}{_SEP}{k}": v for k, v in value.items()})
        else:
            rest[key] = value
    return tensors, rest


def _write_tensors(tensors: dict[str, Any], path: Path) -> None:
    from safetensors.torch import save_file

    seen: set[tuple[int, int]] = set()
    flat: dict[str, Any] = {}
    for k, v in tensors.items():
        v = v.detach()
        ident = (v.untyped_storage().data_ptr(), v.storage_offset()) if v.numel() else (id(v), 0)
        # safetensors refuses shared storage (tied weights): store each copy on its own
        flat[k] = v.clone().contiguous() if ident in seen or not v.is_contiguous() else v
        seen.add(ident)
    save_file({k: v.cpu() for k, v in flat.items()}, str(path))


def _write_rest(rest: dict[str, Any], path: Path, name: str, torch: Any) -> None:
    torch.save(rest, path)
    try:
        torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - we name the refusal, the user fixes the state
        raise UsageError(
            f"checkpoint {name!r} holds values torch.load(weights_only=True) refuses: {exc}",
            hint="keep tensors, numbers, strings, lists and dicts (use capture_rng_state() for RNG)",
        ) from None


def save_checkpoint(
    state: Mapping[str, Any],
    directory: str | os.PathLike[str],
    name: str,
    *,
    meta: Mapping[str, Any] | None = None,
) -> CheckpointInfo:
    """Write ``state`` as the checkpoint ``directory/name/`` (see the module docstring), atomically.

    Args:
        state: a mapping from str to tensors, tensor dicts (``model.state_dict()``), or weights_only-loadable
            values (``optimizer.state_dict()``, ``capture_rng_state()``, numbers).
        directory: the checkpoints folder (created).
        name: the checkpoint's directory name, validated like a run name; saving a name again replaces it.
        meta: JSON-able facts kept in the manifest (configs, step), read back without loading tensors.

    Returns:
        The checkpoint as ``read_checkpoint`` describes it.

    Example:
        >>> save_checkpoint({"model": net.state_dict(), "step": 20}, "ckpt", "step20")  # doctest: +SKIP
    """
    import torch

    from expkit.runs.store import validate_name

    validate_name(name, what="checkpoint name")
    tensors, rest = _split(state, torch)
    try:
        meta_json = json.loads(json.dumps(dict(meta or {})))
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"checkpoint {name!r}: meta is not JSON-able ({exc})", hint="keep str, numbers, lists, dicts"
        ) from None
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    final, tmp = out / name, out / f".tmp-{name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        if tensors:
            _write_tensors(tensors, tmp / TENSORS_FILE)
        if rest:
            _write_rest(rest, tmp / STATE_FILE, name, torch)
        files = {}
        for f in sorted(tmp.iterdir()):
            _fsync(f)
            files[f.name] = {"bytes": f.stat().st_size, "sha256": _sha256(f)}
        manifest = {"format": FORMAT, "name": name, "meta": meta_json, "files": files}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        _fsync(tmp / MANIFEST)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():  # the same name saved twice: replace it whole
        shutil.rmtree(final)
    os.replace(tmp, final)
    return CheckpointInfo(path=final, name=name, meta=meta_json, files=tuple(files))


def find_checkpoints(directory: str | os.PathLike[str], prefix: str = "") -> list[Path]:
    """Checkpoint directories under ``directory`` whose name starts with ``prefix``, by name (temporary
    ones are ignored)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name.startswith(prefix))


def _old_format(path: Path) -> str | None:
    """What an expkit checkpoint of an earlier format at ``path`` is, or None."""
    # "." and "/" have no name, so no flat NAME.safetensors beside them (with_name would raise ValueError)
    siblings = (path.with_name(path.name + ".safetensors"), path.with_name(path.name + ".pt")) if path.name else ()
    flat = [p for p in siblings if p.exists()]
    if flat and not path.exists():
        return (
            f"{' and '.join(p.name for p in flat)}: a checkpoint of expkit's earlier flat format "
            "(NAME.safetensors + NAME.pt), which this version does not read; load them by hand with "
            "safetensors.torch.load_file and torch.load(weights_only=True)"
        )
    if (path / "model.safetensors").is_file() and (path / STATE_FILE).is_file():
        return (
            "a checkpoint of expkit's earlier training format (model.safetensors + state.pt, manifest format 1), "
            "which this version does not read; resume with the expkit version that wrote it, or start a new run"
        )
    return None


def _verify(path: Path) -> CheckpointInfo:
    mpath = path / MANIFEST
    old = _old_format(path)
    if old is not None:
        raise InputError(old, path=path)
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
        and manifest.get("format") == FORMAT
        and isinstance(manifest.get("meta"), dict)
        and all(isinstance(w, dict) and {"bytes", "sha256"} <= set(w) for w in files.values())
    ):
        raise InputError(
            f"manifest.json is not an expkit checkpoint manifest of format {FORMAT} (format, meta, files with "
            "bytes and sha256)",
            path=mpath,
        )
    for fname, want in files.items():
        f = path / fname
        if not f.resolve().is_relative_to(path.resolve()):
            raise InputError(f"manifest.json names a file outside the checkpoint: {fname!r}", path=mpath)
        size = f.stat().st_size if f.is_file() else None
        if size != want["bytes"]:
            raise InputError(
                f"{fname} has {size} bytes, the manifest says {want['bytes']}: the file is truncated or was replaced",
                path=f,
            )
        if _sha256(f) != want["sha256"]:
            raise InputError(f"{fname} does not match its sha256 in the manifest: the file is corrupt", path=f)
    return CheckpointInfo(path=path, name=path.name, meta=manifest["meta"], files=tuple(files))


def _previous_good(path: Path) -> Path | None:
    for other in reversed(find_checkpoints(path.parent)):
        if other != path and other.name < path.name:
            try:
                _verify(other)
                return other
            except InputError:
                continue
    return None


def read_checkpoint(path: str | os.PathLike[str]) -> CheckpointInfo:
    """Verify the checkpoint at ``path`` (every file's size and sha256) and describe it; no tensor is loaded.

    Raises:
        InputError: no checkpoint there, an earlier format (the message says how to read it), a missing,
            truncated or corrupt file (the hint names the newest earlier checkpoint that verifies).
    """
    p = Path(path)
    try:
        return _verify(p)
    except InputError as exc:
        prev = _previous_good(p) if p.parent.is_dir() else None
        hint = f"the previous good checkpoint is kept: use {prev}" if prev else "no earlier good checkpoint"
        raise InputError(exc.message, hint=hint) from exc


def load_checkpoint_state(info: CheckpointInfo, *, device: str = "cpu") -> dict[str, Any]:
    """The state a verified checkpoint holds, as one dict (tensor dicts rebuilt), read with weights_only=True.

    Raises:
        InputError: a file that safetensors or ``torch.load(weights_only=True)`` refuses (named).
    """
    import pickle

    import torch
    from safetensors.torch import load_file

    state: dict[str, Any] = {}
    if STATE_FILE in info.files:
        try:
            # weights_only=True: tensors and plain containers only; a pickle that would run code is refused
            state.update(torch.load(info.path / STATE_FILE, weights_only=True, map_location=device))
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise InputError(
                f"refused to load the state ({type(exc).__name__}: {first})",
                path=info.path / STATE_FILE,
                hint="only tensors and plain containers are read (torch.load weights_only=True); "
                "use a checkpoint written by expkit",
            ) from exc
    if TENSORS_FILE in info.files:
        try:
            loaded = load_file(str(info.path / TENSORS_FILE), device=device)
        except Exception as exc:  # safetensors raises its own error types for a bad header
            raise InputError(
                f"cannot load the tensors: {type(exc).__name__}: {exc}", path=info.path / TENSORS_FILE
            ) from exc
        for k, v in loaded.items():
            top, sep, sub = k.partition(_SEP)
            if sep:
                state.setdefault(top, {})[sub] = v
            else:
                state[top] = v
    return state


def load_checkpoint(path: str | os.PathLike[str], *, device: str = "cpu") -> dict[str, Any]:
    """Verify and load what ``save_checkpoint`` wrote to ``path`` (``read_checkpoint`` then
    ``load_checkpoint_state``)."""
    return load_checkpoint_state(read_checkpoint(path), device=device)
