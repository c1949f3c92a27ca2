"""step_made_weights_nonfinite: the update itself wrote inf/NaN (finite weights and gradients before it)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _train(dtype, eps: float):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(dtype)
    with watch(steps=2) as w:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=eps)  # the optimizer's line
        for _ in range(3):
            x, y = torch.randn(32, 16, dtype=dtype), (0.01 * torch.randn(32, 1)).to(dtype)
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "step_made_weights_nonfinite"]


def test_adam_default_eps_on_float16_weights_is_named_at_the_optimizer():
    (f,) = _train(torch.float16, 1e-8)  # 1e-8 is 0 in float16: Adam divides by 0 where v underflowed
    source, start = inspect.getsourcelines(_train)
    assert f.line == start + next(i for i, t in enumerate(source) if "the optimizer's line" in t)
    assert f.evidence["dtypes"] == ["float16"] and f.evidence["tensors_made_nonfinite"] >= 1


def test_float32_weights_and_a_float16_safe_eps_are_clean():
    assert _train(torch.float32, 1e-8) == []
    assert _train(torch.float16, 1e-4) == []
