"""measure_step_contract observes train_step's fixed choices (C3.6) from outside, while it runs."""

from __future__ import annotations

from expkit.train import CharLMConfig
from expkit.train.step_contract import measure_step_contract


def test_step_contract_of_the_visible_loop():
    c = measure_step_contract(model_config=CharLMConfig(), batch_size=4, seq_len=32)
    assert c.logits_dtype == "torch.bfloat16"  # autocast was on for the forward ...
    assert c.loss_input_dtype == c.loss_dtype == "torch.float32"  # ... and the loss was computed in fp32
    assert c.grad_norm_before_clip > 2.0  # the fresh 840K model's first step: ~4.6, so the clip acts
    assert abs(c.grad_norm_at_step - 1.0) < 1e-5  # clip_grad_norm_(..., 1.0) scales to exactly 1
    assert c.ignored_positions == 4 * 16
    assert c.max_abs_grad_ignored == 0.0 and c.max_abs_grad_counted > 0
    assert c.grads_none_after_step


def test_step_contract_sees_a_clip_that_does_not_act():
    """The same probe reports the unclipped norm when the clip is above it: the measurement can fail."""
    c = measure_step_contract(model_config=CharLMConfig(), batch_size=4, seq_len=32, grad_clip=100.0)
    assert abs(c.grad_norm_at_step - c.grad_norm_before_clip) < 1e-3 * c.grad_norm_before_clip
    assert c.grad_norm_at_step > 1.0


def test_step_contract_labels_are_the_seeds_minus_100_not_the_loops_constant(monkeypatch):
    """A loop ignoring another label value meets the seed's -100 labels and fails, instead of the probe
    reusing the loop's own constant and agreeing with it."""
    import pytest

    from expkit.train import loop

    monkeypatch.setattr(loop, "IGNORE_INDEX", -1)
    with pytest.raises(IndexError, match="-100"):
        measure_step_contract(model_config=CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32))


def test_step_contract_sees_gradients_kept_when_zero_grad_does_not_set_none(monkeypatch):
    import torch

    original = torch.optim.Optimizer.zero_grad
    monkeypatch.setattr(torch.optim.Optimizer, "zero_grad", lambda self, set_to_none=True: original(self, False))
    c = measure_step_contract(model_config=CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32))
    assert c.grads_none_after_step is False


def test_step_contract_uses_the_loops_default_clip():
    from expkit.train import TrainConfig

    c = measure_step_contract(model_config=CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32))
    assert c.grad_clip == TrainConfig().grad_clip == 1.0  # seed C3.6: clip_grad_norm_(..., 1.0)
