"""Checkpoints that load safely: tensors (state dicts) in safetensors, the rest (optimizer state, RNG
state, step) in a torch file that loads with ``weights_only=True``. Every file is written atomically.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from expkit.errors import InputError, UsageError

__all__ = ["capture_rng_state", "load_checkpoint", "restore_rng_state", "save_checkpoint"]

_SEP = "/"


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


def save_checkpoint(state: Mapping[str, Any], directory: str | os.PathLike[str], name: str) -> list[Path]:
    """Save ``state`` as ``NAME.safetensors`` (top-level tensors and tensor dicts such as
    ``model.state_dict()``) and ``NAME.pt`` (everything else, e.g. ``optimizer.state_dict()``, RNG state).

    Args:
        state: a mapping from str to tensors, tensor dicts, or weights_only-loadable values.
        directory: the checkpoints directory (created).
        name: file stem, validated like a run name.

    Returns:
        The files written.

    Example:
        >>> save_checkpoint({"model": net.state_dict(), "step": 20}, "ckpt", "step20")  # doctest: +SKIP
    """
    import torch
    from safetensors.torch import save_file

    from expkit.runs.store import validate_name

    validate_name(name, what="checkpoint name")
    if not isinstance(state, Mapping) or not all(isinstance(k, str) for k in state):
        raise UsageError("a checkpoint state must be a dict with str keys", hint="e.g. {'model': net.state_dict()}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
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
    written: list[Path] = []
    if tensors:
        seen: set[tuple[int, int]] = set()
        flat: dict[str, Any] = {}
        for k, v in tensors.items():
            v = v.detach()
            ident = (v.untyped_storage().data_ptr(), v.storage_offset()) if v.numel() else (id(v), 0)
            # safetensors refuses shared storage (tied weights): store each copy on its own
            flat[k] = v.clone().contiguous() if ident in seen or not v.is_contiguous() else v
            seen.add(ident)
        path = out / f"{name}.safetensors"
        tmp = out / f".{name}.safetensors.tmp"
        save_file({k: v.cpu() for k, v in flat.items()}, str(tmp), metadata={"expkit_keys": ",".join(tensors)})
        os.replace(tmp, path)
        written.append(path)
    if rest:
        path = out / f"{name}.pt"
        tmp = out / f".{name}.pt.tmp"
        torch.save(rest, tmp)
        try:
            torch.load(tmp, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - we name the refusal, the user fixes the state
            tmp.unlink()
            raise UsageError(
                f"checkpoint {name!r} holds values torch.load(weights_only=True) refuses: {exc}",
                hint="keep tensors, numbers, strings, lists and dicts (use capture_rng_state() for RNG)",
            ) from None
        os.replace(tmp, path)
        written.append(path)
    return written


def load_checkpoint(directory: str | os.PathLike[str], name: str, *, device: str = "cpu") -> dict[str, Any]:
    """Load what ``save_checkpoint`` wrote, as one dict (tensor dicts rebuilt), ``weights_only=True``.

    Raises:
        InputError: no checkpoint ``name`` in ``directory``.
    """
    import torch
    from safetensors.torch import load_file

    d = Path(directory)
    st, pt = d / f"{name}.safetensors", d / f"{name}.pt"
    if not st.exists() and not pt.exists():
        raise InputError(f"no checkpoint {name!r}", path=d, hint="list the directory for the names saved")
    state: dict[str, Any] = {}
    if pt.exists():
        state.update(torch.load(pt, weights_only=True, map_location=device))
    if st.exists():
        for k, v in load_file(str(st), device=device).items():
            top, sep, sub = k.partition(_SEP)
            if sep:
                state.setdefault(top, {})[sub] = v
            else:
                state[top] = v
    return state
