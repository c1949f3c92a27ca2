"""torch_threads sets the intra-op thread count for a block and always puts the old count back."""

from __future__ import annotations

import pytest
import torch

from expkit.errors import UsageError
from expkit.hardware.threads import torch_threads


def test_sets_and_restores():
    before = torch.get_num_threads()
    with torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_none_leaves_the_count_but_restores_what_the_body_set():
    before = torch.get_num_threads()
    with torch_threads(None) as n:
        assert n == before
        torch.set_num_threads(1)
    assert torch.get_num_threads() == before


def test_restores_after_an_exception_and_refuses_zero():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"), torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with pytest.raises(UsageError, match=r"threads=0 must be in \[1, 4096\]"), torch_threads(0):
        pass
