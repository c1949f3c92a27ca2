"""group_lrs_collapsed and plateau_mode_against_metric: the rate each param group steps with against the one it
was configured with, and a ReduceLROnPlateau whose mode runs against its metric; each with correct twins (a
LambdaLR over groups, a per-group warm-up that starts groups apart, one rate for all, min mode on the loss)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _found(w, name):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == name]


def _two_groups(how: str):
    torch.manual_seed(0)
    backbone, head = nn.Sequential(nn.Linear(16, 32), nn.ReLU()), nn.Linear(32, 3)
    with watch(steps=2) as w:
        lr_head = 1e-4 if how == "one_rate" else 1e-3
        opt = torch.optim.AdamW(
            [{"params": backbone.parameters(), "lr": 1e-4}, {"params": head.parameters(), "lr": lr_head}]
        )
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
        base = opt.param_groups[0]["lr"]
        for step in range(3):
            if how in ("collapse", "one_rate"):
                for g in opt.param_groups:
                    g["lr"] = base * min(1.0, (step + 1) / 4)  # one rate for every group
            elif how == "yolo_warmup":  # ultralytics/yolov5: the bias group falls from 0.1, the rest rise from 0
                for j, g in enumerate(opt.param_groups):
                    g["lr"] = np.interp(step, [0, 4], [0.1 if j == 0 else 0.0, g["initial_lr"]])
            loss = F.cross_entropy(head(backbone(torch.randn(8, 16))), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if how == "lambda":
                sched.step()
    return w


def test_a_warmup_that_writes_one_rate_to_every_group_is_found():
    # pattern of deepspeedai/DeepSpeed#8171: the first group's rate broadcast to all groups
    (f,) = _found(_two_groups("collapse"), "group_lrs_collapsed")
    assert f.evidence["configured_lrs"] == [1e-4, 1e-3]
    assert len(set(f.evidence["stepped_lrs"])) == 1


@pytest.mark.parametrize("how", ["lambda", "yolo_warmup", "one_rate"])
def test_schedules_that_keep_the_groups_apart_or_one_configured_rate_are_silent(how):
    assert _found(_two_groups(how), "group_lrs_collapsed") == []


def _plateau(mode: str, metric: str):
    torch.manual_seed(0)
    model = nn.Linear(10, 1)
    with watch(steps=2) as w:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, patience=0)  # the plateau
        for _ in range(3):
            x = torch.randn(32, 10)
            out = model(x)
            loss = F.mse_loss(out, x[:, :1])
            opt.zero_grad()
            loss.backward()
            opt.step()
            score = float((out.detach().sign() == x[:, :1].sign()).float().mean())
            sched.step(loss.item() if metric == "loss" else score)
    return w


def test_max_mode_stepped_with_the_loss_is_found_at_the_scheduler():
    # pattern of FunctionLab/selene#115: mode="max" left from an AUROC metric, stepped with the loss
    (f,) = _found(_plateau("max", "loss"), "plateau_mode_against_metric")
    assert f.line == _line_of("# the plateau", _plateau)


@pytest.mark.parametrize(("mode", "metric"), [("min", "loss"), ("max", "score")])
def test_a_mode_that_matches_its_metric_is_silent(mode, metric):
    assert _found(_plateau(mode, metric), "plateau_mode_against_metric") == []


class _Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.LayerNorm = nn.LayerNorm(8)  # HF BERT's name
        self.ln_f = nn.LayerNorm(8)  # GPT-2's and RoBERTa-head's style
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.ln_f(self.LayerNorm(self.proj(x))))


def _decay(rule: str):
    torch.manual_seed(0)
    model = _Blocks()
    with watch(model, steps=2) as w:
        if rule == "by_name":  # the recipe's name list (transformers#16908)
            nd = ["bias", "LayerNorm.weight"]  # the name list
            groups = [
                {
                    "params": [p for n, p in model.named_parameters() if not any(k in n for k in nd)],
                    "weight_decay": 0.1,
                },
                {"params": [p for n, p in model.named_parameters() if any(k in n for k in nd)], "weight_decay": 0.0},
            ]
        elif rule == "by_ndim":
            groups = [
                {"params": [p for p in model.parameters() if p.ndim >= 2], "weight_decay": 0.1},
                {"params": [p for p in model.parameters() if p.ndim < 2], "weight_decay": 0.0},
            ]
        else:  # one group, everything decayed alike
            groups = [{"params": list(model.parameters()), "weight_decay": 0.01}]
        opt = torch.optim.AdamW(groups, lr=1e-3)  # the optimizer
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w


def test_a_no_decay_rule_by_name_that_misses_one_norm_is_found_at_its_name_list():
    # the list is the first string in the optimizer's file that names a spared norm and no decayed one
    (f,) = _found(_decay("by_name"), "norm_weight_decayed_unevenly")
    assert f.evidence["decayed"] == ["ln_f.weight"] and f.line == _line_of("# the name list", _decay)


@pytest.mark.parametrize("rule", ["by_ndim", "all_alike"])
def test_no_decay_by_shape_or_decay_for_all_is_silent(rule):
    assert _found(_decay(rule), "norm_weight_decayed_unevenly") == []
