"""Will it be fast: the GPU registry, the roofline, measured roofs, and the profiler read into buckets."""

from expkit.perf.hardware import GPUSpec, find_gpu_for_device, get_gpu, list_gpus

__all__ = ["GPUSpec", "find_gpu_for_device", "get_gpu", "list_gpus"]
