"""ddp_gradients_reduced_again: a hand-written gradient all-reduce left in a DDP program (batch 5's dev program,
written from a public report, runs it under torchrun with two ranks through benchmarks/bench_doctor.py). Here a
real one-rank gloo group and a real DistributedDataParallel; the world size the check reads is set to two
(with one rank an all-reduce changes nothing and is not reported)."""

from __future__ import annotations

import inspect
import socket

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.checks import ranks  # noqa: E402


@pytest.fixture
def one_rank_group():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _loop(reduce_again: bool):
    torch.manual_seed(0)
    with watch(steps=2) as w:
        model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(3):
            x = torch.randn(16, 6)
            loss = F.mse_loss(model(x), x.sum(1, keepdim=True))
            opt.zero_grad()
            loss.backward()
            if reduce_again:
                for p in model.parameters():
                    dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # reduced again
            else:
                dist.all_reduce(loss.detach())  # a metric, not a gradient
            opt.step()
    del model
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "ddp_gradients_reduced_again"]


def test_a_gradient_all_reduced_again_under_ddp_is_found_at_the_call(one_rank_group, monkeypatch):
    monkeypatch.setattr(ranks, "_world", lambda: (0, 2))
    (f,) = _loop(reduce_again=True)
    lines, first = inspect.getsourcelines(_loop)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# reduced again" in t)
    assert f.evidence["world_size"] == 2


def test_a_metric_all_reduced_and_a_single_rank_are_clean(one_rank_group, monkeypatch):
    assert _loop(reduce_again=True) == []  # one rank: nothing changes
    monkeypatch.setattr(ranks, "_world", lambda: (0, 2))
    assert _loop(reduce_again=False) == []
