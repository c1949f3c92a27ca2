"""The GPU registry: bf16 dense peak, memory bandwidth and memory size per GPU, each with its datasheet.

Below every stage (memory's fits verdict and perf's roofline both read it; neither imports the other).
The figures live in ``gpus.json`` beside this module (package data), one entry per GPU. Datasheets
often print the 2:4-sparsity figure first; ``datasheet_sparse`` records that, and the dense figure is
then the printed one halved. A test checks that rule for every entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from expkit.errors import UsageError

__all__ = ["GPUSpec", "find_gpu_for_device", "get_gpu", "list_gpus"]


@dataclass(frozen=True)
class GPUSpec:
    """One GPU as its datasheet states it.

    ``bf16_dense_tflops`` is the tensor-core bf16 peak without sparsity (TFLOP/s = 1e12 FLOP/s).
    ``bandwidth_gb_s`` is in GB/s (1e9 bytes/s). ``memory_gb`` is the size as the datasheet prints it
    ("80GB"); ``memory_bytes`` reads it as 1e9 bytes, a lower bound (an "80GB" HBM part holds 80 GiB,
    of which CUDA reports ~79 GiB usable). ``ridge_flop_per_byte`` = peak FLOP/s / bandwidth bytes/s
    (Williams, Waterman, Patterson, "Roofline", CACM 2009).
    """

    name: str
    aliases: tuple[str, ...]
    bf16_dense_tflops: float
    datasheet_tflops: float
    datasheet_sparse: bool
    bandwidth_gb_s: float
    memory_gb: float
    memory_bytes: int
    ridge_flop_per_byte: float
    source: str

    @property
    def peak_flop_s(self) -> float:
        """bf16 dense peak in FLOP/s."""
        return self.bf16_dense_tflops * 1e12

    @property
    def bandwidth_bytes_s(self) -> float:
        """Memory bandwidth in bytes/s."""
        return self.bandwidth_gb_s * 1e9


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@lru_cache(maxsize=1)
def _registry() -> tuple[GPUSpec, ...]:
    text = resources.files("expkit.hardware").joinpath("gpus.json").read_text(encoding="utf-8")
    specs = []
    for e in json.loads(text)["gpus"]:
        specs.append(
            GPUSpec(
                name=e["name"],
                aliases=tuple(e["aliases"]),
                bf16_dense_tflops=float(e["bf16_dense_tflops"]),
                datasheet_tflops=float(e["datasheet_tflops"]),
                datasheet_sparse=bool(e["datasheet_sparse"]),
                bandwidth_gb_s=float(e["bandwidth_gb_s"]),
                memory_gb=float(e["memory_gb"]),
                memory_bytes=int(e["memory_gb"] * 1e9),
                ridge_flop_per_byte=float(e["bf16_dense_tflops"]) * 1e12 / (float(e["bandwidth_gb_s"]) * 1e9),
                source=e["source"],
            )
        )
    return tuple(specs)


def list_gpus() -> tuple[GPUSpec, ...]:
    """Every GPU in the registry, in registry order.

    Example:
        >>> [g.name for g in list_gpus()][:2]
        ['A100 40GB SXM', 'A100 80GB SXM']
    """
    return _registry()


def get_gpu(name: str) -> GPUSpec:
    """The registry entry for ``name`` (its name or an alias; case, spaces and dashes ignored).

    Args:
        name: e.g. ``"H100"``, ``"h100-sxm"``, ``"A100 80GB SXM"``, ``"rtx4090"``.

    Returns:
        The GPUSpec.

    Raises:
        UsageError: an unknown name (lists the known names), or one that matches several entries
            (``a100``: 40GB SXM, 80GB SXM, 80GB PCIe; lists them).

    Example:
        >>> round(get_gpu("H100").ridge_flop_per_byte)
        295
    """
    if not isinstance(name, str) or not name.strip():
        raise UsageError(
            f"GPU name must be a non-empty string, got {name!r}",
            hint=f"known GPUs: {', '.join(g.name for g in _registry())}",
        )
    wanted = _key(name)
    for spec in _registry():
        if wanted == _key(spec.name) or wanted in (_key(a) for a in spec.aliases):
            return spec
    # a prefix of one entry only (``a100-40``) is that entry; of several (``a100``) is a question, not a guess
    partial = [spec for spec in _registry() if any(_key(a).startswith(wanted) for a in (spec.name, *spec.aliases))]
    if len(partial) == 1:
        return partial[0]
    if len(partial) > 1:
        raise UsageError(
            f"GPU {name!r} matches {len(partial)} registry entries: {', '.join(g.name for g in partial)}",
            hint=f"name one of them, e.g. {(partial[0].aliases or (partial[0].name,))[0]!r}",
        )
    raise UsageError(
        f"unknown GPU {name!r}",
        hint=f"known GPUs: {', '.join(g.name for g in _registry())} (see `expkit roofline gpus`)",
    )


def find_gpu_for_device(device_name: str) -> GPUSpec | None:
    """The registry entry matching a CUDA device name (``torch.cuda.get_device_name()``), or None.

    Example:
        >>> find_gpu_for_device("NVIDIA H100 80GB HBM3").name
        'H100 SXM'
    """
    key = _key(device_name.replace("NVIDIA", "").replace("GeForce", ""))
    if "h100" in key and "pcie" in key:
        return get_gpu("H100 PCIe")
    best: GPUSpec | None = None
    best_len = 0
    for spec in _registry():
        for alias in (spec.name, *spec.aliases):
            a = _key(alias)
            if a and a in key and len(a) > best_len:
                best, best_len = spec, len(a)
    return best
