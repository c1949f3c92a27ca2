"""Measured roofs: a GEMM and a streaming copy on this machine give its peak FLOP/s, bandwidth and ridge.

Both are best-of-repeats (a roof is the most the machine did, not the typical): GEMM FLOPs = 2 n^3
(n x n by n x n); copy bytes = 2 x size (read once + write once, the STREAM convention of McCalpin,
"Memory bandwidth and machine balance", 1995; write-allocate traffic is not counted).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from expkit.errors import UsageError

if TYPE_CHECKING:
    from expkit.perf.roofline import Roof

__all__ = [
    "CopyMeasurement",
    "GemmMeasurement",
    "MeasuredRoofs",
    "RoofQuery",
    "measure_copy_bandwidth",
    "measure_gemm",
    "measure_numpy_copy_bandwidth",
    "measure_roof_here",
    "measure_roofs",
]

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class GemmMeasurement:
    """``torch.matmul`` of two n x n matrices: best and median FLOP/s over ``repeats`` timed runs."""

    device: str
    dtype: str
    n: int
    repeats: int
    best_flop_s: float
    median_flop_s: float
    best_time_s: float


@dataclass(frozen=True)
class CopyMeasurement:
    """A copy of ``size_bytes``: best and median bandwidth (2 x size / time) over ``repeats`` runs."""

    device: str
    method: str
    size_bytes: int
    repeats: int
    best_bandwidth_bytes_s: float
    median_bandwidth_bytes_s: float


@dataclass(frozen=True)
class MeasuredRoofs:
    """This machine's roofs, measured. ``*_ratio`` fields compare with the reference run in the same
    call (``compare=True``): torch.matmul on a large square matrix, and a numpy copy; None when not run."""

    device: str
    dtype: str
    threads: int
    gemm: GemmMeasurement
    copy: CopyMeasurement
    peak_flop_s: float
    bandwidth_bytes_s: float
    ridge_flop_per_byte: float
    reference_gemm: GemmMeasurement | None = None
    reference_copy: CopyMeasurement | None = None
    gemm_vs_reference_ratio: float | None = None
    bandwidth_vs_reference_ratio: float | None = None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _check_device(device: str) -> None:
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but CUDA is not available here", hint="measure on the CPU")
    if not (device == "cpu" or device.startswith("cuda")):
        raise UsageError(f"device {device!r} is not 'cpu' or 'cuda[:N]'")


def _dtype(name: str):  # noqa: ANN202 - a torch.dtype
    import torch

    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in table:
        raise UsageError(f"dtype {name!r} is not one of {', '.join(table)}")
    return table[name]


def _gemm_runner(n: int, dtype: str, device: str) -> tuple[Callable[[], object], float]:
    """``torch.matmul`` of two preallocated n x n matrices into a preallocated output, and its FLOPs."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=_dtype(dtype))
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=_dtype(dtype))
    out = torch.empty_like(a)
    return (lambda: torch.matmul(a, b, out=out)), 2.0 * n**3


def _host_buffers(size_bytes: int):  # noqa: ANN202 - two float32 CPU tensors
    """Two float32 CPU tensors over numpy arrays: numpy asks Linux for transparent huge pages on large
    arrays (madvise), so TLB misses do not slow the stream; written once, so page faults are not timed."""
    import numpy as np
    import torch

    src = torch.from_numpy(np.ones(size_bytes // 4, dtype=np.float32))
    dst = torch.from_numpy(np.zeros(size_bytes // 4, dtype=np.float32))
    dst.fill_(0.0)
    return src, dst


def _copy_buffers(size_bytes: int, device: str):  # noqa: ANN202 - (src, dst) float32 tensors
    import torch

    if device == "cpu":
        return _host_buffers(size_bytes)
    src = torch.ones(size_bytes // 4, dtype=torch.float32, device=device)
    return src, torch.zeros_like(src)


def _best_copy(
    fns: list[Callable[[], object]], methods: list[str], times: list[list[float]], device: str, moved: float
) -> CopyMeasurement:
    """The copy kernel with the best single run (a roof is the most the machine did)."""
    i = min(range(len(fns)), key=lambda k: min(times[k]))
    return _copy_result(times[i], device=device, method=methods[i], moved=moved)


def _numpy_copy_runner(size_bytes: int) -> tuple[Callable[[], object], float]:
    import numpy as np

    src = np.ones(size_bytes // 4, dtype=np.float32)
    dst = np.zeros_like(src)
    return (lambda: np.copyto(dst, src)), 2.0 * src.nbytes


def _time_interleaved(fns: Sequence[Callable[[], object]], repeats: int, device: str) -> list[list[float]]:
    """One warm-up call of each, then ``repeats`` rounds calling each once in turn: a change of load
    on a shared machine hits every candidate alike instead of one of them."""
    for fn in fns:
        fn()
    _sync(device)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            _sync(device)
            times[i].append(time.perf_counter() - t0)
    return times


def _gemm_result(times: list[float], *, n: int, dtype: str, device: str, flops: float) -> GemmMeasurement:
    return GemmMeasurement(
        device=device,
        dtype=dtype,
        n=n,
        repeats=len(times),
        best_flop_s=flops / min(times),
        median_flop_s=flops / statistics.median(times),
        best_time_s=min(times),
    )


def _copy_result(times: list[float], *, device: str, method: str, moved: float) -> CopyMeasurement:
    return CopyMeasurement(
        device=device,
        method=method,
        size_bytes=int(moved // 2),
        repeats=len(times),
        best_bandwidth_bytes_s=moved / min(times),
        median_bandwidth_bytes_s=moved / statistics.median(times),
    )


def measure_gemm(*, n: int = 2048, dtype: str = "float32", device: str = "cpu", repeats: int = 5) -> GemmMeasurement:
    """Time ``torch.matmul`` on two n x n random matrices (one warm-up run first).

    Args:
        n: matrix side, >= 16.
        dtype: ``float32``, ``bfloat16`` or ``float16``.
        device: ``cpu`` or ``cuda[:N]``.
        repeats: timed runs, >= 1.

    Returns:
        GemmMeasurement with best and median FLOP/s (2 n^3 FLOPs per run).

    Example:
        >>> g = measure_gemm(n=256, repeats=2)
        >>> g.best_flop_s > 0
        True
    """
    if n < 16 or repeats < 1:
        raise UsageError(f"n={n} must be >= 16 and repeats={repeats} >= 1")
    _check_device(device)
    fn, flops = _gemm_runner(n, dtype, device)
    (times,) = _time_interleaved([fn], repeats, device)
    return _gemm_result(times, n=n, dtype=dtype, device=device, flops=flops)


def measure_copy_bandwidth(*, size_bytes: int = 256 * MIB, device: str = "cpu", repeats: int = 5) -> CopyMeasurement:
    """Time ``dst.copy_(src)`` of two preallocated float32 tensors of ``size_bytes`` each (on CPU also
    libc ``memcpy`` between torch buffers, alternating; the faster kernel's figure is kept).

    Args:
        size_bytes: bytes per buffer, >= 1 MiB; use well above the last-level cache (default 256 MiB).
        device: ``cpu`` or ``cuda[:N]``.
        repeats: timed runs after one warm-up, >= 1.

    Returns:
        CopyMeasurement; bandwidth = 2 x size_bytes / time (read + write, STREAM's convention).
    """
    if size_bytes < MIB or repeats < 1:
        raise UsageError(f"size_bytes={size_bytes} must be >= 1 MiB and repeats={repeats} >= 1")
    _check_device(device)
    fns, methods, moved = _copy_kernels(size_bytes, device)
    return _best_copy(fns, methods, _time_interleaved(fns, repeats, device), device, moved)


def _copy_kernels(size_bytes: int, device: str) -> tuple[list[Callable[[], object]], list[str], float]:
    """The copy kernels to race on ``device`` over the same two buffers: torch ``dst.copy_(src)``, and on
    CPU also libc ``memcpy`` (via ``ctypes.memmove``), which for large copies uses non-temporal stores
    that skip the read-for-ownership of the destination, as numpy's copy does. Returns the kernels,
    their names and the bytes each moves (read + write)."""
    import ctypes

    src, dst = _copy_buffers(size_bytes, device)
    nbytes = src.numel() * 4
    fns: list[Callable[[], object]] = [lambda: dst.copy_(src)]
    if device != "cpu":
        return fns, ["torch copy_"], 2.0 * nbytes
    fns.append(lambda: ctypes.memmove(dst.data_ptr(), src.data_ptr(), nbytes))
    return fns, ["torch copy_", "libc memcpy"], 2.0 * nbytes


def measure_numpy_copy_bandwidth(*, size_bytes: int = GIB, repeats: int = 3) -> CopyMeasurement:
    """The reference: ``numpy.copyto`` of a ``size_bytes`` float32 array (CPU), 2 x size / time."""
    if size_bytes < MIB or repeats < 1:
        raise UsageError(f"size_bytes={size_bytes} must be >= 1 MiB and repeats={repeats} >= 1")
    fn, moved = _numpy_copy_runner(size_bytes)
    (times,) = _time_interleaved([fn], repeats, "cpu")
    return _copy_result(times, device="cpu", method="numpy copyto", moved=moved)


@dataclass(frozen=True)
class RoofQuery:
    """What ``measure_roofs`` runs. ``device``: ``cpu`` or ``cuda[:N]``; ``dtype``: the GEMM's (None:
    float32 on CPU, most CPUs lack bf16 matrix units; bfloat16 on CUDA); ``gemm_n``: GEMM matrix side;
    ``copy_bytes``: copy buffer size; ``repeats``: timed runs of each; ``compare``: also run the references
    (torch.matmul at ``reference_n``; a numpy copy of ``reference_copy_bytes`` on CPU, a torch copy of that
    size on CUDA), alternating with ours run by run, and report the ratios (best over best); ``threads``:
    torch CPU threads (None: torch's default, all cores)."""

    device: str = "cpu"
    dtype: str | None = None
    gemm_n: int = 2048
    copy_bytes: int = 256 * MIB
    repeats: int = 5
    compare: bool = False
    reference_n: int = 4096
    reference_copy_bytes: int = GIB
    threads: int | None = None


def measure_roofs(query: RoofQuery | None = None) -> MeasuredRoofs:
    """Measure this machine's peak FLOP/s (GEMM), bandwidth (copy) and ridge.

    Args:
        query: what to run, whole (None: ``RoofQuery()``); e.g. ``measure_roofs(RoofQuery(device="cpu",
            repeats=3))``, variants with ``dataclasses.replace``.

    Returns:
        MeasuredRoofs.

    Raises:
        UsageError: a size or count out of range, or a device that is not here (names the field).
    """
    q = query or RoofQuery()
    if q.device == "auto":
        import torch

        q = replace(q, device="cuda" if torch.cuda.is_available() else "cpu")
    device, dtype, gemm_n, copy_bytes, repeats = q.device, q.dtype, q.gemm_n, q.copy_bytes, q.repeats
    compare, reference_n, reference_copy_bytes, threads = q.compare, q.reference_n, q.reference_copy_bytes, q.threads
    import torch

    from expkit.hardware.threads import torch_threads  # imports torch inside the function

    _check_device(device)
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    ref_gemm = ref_copy = None
    g_ratio = b_ratio = None
    if gemm_n < 16 or repeats < 1 or copy_bytes < MIB or reference_copy_bytes < MIB or reference_n < 16:
        raise UsageError(
            f"gemm_n={gemm_n}, reference_n={reference_n} must be >= 16, copy sizes >= 1 MiB and repeats={repeats} >= 1"
        )
    with torch_threads(threads) as used_threads:
        gemm_fn, gemm_flops = _gemm_runner(gemm_n, dtype, device)
        copy_fns, copy_methods, copy_moved = _copy_kernels(copy_bytes, device)
        if compare:  # ours and the reference alternate, round by round
            ref_fn, ref_flops = _gemm_runner(reference_n, dtype, device)
            g_times, r_times = _time_interleaved([gemm_fn, ref_fn], repeats, device)
            del ref_fn
            ref_gemm = _gemm_result(r_times, n=reference_n, dtype=dtype, device=device, flops=ref_flops)
            if device == "cpu":
                rcopy_fn, r_moved = _numpy_copy_runner(reference_copy_bytes)
                method = "numpy copyto"
            else:
                (rcopy_fn,), _, r_moved = _copy_kernels(reference_copy_bytes, device)
                method = "torch copy_"
            *c_times, rc_times = _time_interleaved([*copy_fns, rcopy_fn], repeats, device)
            del rcopy_fn
            ref_copy = _copy_result(rc_times, device=device, method=method, moved=r_moved)
        else:
            (g_times,) = _time_interleaved([gemm_fn], repeats, device)
            c_times = _time_interleaved(copy_fns, repeats, device)
        gemm = _gemm_result(g_times, n=gemm_n, dtype=dtype, device=device, flops=gemm_flops)
        copy = _best_copy(copy_fns, copy_methods, c_times, device, copy_moved)
        if compare:
            assert ref_gemm is not None and ref_copy is not None  # measured in the compare branch above
            g_ratio = gemm.best_flop_s / ref_gemm.best_flop_s
            b_ratio = copy.best_bandwidth_bytes_s / ref_copy.best_bandwidth_bytes_s
    name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu"
    return MeasuredRoofs(
        device=name,
        dtype=dtype,
        threads=used_threads,
        gemm=gemm,
        copy=copy,
        peak_flop_s=gemm.best_flop_s,
        bandwidth_bytes_s=copy.best_bandwidth_bytes_s,
        ridge_flop_per_byte=gemm.best_flop_s / copy.best_bandwidth_bytes_s,
        reference_gemm=ref_gemm,
        reference_copy=ref_copy,
        gemm_vs_reference_ratio=g_ratio,
        bandwidth_vs_reference_ratio=b_ratio,
    )


def measure_roof_here(*, quick: bool = True, threads: int | None = None) -> Roof:
    """This CPU's roof for a roofline estimate: a float32 GEMM (n=1024 quick, else 2048) and a 256 MiB copy,
    best of 3 each (``measure_roofs``), named and sourced as measured here."""
    from expkit.perf.roofline import Roof

    query = RoofQuery(device="cpu", gemm_n=1024 if quick else 2048, copy_bytes=256 * MIB, repeats=3, threads=threads)
    m = measure_roofs(query)
    return Roof(
        name="cpu (measured here)",
        peak_flop_s=m.peak_flop_s,
        bandwidth_bytes_s=m.bandwidth_bytes_s,
        source=f"measured: float32 GEMM n={m.gemm.n}, {m.copy.method} of {m.copy.size_bytes // MIB} MiB, "
        f"{m.threads} threads",
    )
