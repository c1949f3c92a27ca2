"""clip_not_applied, optimizer_never_steps, schedule_on_idle_optimizer: each on a small in-process loop under
watch(), with its correct twin (which must stay silent)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _found(w, check):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == check]


def _clip_loop(where: str):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    X, y = torch.randn(96, 6), torch.randn(96, 1) * 20
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss = F.mse_loss(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32])
            opt.zero_grad()
            if where == "before_backward":
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip: before
            loss.backward()
            if where == "between":
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if where == "after_step":
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip: after
            elif where == "value_after_step":
                torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)  # clip by value: after
    return _found(w, "clip_not_applied")


def test_clip_after_step_or_before_backward_is_found_at_the_clip_line():
    (after,) = _clip_loop("after_step")
    assert after.line == _line_of("# clip: after", _clip_loop)
    (before,) = _clip_loop("before_backward")
    assert before.line == _line_of("# clip: before", _clip_loop)


def test_value_clipping_after_the_step_is_found_too():
    (f,) = _clip_loop("value_after_step")
    assert f.line == _line_of("# clip by value: after", _clip_loop) and "clip_grad_value_" in f.message


def test_clip_between_backward_and_step_is_clean():
    assert _clip_loop("between") == []


def _gan(step_d: bool):
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.Adam(G.parameters(), 1e-3), torch.optim.Adam(D.parameters(), 1e-3)
    real = torch.randn(64, 2) + 1
    with watch(G, opt_g, steps=2) as w:
        for i in range(3):
            fake = G(torch.randn(16, 4))
            ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
            d_loss = F.binary_cross_entropy_with_logits(D(real[16 * i : 16 * i + 16]), ones)
            d_loss = d_loss + F.binary_cross_entropy_with_logits(D(fake.detach()), zeros)
            opt_d.zero_grad()
            d_loss.backward()  # d backward
            if step_d:
                opt_d.step()
            g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    return _found(w, "optimizer_never_steps")


def test_discriminator_optimizer_zeroed_but_never_stepped_is_found_at_its_backward():
    (f,) = _gan(step_d=False)
    assert f.line == _line_of("# d backward", _gan)
    assert f.evidence["zero_grad_calls"] >= 2


def test_both_optimizers_stepped_is_clean():
    assert _gan(step_d=True) == []


class _TwoStepSam(torch.optim.Optimizer):
    """SAM written with first_step/second_step (the outside clean program batch17/clean/
    samformer_sam_two_pass_forecaster.py, from https://github.com/romilbert/samformer/issues/14): the wrapper is
    zeroed and never steps; its base optimizer steps the very same param_groups."""

    def __init__(self, params, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = torch.optim.SGD(self.param_groups, **kwargs)

    @torch.no_grad()
    def first_step(self):
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p]["e"] = g["rho"] * p.grad / (p.grad.norm() + 1e-12)
                p.add_(self.state[p]["e"])
        self.zero_grad()

    @torch.no_grad()
    def second_step(self):
        for g in self.param_groups:
            for p in g["params"]:
                p.sub_(self.state[p]["e"])
        self.base_optimizer.step()
        self.zero_grad()


def test_a_sam_wrapper_whose_base_optimizer_steps_its_groups_is_clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = _TwoStepSam(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(4):
            x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
            F.cross_entropy(model(x), y).backward()
            opt.first_step()
            F.cross_entropy(model(x), y).backward()
            opt.second_step()
    assert w.done and _found(w, "optimizer_never_steps") == []


def _rebuilt(rebuild_scheduler: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.AdamW(model[2].parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # rebuilt
    if rebuild_scheduler:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    X, y = torch.randn(96, 8), torch.randint(0, 3, (96,))
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss = F.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return w


def test_scheduler_left_on_a_replaced_optimizer_is_found():
    (f,) = _found(_rebuilt(rebuild_scheduler=False), "schedule_on_idle_optimizer")
    assert f.evidence["scheduler"] == "CosineAnnealingLR"
    assert f.evidence["training_lr"] == pytest.approx(1e-3)  # never scheduled: still the initial lr
    assert f.evidence["scheduled_lr"] < 1e-3


def test_scheduler_on_the_stepping_optimizer_is_clean():
    assert _found(_rebuilt(rebuild_scheduler=True), "schedule_on_idle_optimizer") == []


class _Lookahead(torch.optim.Optimizer):
    """An optimizer that steps another one inside its own step (Lookahead, ZeroRedundancyOptimizer's shard)."""

    def __init__(self, inner, k=2, alpha=0.5):
        self.inner, self.k, self.alpha, self.count = inner, k, alpha, 0
        super().__init__(inner.param_groups, {})
        self.slow = [p.detach().clone() for g in inner.param_groups for p in g["params"]]

    @torch.no_grad()
    def step(self, closure=None):
        self.inner.step()
        self.count += 1
        if self.count % self.k == 0:
            params = [p for g in self.param_groups for p in g["params"]]
            for s, p in zip(self.slow, params, strict=True):
                s.add_(p - s, alpha=self.alpha)
                p.copy_(s)


def test_an_optimizer_stepped_inside_another_ones_step_is_not_watched_as_the_programs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = _Lookahead(torch.optim.SGD(model.parameters(), lr=0.1))
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,))).backward()
            opt.step()
    assert w.done and not w.check_errors and w.findings == ()
    assert set(w.probe.steps_by_optimizer) == {id(opt)} and opt.inner not in w.probe.optimizers


def _clip_loop_on(model, params, opt, inf: bool = False):
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_norm=float("inf") if inf else 1.0)
            opt.step()
    return _found(w, "clip_not_applied")


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    model[0].weight.requires_grad_(False)
    return model


def _clip_filter():
    """The clip given the filter the optimizer's constructor already used up (empty the second time)."""
    model = _model()
    params = filter(lambda p: p.requires_grad, model.parameters())  # made: filter
    opt = torch.optim.SGD(params, lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
            opt.step()
    return _found(w, "clip_not_applied")


def _clip_generator():
    """The clip given model.parameters() kept from before the optimizer: a generator, empty the second time."""
    model = _model()
    params = model.parameters()  # made: generator
    opt = torch.optim.SGD(params, lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
    return _found(w, "clip_not_applied")


@pytest.mark.parametrize("run", [_clip_filter, _clip_generator])
def test_a_clip_given_a_used_up_iterator_is_found_where_the_iterator_was_made(run):
    (f,) = run()
    assert f.line == _line_of("# made: ", run) and f.evidence["parameters_with_gradients"] >= 3


def test_a_clip_given_a_list_or_measuring_only_is_clean():
    model = _model()
    params = [p for p in model.parameters() if p.requires_grad]
    assert _clip_loop_on(model, params, torch.optim.SGD(params, lr=0.1)) == []
    model = _model()
    gen = model.parameters()
    assert _clip_loop_on(model, gen, torch.optim.SGD(gen, lr=0.1), inf=True) == []  # max_norm=inf measures
