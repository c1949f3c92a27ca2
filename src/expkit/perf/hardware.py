"""The GPU registry, kept importable here for perf's callers: it lives in ``expkit.hardware`` (below every
stage, so the memory ledger's fits verdict reads it without importing perf)."""

from __future__ import annotations

from expkit.hardware import GPUSpec, find_gpu_for_device, get_gpu, list_gpus

__all__ = ["GPUSpec", "find_gpu_for_device", "get_gpu", "list_gpus"]
