"""clip_before_unscale: clip_grad_norm_ on gradients still carrying GradScaler's loss scale (CPU fp16 autocast)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _amp_loop(*, unscale_first: bool, by_value: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    X, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    with watch(model, opt, steps=2) as w:
        for i in range(2):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32])
            scaler.scale(loss).backward()
            if unscale_first:
                scaler.unscale_(opt)
            if by_value:
                torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
            else:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
    assert w.done and not w.check_errors
    return [f for f in w.findings if f.check in ("clip_before_unscale", "missing_zero_grad")]


def test_clip_before_unscale_measures_the_scaled_norm():
    (f,) = _amp_loop(unscale_first=False)
    assert f.evidence["loss_scale"] == 65536.0  # GradScaler's default init_scale, 2**16
    # the measured norm is the scale times the real one (the evidence states both; rel 1e-5: the probe rounds
    # evidence to 6 decimals, and the unscaled norm is ~0.3)
    assert f.evidence["measured_grad_norm"] == pytest.approx(65536.0 * f.evidence["unscaled_grad_norm"], rel=1e-5)
    assert f.evidence["unscaled_grad_norm"] < 100 < f.evidence["measured_grad_norm"]


def test_unscale_then_clip_is_clean():
    assert _amp_loop(unscale_first=True) == []


def test_value_clipping_before_unscale_is_found_and_not_taken_for_a_missing_zero_grad():
    (f,) = _amp_loop(unscale_first=False, by_value=True)  # element-wise clipping: g is no multiple of what came in
    assert f.check == "clip_before_unscale" and f.evidence == {"loss_scale": 65536.0, "clip_value": 1.0}
    assert _amp_loop(unscale_first=True, by_value=True) == []
