"""The simulated device capacity: live bytes follow frees; an allocation past the cap raises a real OOM."""

from __future__ import annotations

import pytest
import torch

from expkit.diagnose import parse_oom_message
from expkit.memory.capacity import capped_memory


def test_live_and_peak_bytes_follow_allocations_and_frees():
    with capped_memory(10**8) as cap:
        a = torch.zeros(1000, 250)  # 1,000,000 B
        b = a @ torch.ones(250, 250)  # + 250,000 B (the ones) + 1,000,000 B (the product)
        del b
        view = a[:10]  # a view: no new storage
        assert cap.live_bytes == 1_250_000 or cap.live_bytes == 1_000_000  # the ones may already be freed
    assert cap.peak_bytes == 2_250_000
    del view


def test_allocation_past_the_cap_raises_cuda_format_oom():
    with pytest.raises(torch.OutOfMemoryError) as err, capped_memory(3 * 2**20):
        keep = [torch.zeros(2**18) for _ in range(4)]  # 1 MiB each: the 4th passes 3 MiB
        del keep
    info = parse_oom_message(str(err.value))
    assert info is not None and info.requested_bytes == 2**20 and info.capacity_bytes == 3 * 2**20
