"""A profile read the way the field guide reads it: time sorted into seven buckets, and a verdict.

Buckets: GEMM, attention, copy/cast, other compute, communication, launch/Python overhead, device idle.
With device events (a CUDA trace) the timeline is the device's: kernel time by kernel name, and the
device's idle time split by what the host was doing meanwhile (inside an op or a launch: launch/Python
overhead; inside a synchronising call: idle, host wait; outside every op: idle, gaps for Python and data
loading). In a CPU-only trace the CPU is the device: op self time by op name, and the step time outside
every op is launch/Python overhead (idle is 0: the profiler cannot tell Python from waiting there).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from expkit.perf.trace import Trace, intersect_intervals, self_times, subtract_intervals, total_length, union_intervals

__all__ = ["BUCKETS", "BucketShare", "OpTime", "ProfileReport", "bucket_of", "bucket_trace"]

BUCKETS: tuple[str, ...] = ("gemm", "attention", "copy_cast", "other_compute", "communication", "overhead", "idle")
BUCKET_LABELS = {
    "gemm": "GEMM",
    "attention": "attention",
    "copy_cast": "copy/cast",
    "other_compute": "other compute",
    "communication": "communication",
    "overhead": "launch/Python overhead",
    "idle": "device idle",
}
# Op names (aten::...) and kernel names (cutlass, cublas, flash ...), first match wins.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "communication",
        re.compile(
            r"nccl|c10d::|gloo|record_param_comms|all_?reduce|all_?gather|reduce_?scatter|"
            r"all_?to_?all|^(send|recv|isend|irecv|broadcast)$",
            re.I,
        ),
    ),
    ("attention", re.compile(r"scaled_dot_product|attention|flash|fmha|sdpa", re.I)),
    (
        "gemm",
        re.compile(
            r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|_scaled_mm|addmv|mv|dot|linear|"
            r"convolution|_convolution|mkldnn_convolution|cudnn_convolution|_int_mm)$|"
            r"gemm|cutlass|cublas|xmma|wgmma|hmma|sgemm|matmul|gemv",
            re.I,
        ),
    ),
    (
        "copy_cast",
        re.compile(
            r"^aten::(copy_|to|_to_copy|clone|contiguous|_copy_from|_copy_from_and_resize)$|"
            r"memcpy|memset|direct_copy|copy_kernel|copy_device_to_device|CatArrayBatchedCopy",
            re.I,
        ),
    ),
)
_SYNC = re.compile(r"synchronize|^cudaMemcpy$|^aten::(item|_local_scalar_dense)$", re.I)
# bucket -> (what it means, what to do next)
_ACTIONS = {
    "gemm": (
        "you are compute-bound in matrix multiplies",
        "run them in bf16 on tensor cores (a GPU; on a CPU, one with AMX/bf16 units), raise the batch so each "
        "GEMM is large, or cut FLOPs (a smaller model, shorter sequences)",
    ),
    "attention": (
        "attention is the bottleneck",
        "use a fused kernel (torch.nn.functional.scaled_dot_product_attention, FlashAttention), shorter "
        "contexts, or packing instead of padding",
    ),
    "copy_cast": (
        "time goes to moving and converting data, not computing",
        "take .to()/.contiguous()/.cpu() out of the step, keep tensors on the device in one dtype, pin "
        "host memory and use non_blocking=True",
    ),
    "other_compute": (
        "small elementwise and normalisation ops (memory-bound) add up",
        "fuse them (torch.compile, AdamW(fused=True)) or raise the batch",
    ),
    "communication": (
        "the step waits on communication",
        "overlap it with compute (DDP buckets, FSDP prefetch), all-reduce less often (gradient "
        "accumulation), or use faster links",
    ),
    "overhead": (
        "the device waits for the host to issue work (Python, dispatcher, kernel launches)",
        "give each op more work (a larger batch), use torch.compile or CUDA graphs, remove tiny ops",
    ),
    "idle": (
        "the device sits idle",
        "remove synchronisations (.item(), .cpu(), printing tensors) from the step and feed data faster "
        "(DataLoader num_workers, pin_memory, prefetch)",
    ),
}


def bucket_of(name: str) -> str:
    """The compute bucket of an op or kernel name (``other_compute`` when no rule matches).

    Example:
        >>> bucket_of("aten::addmm"), bucket_of("ampere_bf16_s16816gemm_bf16_128x64"), bucket_of("aten::copy_")
        ('gemm', 'gemm', 'copy_cast')
    """
    for bucket, pattern in _RULES:
        if pattern.search(name):
            return bucket
    return "other_compute"


@dataclass(frozen=True)
class BucketShare:
    """One bucket: seconds within the window and share of the bucketed total (shares sum to 1)."""

    name: str
    label: str
    seconds: float
    share: float


@dataclass(frozen=True)
class OpTime:
    """An op or kernel name and its summed self time (seconds) in the window."""

    name: str
    bucket: str
    self_s: float
    calls: int


@dataclass(frozen=True)
class ProfileReport:
    """The buckets of a profile, the ops behind them and a verdict with the next action.

    ``timeline`` is ``device`` (a trace with kernels) or ``host`` (CPU only). ``window_s`` is the summed
    ProfilerStep time (or first-to-last event span when the trace has no steps). ``idle_host_wait_s`` +
    ``idle_gaps_s`` = the idle bucket. ``profiling_overhead_ratio`` (profiled step time / plain step
    time) is set by ``expkit.perf.profile`` only.
    """

    source: str
    timeline: str
    window_s: float
    steps: int | None
    rank: int | None
    world_size: int | None
    buckets: tuple[BucketShare, ...]
    shares: dict[str, float]
    dominant: str
    idle_host_wait_s: float
    idle_gaps_s: float
    top_ops: tuple[OpTime, ...]
    verdict: str
    notes: tuple[str, ...] = ()
    profiling_overhead_ratio: float | None = None
    trace_path: str | None = None


def _device_buckets(trace: Trace, window: list[tuple[float, float]]) -> tuple[dict[str, float], float, float, dict]:
    per_bucket: dict[str, float] = defaultdict(float)
    ops: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    busy = union_intervals((e.ts_us, e.end_us) for e in trace.device_events)
    busy_in = intersect_intervals(busy, window)
    for e in trace.device_events:
        inside = total_length(intersect_intervals([(e.ts_us, e.end_us)], window))
        if inside > 0:
            name = e.name if e.cat == "kernel" else f"[{e.cat}] {e.name}"
            b = "copy_cast" if e.cat != "kernel" else bucket_of(e.name)
            per_bucket[b] += inside
            ops[name][0] += inside
            ops[name][1] += 1
    kernel_sum = sum(per_bucket.values())
    scale = total_length(busy_in) / kernel_sum if kernel_sum else 0.0  # concurrent streams: count wall time once
    per_bucket = defaultdict(float, {k: v * scale for k, v in per_bucket.items()})
    idle = subtract_intervals(window, busy_in)
    sync = union_intervals((e.ts_us, e.end_us) for e in trace.runtime_calls + trace.host_ops if _SYNC.search(e.name))
    host = union_intervals((e.ts_us, e.end_us) for e in trace.runtime_calls + trace.host_ops)
    host_wait = total_length(intersect_intervals(idle, sync))
    idle_no_sync = subtract_intervals(idle, sync)
    per_bucket["overhead"] = total_length(intersect_intervals(idle_no_sync, host))
    gaps = total_length(subtract_intervals(idle_no_sync, host))
    per_bucket["idle"] = host_wait + gaps
    return per_bucket, host_wait, gaps, ops


def _host_buckets(trace: Trace, window: list[tuple[float, float]]) -> tuple[dict[str, float], dict]:
    per_bucket: dict[str, float] = defaultdict(float)
    ops: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for e, self_us in self_times(trace.host_ops, window):
        per_bucket[bucket_of(e.name)] += self_us
        ops[e.name][0] += self_us
        ops[e.name][1] += 1
    covered = union_intervals((e.ts_us, e.end_us) for e in trace.host_ops)
    per_bucket["overhead"] = total_length(subtract_intervals(window, covered))
    per_bucket["idle"] = 0.0
    return per_bucket, ops


def bucket_trace(trace: Trace, *, top: int = 8) -> ProfileReport:
    """Sort a trace's time into the seven buckets and write the verdict.

    Args:
        trace: from ``load_trace`` / ``parse_trace``.
        top: how many ops (by self time) to list.

    Returns:
        ProfileReport.
    """
    window = list(trace.window())
    notes: list[str] = []
    if trace.has_device:
        per_bucket, host_wait, gaps, ops = _device_buckets(trace, window)
        timeline = "device"
    else:
        per_bucket, ops = _host_buckets(trace, window)
        host_wait = gaps = 0.0
        timeline = "host"
        notes.append(
            "CPU-only trace: the CPU is the device; time outside every op counts as launch/Python "
            "overhead, and device idle is 0 (the profiler cannot tell Python from waiting here)"
        )
    if not trace.steps:
        notes.append("no ProfilerStep annotations: the window is the span from the first to the last event")
    total = sum(per_bucket.values()) or 1.0
    buckets = tuple(
        BucketShare(
            name=b, label=BUCKET_LABELS[b], seconds=per_bucket.get(b, 0.0) / 1e6, share=per_bucket.get(b, 0.0) / total
        )
        for b in BUCKETS
    )
    shares = {b.name: b.share for b in buckets}
    ranked = sorted(buckets, key=lambda b: -b.share)
    dominant = ranked[0].name
    top_ops = tuple(
        OpTime(
            name=n, bucket=bucket_of(n) if not n.startswith("[") else "copy_cast", self_s=v[0] / 1e6, calls=int(v[1])
        )
        for n, v in sorted(ops.items(), key=lambda kv: -kv[1][0])[:top]
    )
    return ProfileReport(
        source=trace.source,
        timeline=timeline,
        window_s=total_length(window) / 1e6,
        steps=len(trace.steps) or None,
        rank=trace.rank,
        world_size=trace.world_size,
        buckets=buckets,
        shares=shares,
        dominant=dominant,
        idle_host_wait_s=host_wait / 1e6,
        idle_gaps_s=gaps / 1e6,
        top_ops=top_ops,
        verdict=_verdict(ranked, top_ops, timeline, host_wait, gaps),
        notes=tuple(notes),
    )


def _verdict(
    ranked: list[BucketShare], top_ops: tuple[OpTime, ...], timeline: str, host_wait: float, gaps: float
) -> str:
    first, second = ranked[0], ranked[1]
    where = "of device time" if timeline == "device" else "of the CPU step time"
    ops = [o.name for o in top_ops if o.bucket == first.name][:2]
    lead = f"{first.label} is {first.share:.0%} {where}" + (f" (mostly {', '.join(ops)})" if ops else "")
    meaning, action = _ACTIONS[first.name]
    if first.name == "idle" and host_wait > gaps:
        meaning, action = (
            "the device waits while the host synchronises",
            "remove .item(), .cpu() and prints of tensors from the step",
        )
    elif first.name == "idle":
        meaning, action = (
            "the device waits for the host outside any op (Python, data loading)",
            "DataLoader num_workers, pin_memory, prefetch; move Python work off the step",
        )
    text = f"{lead}: {meaning}; {action}."
    if second.share >= 0.2:
        text += f" Next, {second.label} at {second.share:.0%}: {_ACTIONS[second.name][1]}."
    return text
