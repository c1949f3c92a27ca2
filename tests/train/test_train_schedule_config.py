"""Warmup + cosine identities (hypothesis) and KEY=VALUE overrides."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.errors import UsageError
from expkit.train import CharLMConfig, TrainConfig, WarmupCosine, apply_overrides


@settings(max_examples=60, deadline=None)
@given(lr_max=st.floats(1e-5, 1.0), frac=st.floats(0.0, 1.0), warm=st.integers(0, 50), extra=st.integers(1, 500))
def test_schedule_stays_in_range_and_peaks_after_warmup(lr_max, frac, warm, extra):
    s = WarmupCosine(lr_max=lr_max, lr_min=lr_max * frac, warmup_steps=warm, max_steps=warm + extra)
    _, lrs = s.curve()
    assert all(min(lr_max * frac, lrs[0]) * (1 - 1e-12) <= lr <= lr_max * (1 + 1e-12) for lr in lrs)
    assert all(a <= b for a, b in pairwise(lrs[:warm]))  # warmup rises
    assert all(a >= b - 1e-15 for a, b in pairwise(lrs[warm:]))  # cosine falls
    if extra > 1:
        assert lrs[-1] == pytest.approx(lr_max * frac, rel=1e-9, abs=1e-15)


def test_schedule_golden_values():
    s = WarmupCosine(lr_max=1e-3, lr_min=1e-4, warmup_steps=10, max_steps=110)
    assert s.lr_at(0) == pytest.approx(1e-4)  # (0 + 1) / 10 of the peak
    assert s.lr_at(9) == pytest.approx(1e-3)
    # halfway through the 100 decay steps (p = 50/99): lr_min + (1 + cos(pi p)) / 2 (lr_max - lr_min)
    import math

    assert s.lr_at(60) == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 50 / 99)) * 9e-4)


def test_overrides_reach_the_right_config():
    m, t = apply_overrides(
        ["n_layer=2", "lr_max=1e-3", "check_first_loss=false", "max_steps=7"], CharLMConfig(), TrainConfig()
    )
    assert (m.n_layer, t.lr_max, t.check_first_loss, t.max_steps) == (2, 1e-3, False, 7)


def test_unknown_key_names_the_closest_valid_key():
    with pytest.raises(UsageError, match="no such config key") as exc:
        apply_overrides(["n_layers=2"], CharLMConfig(), TrainConfig())
    assert "n_layer" in exc.value.hint


def test_bad_value_type_is_named():
    with pytest.raises(UsageError, match=r"batch_size=big: not an integer|batch_size=big: not int"):
        apply_overrides(["batch_size=big"], CharLMConfig(), TrainConfig())


def test_invalid_model_shape_is_a_usage_error():
    with pytest.raises(UsageError, match="not divisible"):
        apply_overrides(["n_embd=30"], CharLMConfig(), TrainConfig())


@pytest.mark.parametrize(
    "item, says",
    [
        ("lr_max=abc", "config key lr_max=abc: not float"),
        ("lr_max", "config override 'lr_max' is not KEY=VALUE"),
        ("n_embd=30", "config overrides n_embd=30: "),
    ],
)
def test_override_errors_name_the_config_key_not_a_cli_flag(item, says):
    with pytest.raises(UsageError) as exc:
        apply_overrides([item], CharLMConfig(), TrainConfig())
    assert exc.value.message.startswith(says) and "--" not in str(exc.value)
