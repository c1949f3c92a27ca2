"""loss_arithmetic_broadcast: hand-written loss arithmetic whose operands, of different rank, broadcast against each
other over the batch axis, named at the op's line; written pairwise code and ordinary broadcasting stay silent."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.checks.broadcast_ops import crossed  # noqa: E402


class LogCosh(nn.Module):
    def forward(self, pred, target):
        return torch.log(torch.cosh(pred - target)).mean()  # LOGCOSH


def _dense_l1(pred, target):
    return torch.sub(pred, target).abs().mean()  # DENSE


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _run(loss_of, dense: bool = False):
    torch.manual_seed(0)
    model = nn.Conv2d(3, 1, 3, padding=1) if dense else nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            x = torch.randn(8, 3, 6, 6) if dense else torch.randn(8, 4)
            loss = loss_of(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "loss_arithmetic_broadcast"]


def test_a_prediction_n_by_1_minus_a_target_n_in_a_loss_module_is_named_at_its_line():
    (f,) = _run(lambda out, x: LogCosh()(out, x.sum(1)))  # target (N,), prediction (N, 1)
    assert f.line == _line("# LOGCOSH", LogCosh) and f.evidence["result_shape"] == [8, 8]


def test_a_dense_target_without_its_channel_axis_is_found():
    (f,) = _run(lambda out, x: _dense_l1(out, x[:, 0]), dense=True)  # (N, 1, H, W) against (N, H, W)
    assert f.line == _line("# DENSE", _dense_l1) and f.evidence["result_shape"] == [8, 8, 6, 6]


def test_matched_shapes_written_pairwise_code_and_ordinary_broadcasting_are_clean():
    assert _run(lambda out, x: LogCosh()(out, x.sum(1, keepdim=True))) == []
    assert _run(lambda out, x: _dense_l1(out, x[:, :1]), dense=True) == []
    # pairwise distances written with both axes explicit, a per-feature scale, a stabilised softmax
    assert _run(lambda out, x: (out[:, None] - out[None, :]).pow(2).mean()) == []
    assert _run(lambda out, x: ((out - x) * torch.ones(4)).pow(2).mean()) == []
    assert _run(lambda out, x: (out @ out.T - (out @ out.T).max(1, keepdim=True).values).exp().mean()) == []


def test_crossed_needs_each_operand_spread_along_the_others_batch_axis():
    assert crossed((8, 1), (8,), 8) and crossed((8,), (8, 1), 8)
    assert crossed((8, 1, 5, 5), (8, 5, 5), 8)
    assert not crossed((8, 4), (4,), 8)  # a per-feature vector
    assert not crossed((8, 1), (1, 8), 8)  # the same rank: written on purpose
    assert not crossed((3, 1), (3,), 8)  # not the batch


def test_two_recording_modes_closed_out_of_order_both_leave_the_stack():
    from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

    from expkit.doctor.checks.perturb import close_mode

    class Recording(TorchFunctionMode):
        on = True

    before = len(_get_current_function_mode_stack())
    first, second = Recording(), Recording()
    first.__enter__()
    second.__enter__()
    close_mode(first)  # not on top: switched off, kept
    assert len(_get_current_function_mode_stack()) == before + 2 and first.on is False
    close_mode(second)  # both leave
    assert len(_get_current_function_mode_stack()) == before


def _advantage_loss(out, x):
    returns = x.sum(1)  # (N,)
    advantage = returns - out.detach()  # ADVANTAGE: (N,) - (N, 1) -> (N, N), no grad on either side
    return -(advantage * out.squeeze(1)).mean()


def _pairwise_metric(out, x):
    returns = x.sum(1)
    spread = (returns - out.detach()).abs().mean()  # (N, N) but only printed, never in the loss
    del spread
    return (out.squeeze(1) - x.sum(1)).pow(2).mean()


def test_a_crossing_without_grad_that_feeds_the_loss_is_found_at_its_own_line():
    # an actor-critic advantage from detached values (outside development program
    # batch13/bugs/a2c_parallel_lineworld_advantage_broadcast.py): neither operand carries grad, the product does
    (f,) = _run(_advantage_loss)
    assert f.line == _line("# ADVANTAGE", _advantage_loss) and f.evidence["result_shape"] == [8, 8]


def test_a_crossing_without_grad_that_never_reaches_the_loss_is_silent():
    assert _run(_pairwise_metric) == []
