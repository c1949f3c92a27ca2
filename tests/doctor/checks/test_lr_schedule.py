"""schedule_not_stepped: a schedule declared in optimizer steps that does not advance between two steps."""

from __future__ import annotations

import functools
import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _train(make_sched, *, per_step: bool):
    torch.manual_seed(0)
    X, y = torch.randn(128, 8), torch.randint(0, 3, (128,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
    model = nn.Linear(8, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        sched = make_sched(opt, len(loader))  # built under the watch: the probe's hook registers it
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            if per_step:
                sched.step()
        if not per_step:
            sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "schedule_not_stepped"]


def one_cycle(opt, batches):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10 * batches)


def _linear_warmup(step, *, num_warmup_steps, num_training_steps):
    # the shape of transformers.get_linear_schedule_with_warmup's lambda (optimization.py)
    if step < num_warmup_steps:
        return step / max(1, num_warmup_steps)
    return max(0.0, (num_training_steps - step) / max(1, num_training_steps - num_warmup_steps))


def hf_warmup(opt, batches):
    fn = functools.partial(_linear_warmup, num_warmup_steps=20, num_training_steps=10 * batches)
    return torch.optim.lr_scheduler.LambdaLR(opt, fn)


def test_one_cycle_stepped_per_epoch_is_found_with_the_lr_used():
    (f,) = _train(one_cycle, per_step=False)
    assert f.evidence["total_steps"] == 80 and f.evidence["scheduler_steps_between"] == 0
    assert f.evidence["lr_used_previous_step"] == f.evidence["lr_used_this_step"] == pytest.approx(0.1 / 25)


def test_warmup_lambda_declared_in_steps_names_the_intended_lr():
    (f,) = _train(hf_warmup, per_step=False)
    assert (f.evidence["warmup_steps"], f.evidence["total_steps"]) == (20, 80)
    assert f.evidence["lr_used_this_step"] == 0.0
    assert f.evidence["lr_intended_this_step"] == pytest.approx(0.1 * 1 / 20)  # base lr x lambda(1)


def test_stepped_per_step_or_a_per_epoch_kind_is_clean():
    assert _train(one_cycle, per_step=True) == []
    assert _train(hf_warmup, per_step=True) == []
    # StepLR may well be meant per epoch: not judged
    assert _train(lambda opt, _: torch.optim.lr_scheduler.StepLR(opt, step_size=3), per_step=False) == []


def _warmup_run(warmup: int, total: int):
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fn = functools.partial(_linear_warmup, num_warmup_steps=warmup, num_training_steps=total)
    with watch(model, opt, steps=2) as w:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, fn)  # built under the watch
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
            opt.step()
            sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "lr_never_reaches_set_value"]


def test_a_warmup_longer_than_the_planned_steps_is_found_with_its_peak():
    (f,) = _warmup_run(500, 12)
    # the linear warm-up's lambda peaks at step 11: 11 / 500 of the set lr
    assert f.evidence["peak_share"] == pytest.approx(11 / 500)
    assert f.evidence["planned_steps"] == 12 and f.file == __file__
    lines, first = inspect.getsourcelines(_warmup_run)  # named at the warm-up setting, not the scheduler's line
    assert f.line == first + next(i for i, text in enumerate(lines) if "num_warmup_steps=" in text)


def test_a_warmup_shorter_than_the_run_is_clean():
    assert _warmup_run(2, 12) == []
    assert _warmup_run(12, 24) == []  # peaks at 12/12 of the set lr


def _sched_run(make_sched, groups: int = 1):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    params = [{"params": m.parameters()} for m in model] if groups == 2 else model.parameters()
    opt = torch.optim.SGD(params, lr=0.01)
    with watch(model, opt, steps=2) as w:
        sched = make_sched(opt)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
            opt.step()
            sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "lr_never_reaches_set_value"]


def _absolute_lambda(opt):
    lr = 0.01
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr * (1 + 0.001 * s) ** -0.75)  # sched: absolute


def _absolute_per_group(opt):
    base = 3e-4  # each group's lambda returns the lr it means, decayed per step
    decay = [lambda s: base * 0.999**s, lambda s: 10 * base * 0.999**s]
    return torch.optim.lr_scheduler.LambdaLR(opt, decay)  # sched: per group


def test_a_lambda_returning_the_absolute_lr_is_found_at_the_scheduler():
    (f,) = _sched_run(_absolute_lambda)
    assert f.file == __file__ and f.line == _line_of("# sched: absolute", _absolute_lambda)
    assert f.evidence["peak_share"] == pytest.approx(0.01) and f.evidence["projected_steps"] == 10_000
    (g,) = _sched_run(_absolute_per_group, groups=2)
    assert g.line == _line_of("# sched: per group", _absolute_per_group)
    assert g.evidence["peak_share"] == pytest.approx(3e-3)


@pytest.mark.parametrize(
    "make, groups",
    [
        (lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 2000)), 1),  # warm-up
        (lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.1), 1),  # a constant factor of 10 %
        # the backbone held at 0 during a warm-up, then trained; the head at full lr
        (lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, [lambda s: 0.0 if s < 500 else 1.0, lambda s: 1.0]), 2),
        # one group frozen at 0 for good, the other reaches the set lr
        (lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, [lambda s: 0.0, lambda s: 0.5]), 2),
        (lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=100), 1),
        (lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100), 1),
        (lambda opt: torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=50), 1),
    ],
)
def test_warmups_frozen_groups_and_real_factors_are_clean(make, groups):
    assert _sched_run(make, groups) == []


def _cosine_loop(t_max, per_epoch=False):
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=3) as w:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max)  # the cosine
        loader = DataLoader(TensorDataset(torch.randn(320, 6), torch.randint(0, 3, (320,))), batch_size=16)
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if not per_epoch:
                sched.step()
            if i == 4:
                break
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "cosine_period_too_short"]


def test_a_cosine_period_in_epochs_stepped_per_batch_is_found_at_the_scheduler():
    # batch 5's dev Lightning program: T_max=max_epochs with interval "step"; here a plain loop, 20 batches an epoch
    (f,) = _cosine_loop(t_max=3)
    lines, first = inspect.getsourcelines(_cosine_loop)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the cosine" in t)
    assert f.evidence["T_max"] == 3 and f.evidence["planned_steps"] == 20


@pytest.mark.parametrize(("t_max", "per_epoch"), [(60, False), (12, False), (3, True)])
def test_a_cosine_period_in_steps_or_stepped_per_epoch_is_clean(t_max, per_epoch):
    assert _cosine_loop(t_max, per_epoch) == []


def _order(first: str):
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            if first == "scheduler":
                sched.step()  # the early step
            opt.zero_grad()
            F.mse_loss(model(torch.randn(16, 8)), torch.randn(16, 1)).backward()
            opt.step()
            if first == "optimizer":
                sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "schedule_steps_before_optimizer"]


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step()`")
def test_a_scheduler_stepped_before_the_first_optimizer_step_is_found_at_that_call():
    (f,) = _order("scheduler")
    assert f.line == _line_of("# the early step", _order)
    assert _order("optimizer") == []


def _hand_rate(how: str):
    """A rate written by hand into param_groups each step (lightning#17972: a warm-up after optimizer.step())."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    groups = [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.02}]
    opt = torch.optim.SGD(groups, lr=0.1)
    base = [g["lr"] for g in opt.param_groups]
    with watch(model, opt, steps=2) as w:
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1) if how == "step_lr" else None
        for step in range(3):
            x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
            scale = min(1.0, (step + 1) / 20)
            if how == "before":  # the fix: the warm-up's rate is set, then used
                for g, lr in zip(opt.param_groups, base, strict=True):
                    g["lr"] = scale * lr
            elif how == "from_zero":  # a warm-up whose first rate is 0 (HF's linear warm-up)
                for g, lr in zip(opt.param_groups, base, strict=True):
                    g["lr"] = step / 20 * lr
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()  # the step before the rate
            if how == "after":
                for g, lr in zip(opt.param_groups, base, strict=True):
                    g["lr"] = scale * lr
            elif how == "after_list":  # the same with a list of rates
                opt.param_groups[0]["lr"], opt.param_groups[1]["lr"] = [scale * lr for lr in base]
            elif how == "step_lr":
                sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "rate_drops_after_first_update"]


@pytest.mark.parametrize("how", ["after", "after_list"])
def test_a_rate_written_after_the_first_update_is_found_at_that_step(how):
    (f,) = _hand_rate(how)
    assert f.line == _line_of("opt.step()  # the step before the rate", _hand_rate)
    assert f.evidence["lr_first_update"] == [0.1, 0.02] and f.evidence["lr_second_update"][0] == pytest.approx(0.005)


@pytest.mark.parametrize("how", ["before", "from_zero", "step_lr", "constant"])
def test_warmups_set_before_the_step_zero_starts_and_schedulers_are_silent(how):
    assert _hand_rate(how) == []


# lr_schedule_zero ---------------------------------------------------------------------------------------------------


def _zero_run(make_sched, *, per_batch: bool):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    with watch(model, opt, steps=2) as w:
        sched = make_sched(opt)
        for _epoch in range(2):
            for _ in range(3):
                opt.zero_grad()
                F.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
                opt.step()
                if per_batch:
                    sched.step()  # SCHED-PER-BATCH
            if not per_batch:
                sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "lr_schedule_zero"]


def _zero_line(marker: str) -> int:
    lines, first = inspect.getsourcelines(_zero_run)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_an_epoch_schedule_stepped_per_batch_is_named_at_its_step_call():
    (f,) = _zero_run(lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1), per_batch=True)
    assert f.line == _zero_line("# SCHED-PER-BATCH") and "stepped here" in f.message
    (f,) = _zero_run(lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5), per_batch=True)
    assert f.line == _zero_line("# SCHED-PER-BATCH")


def test_a_zero_factor_is_named_where_the_schedule_was_built_and_a_slow_decay_is_clean():
    zero = lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.0)  # noqa: E731
    (f,) = _zero_run(zero, per_batch=False)
    assert f.line == zero.__code__.co_firstlineno  # the user's line that built it (here, the lambda)
    assert "stepped here" not in f.message
    assert _zero_run(lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1), per_batch=False) == []


def test_a_decay_stepped_only_after_the_watch_is_clean():
    # a StepLR stepped per epoch (here after the watched steps) runs out over 200 projected steps, not over the run's
    # epochs (the outside development program batch18/clean/lightning_manual_opt_timeseries_gan.py, from
    # https://github.com/Lightning-AI/pytorch-lightning/pull/6294): no step() seen within the watch, no finding
    assert _zero_run(lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5), per_batch=False) == []


def _linear_to_zero(total: int, batches: int | None):
    torch.manual_seed(0)
    X, y = torch.randn(8 * (batches or 4), 4), torch.randint(0, 2, (8 * (batches or 4),))
    data = torch.utils.data.TensorDataset(X, y)
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    with watch(model, opt, steps=2) as w:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / total))  # LINEAR-TO-ZERO
        batches_of = (
            torch.utils.data.DataLoader(data, batch_size=8) if batches else [(X[i::4], y[i::4]) for i in range(4)]
        )
        for xb, yb in batches_of:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
            sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "lr_schedule_zero"]


def test_a_linear_decay_to_zero_is_found_only_where_the_run_goes_on_past_its_end():
    # a decay written to end at the run's last step lands on 0 there (batch18/clean/lightning_forecaster_
    # accumulation_with_step_warmup.py, https://github.com/Lightning-AI/pytorch-lightning/issues/1476): with no plan
    # known, no finding; ending within the first epoch of the DataLoader, the run goes on at lr 0
    assert _linear_to_zero(total=50, batches=None) == []
    assert _linear_to_zero(total=50, batches=40) == []
    (f,) = _linear_to_zero(total=12, batches=40)
    assert f.line == _line_of("# LINEAR-TO-ZERO", _linear_to_zero) and f.evidence["zero_from_step"] == 12


def test_a_schedule_built_in_configure_optimizers_is_named_at_its_return():
    # how Lightning's configure_optimizers hands a per-step schedule over without 'interval': 'step' (the outside
    # development program batch16/bugs/lightning_onecycle_default_interval.py, from
    # https://github.com/pytorch/pytorch/issues/65417): the step count is said at the return, not at the build
    class Module(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 1)

        def forward(self, x):
            return self.net(x)

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.05)
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=100)
            return [opt], [sched]  # the return

    torch.manual_seed(0)
    model = Module()
    with watch(model, None, steps=2) as w:
        (opt,), _ = model.configure_optimizers()  # the framework steps the schedule per epoch: not in these steps
        for _ in range(3):
            loss = F.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = [f for f in w.findings if f.check == "schedule_not_stepped"]
    lines, first = inspect.getsourcelines(Module.configure_optimizers)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the return" in t)


def _epochs_of(make_sched, *, per_batch: bool = True, epochs: int = 2, batches: int = 14):
    """``epochs`` passes over a DataLoader of ``batches`` batches (one pass: no epoch loop around the batches)."""
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(8 * batches, 4), torch.randint(0, 2, (8 * batches,)))
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    with watch(model, opt, steps=2) as w:
        loader = torch.utils.data.DataLoader(data, batch_size=8)  # built while watched, as under expkit doctor
        sched = make_sched(opt)
        if epochs == 1:
            for xb, yb in loader:
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                opt.step()
                sched.step()
        for _epoch in range(epochs if epochs > 1 else 0):
            for xb, yb in loader:
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                opt.step()
                if per_batch:
                    sched.step()  # STEPPED-PER-BATCH
            if not per_batch:
                sched.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "lr_schedule_zero"]


def test_a_step_decay_written_in_epochs_stepped_per_batch_is_found_at_its_step_call():
    # the outside development program batch19/bugs/tabular_embedding_mlp_steplr.py (from https://runebook.dev/en/docs/
    # pytorch/generated/torch.optim.lr_scheduler.steplr/torch.optim.lr_scheduler.StepLR): StepLR(step_size=5,
    # gamma=0.5) meant as "halve every 5 epochs", stepped per batch of a 14-batch epoch, falls to 0.03 in two epochs
    (f,) = _epochs_of(lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5))
    assert f.line == _line_of("# STEPPED-PER-BATCH", _epochs_of)
    assert f.evidence["lr_share_after_two_epochs"] == pytest.approx(0.5**5)


@pytest.mark.parametrize(
    ("make", "per_batch", "epochs"),
    [
        (lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5), False, 2),  # stepped per epoch
        (lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5), True, 1),  # one pass, no epochs
        (lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.1), True, 2),  # in steps
        (lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.99), True, 2),  # a slow per-step decay
    ],
)
def test_epoch_schedules_stepped_per_epoch_and_step_schedules_are_clean(make, per_batch, epochs):
    assert _epochs_of(make, per_batch=per_batch, epochs=epochs) == []


def _hf_linear(opt, total):
    transformers = pytest.importorskip("transformers")
    return transformers.get_linear_schedule_with_warmup(
        opt,
        num_warmup_steps=1,
        num_training_steps=total,  # PLANNED-STEPS
    )


def test_a_plan_in_epochs_stepped_per_batch_is_found_at_its_argument():
    # the outside development program batch19/bugs/bert_classifier_linear_warmup_schedule_epochs.py (from
    # https://github.com/huggingface/transformers/issues/324): num_training_steps=epochs (here 2) on a 14-batch
    # DataLoader, stepped per batch: 0 from the third step of the first epoch on
    (f,) = _epochs_of(lambda opt: _hf_linear(opt, 2))
    assert f.line == _line_of("# PLANNED-STEPS", _hf_linear)
    assert f.evidence == {"planned_steps": 2, "batches_per_epoch": 14}
    assert _epochs_of(lambda opt: _hf_linear(opt, 28)) == []  # epochs x batches
    assert _epochs_of(lambda opt: _hf_linear(opt, 2), per_batch=False) == []  # stepped per epoch, as planned
    assert _epochs_of(lambda opt: _hf_linear(opt, 2), epochs=1) == []  # one pass, which may stop at its plan
