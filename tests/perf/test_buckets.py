"""Traces read into buckets: hand-built CPU and CUDA traces with shares derived by hand, names, errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from expkit.errors import InputError
from expkit.perf.buckets import bucket_of, bucket_trace
from expkit.perf.trace import (
    intersect_intervals,
    load_trace,
    parse_trace,
    self_times,
    subtract_intervals,
    total_length,
    union_intervals,
)


def X(name, cat, ts, dur, tid=1):  # noqa: N802 - a Chrome "complete" event
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def cpu_trace():
    """One 1000 us step: linear(addmm) 300 us, copy_ 100 us, SDPA 200 us, nothing for 400 us."""
    return {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
            X("ProfilerStep#1", "user_annotation", 0, 1000),
            X("aten::linear", "cpu_op", 100, 300),
            X("aten::addmm", "cpu_op", 110, 280),
            X("aten::copy_", "cpu_op", 500, 100),
            X("aten::scaled_dot_product_attention", "cpu_op", 600, 200),
            X("aten::_scaled_dot_product_flash_attention_for_cpu", "cpu_op", 610, 180),
            X("aten::mm", "cpu_op", 2000, 50),  # outside the step: not counted
        ]
    }


def cuda_trace():
    """Device window 0-1000 us. Kernels: gemm 0-300, flash 300-500, memcpy 600-700, nccl 800-850.
    Idle 500-600 (host in aten::mm: launch overhead), 700-800 (host in cudaStreamSynchronize 700-760:
    host wait 60, then 40 gap), 850-1000 (host outside ops: gap 150)."""
    return {
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
        "traceEvents": [
            X("ProfilerStep#7", "user_annotation", 0, 1000),
            X("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", "kernel", 0, 300, tid=7),
            X("flash_fwd_kernel<Flash_fwd_kernel_traits>", "kernel", 300, 200, tid=7),
            X("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 600, 100, tid=7),
            X("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "kernel", 800, 50, tid=8),
            X("aten::mm", "cpu_op", 480, 140),
            X("cudaLaunchKernel", "cuda_runtime", 490, 10),
            X("cudaStreamSynchronize", "cuda_runtime", 700, 60),
        ],
    }


def test_cpu_trace_buckets_by_hand():
    rep = bucket_trace(parse_trace(cpu_trace()))
    # self times: linear 20 + addmm 280 = 300 gemm; copy_ 100; SDPA 20 + flash 180 = 200; outside ops 400
    assert rep.timeline == "host" and rep.steps == 1 and rep.window_s == pytest.approx(1000e-6)
    assert rep.shares["gemm"] == pytest.approx(0.3)
    assert rep.shares["copy_cast"] == pytest.approx(0.1)
    assert rep.shares["attention"] == pytest.approx(0.2)
    assert rep.shares["overhead"] == pytest.approx(0.4)
    assert rep.shares["idle"] == 0.0 and rep.dominant == "overhead"
    assert sum(rep.shares.values()) == pytest.approx(1.0)
    assert "launch/Python overhead is 40%" in rep.verdict and "GEMM at 30%" in rep.verdict


def test_cuda_trace_buckets_and_idle_split_by_hand():
    rep = bucket_trace(parse_trace(cuda_trace()))
    assert rep.timeline == "device" and (rep.rank, rep.world_size) == (3, 8)
    expected = {
        "gemm": 0.3,
        "attention": 0.2,
        "copy_cast": 0.1,
        "communication": 0.05,
        "overhead": 0.1,
        "idle": 0.25,
        "other_compute": 0.0,
    }
    assert rep.shares == pytest.approx(expected)
    assert rep.idle_host_wait_s == pytest.approx(60e-6) and rep.idle_gaps_s == pytest.approx(190e-6)
    assert rep.verdict.startswith("GEMM is 30% of device time")


def test_trace_without_profiler_step_uses_the_event_span_and_says_so():
    events = [e for e in cpu_trace()["traceEvents"] if e.get("name") != "ProfilerStep#1"]
    rep = bucket_trace(parse_trace(events))  # a bare list of events is a valid Chrome trace too
    assert rep.steps is None and rep.window_s == pytest.approx(1950e-6)  # 100 .. 2050 us
    assert any("no ProfilerStep" in n for n in rep.notes)


@pytest.mark.parametrize(
    "name, bucket",
    [
        ("aten::mm", "gemm"),
        ("aten::addmm", "gemm"),
        ("aten::bmm", "gemm"),
        ("sm90_xmma_gemm_bf16bf16", "gemm"),
        ("cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>", "gemm"),
        ("aten::scaled_dot_product_attention", "attention"),
        ("fmha_cutlassF_f32_aligned_64x64_rf_sm80", "attention"),
        ("aten::copy_", "copy_cast"),
        ("aten::to", "copy_cast"),
        ("aten::_to_copy", "copy_cast"),
        ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>", "copy_cast"),
        ("c10d::allreduce_", "communication"),
        ("record_param_comms", "communication"),
        ("aten::broadcast_tensors", "other_compute"),
        ("aten::add_", "other_compute"),
        ("aten::layer_norm", "other_compute"),
    ],
)
def test_names_go_to_their_bucket(name, bucket):
    assert bucket_of(name) == bucket


def test_self_time_subtracts_direct_children_only():
    tr = parse_trace({"traceEvents": [X("a", "cpu_op", 0, 100), X("b", "cpu_op", 10, 50), X("c", "cpu_op", 20, 10)]})
    got = {e.name: s for e, s in self_times(tr.host_ops, [(0, 1000)])}
    assert got == {"a": 50, "b": 40, "c": 10}


intervals = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(1, 200)).map(lambda t: (t[0], t[0] + t[1])), max_size=20
)


@given(xs=intervals, ys=intervals)
def test_interval_algebra(xs, ys):
    ux, uy = union_intervals(xs), union_intervals(ys)
    assert total_length(ux) <= sum(b - a for a, b in xs)
    # |x| = |x & y| + |x - y|
    assert total_length(ux) == total_length(intersect_intervals(ux, uy)) + total_length(subtract_intervals(ux, uy))


def test_not_json_names_the_line(tmp_path):
    p = tmp_path / "trace.json"
    p.write_text('{"traceEvents": [\n{"ph": "X",,}]}')
    with pytest.raises(InputError, match=r"trace.json:2:\d+: not JSON"):
        load_trace(p)


def test_trace_with_no_events_is_rejected(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}))
    with pytest.raises(InputError, match=r"empty.json: has no profiler events"):
        load_trace(p)
    p.write_text(json.dumps({"schemaVersion": 1}))
    with pytest.raises(InputError, match=r"no 'traceEvents' list"):
        load_trace(p)
