"""peak_memory measures the work above a fresh interpreter's baseline, not the parent's size."""

from __future__ import annotations

import functools
import sys

import pytest

from expkit.data import ProbeFailed, peak_memory
from expkit.data.memory_probe import read_proc_status_bytes
from expkit.errors import UsageError

MiB = 2**20
needs_proc = pytest.mark.skipif(read_proc_status_bytes("VmHWM") is None, reason="needs Linux /proc")


@needs_proc
def test_a_known_allocation_is_measured_above_baseline_from_a_large_parent():
    ballast = bytearray(300 * MiB)  # the parent is large; ru_maxrss of a child could inherit this
    ballast[::4096] = b"x" * len(ballast[::4096])
    m = peak_memory(functools.partial(bytearray, 64 * MiB))
    assert m.method == "VmHWM"
    # bytearray(64 MiB) zero-fills, touching every page. Tolerance 1 MiB below (pages already resident in the
    # baseline, freed by earlier imports, are reused) and 8 MiB above (interpreter slack)
    assert 63 * MiB <= m.peak_above_baseline_bytes < 72 * MiB
    assert m.peak_rss_bytes == m.baseline_rss_bytes + m.peak_above_baseline_bytes
    assert m.peak_rss_bytes < 200 * MiB  # nowhere near the parent's 300 MiB
    assert 64 * MiB <= m.tracemalloc_peak_bytes < 65 * MiB
    del ballast


@needs_proc
def test_python_argv_and_other_commands():
    m = peak_memory([sys.executable, "-c", "x = bytearray(32 * 2**20)"], trace_python=False)
    assert 31 * MiB <= m.peak_above_baseline_bytes < 40 * MiB and m.tracemalloc_peak_bytes is None  # as above
    other = peak_memory(["sh", "-c", "sleep 0.1"], trace_python=False)
    assert other.method == "VmHWM sampled" and other.peak_above_baseline_bytes is None


def test_failures_carry_the_child_traceback():
    with pytest.raises(ProbeFailed, match="ZeroDivisionError") as info:
        peak_memory([sys.executable, "-c", "1/0"], trace_python=False)
    assert "Traceback (most recent call last)" in info.value.child_traceback
    with pytest.raises(UsageError, match="lambda"):
        peak_memory(lambda: 1)
    with pytest.raises(UsageError, match="empty argv"):
        peak_memory([])
