"""graph_kept_across_steps: a live tensor that still holds a graph made before the previous optimizer step,
found through the garbage collector and named at the line that made it (anomaly mode's creation stack)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _train(keep: str):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    X, y = torch.randn(64, 6), torch.randn(64, 1)
    running, kept, history = torch.tensor(0.0), [], {"loss": []}
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss = nn.functional.mse_loss(model(X[i * 16 : i * 16 + 16]), y[i * 16 : i * 16 + 16])
            if keep == "made_once" and i == 0:
                first = loss * 1  # noqa: F841 - a check made once, at the first step, kept to the end
            opt.zero_grad()
            loss.backward()
            opt.step()
            if keep == "running_tensor":
                running = running + loss  # the kept graph: this line
            elif keep == "list_of_tensors":
                kept.append(loss)  # kept in a list: this line
            elif keep == "dict_of_lists":
                history["loss"].append(loss)  # kept in a dict's list: this line
            elif keep == "last_step":
                last = loss  # noqa: F841 - held until the next assignment: one step's graph, not more
            else:
                kept.append(loss.item())
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "graph_kept_across_steps"]


def test_a_running_loss_kept_as_a_tensor_is_named_at_its_line():
    found = _train("running_tensor")
    assert len(found) == 1
    source, start = inspect.getsourcelines(_train)
    line = start + next(i for i, text in enumerate(source) if "the kept graph: this line" in text)
    assert found[0].line == line and found[0].file == __file__
    assert found[0].evidence["kept_tensors"] >= 1


@pytest.mark.parametrize(("keep", "marker"), [("list_of_tensors", "in a list"), ("dict_of_lists", "in a dict's list")])
def test_losses_kept_in_a_list_are_named_where_they_are_put_in(keep, marker):
    (f,) = _train(keep)
    source, start = inspect.getsourcelines(_train)
    assert f.line == start + next(i for i, text in enumerate(source) if f"kept {marker}: this line" in text)


def test_losses_kept_as_numbers_are_clean_and_anomaly_mode_is_restored():
    assert _train("numbers") == []
    assert not torch.is_anomaly_enabled()


def test_two_optimizers_whose_graph_lives_until_the_next_iteration_are_clean():
    # a GAN: the generator's loss of iteration 1 is alive when the discriminator takes its second step
    torch.manual_seed(0)
    G, D = nn.Linear(4, 2), nn.Linear(2, 1)
    opt_d, opt_g = torch.optim.Adam(D.parameters(), 1e-3), torch.optim.Adam(G.parameters(), 1e-3)
    bce = nn.functional.binary_cross_entropy_with_logits
    with watch(steps=2) as w:
        for _ in range(3):
            fake = G(torch.randn(8, 4))
            d_loss = bce(D(torch.randn(8, 2)), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = bce(D(fake), torch.ones(8, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    assert not w.check_errors, w.check_errors
    assert [f for f in w.findings if f.check == "graph_kept_across_steps"] == []


def test_the_programs_own_anomaly_mode_is_kept():
    torch.autograd.set_detect_anomaly(True, check_nan=True)
    try:
        _train("numbers")
        assert torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    finally:
        torch.autograd.set_detect_anomaly(False)


@pytest.mark.parametrize("keep", ["last_step", "made_once"])
def test_one_earlier_graph_left_in_a_variable_is_not_a_growing_graph(keep):
    # the development program batch14/clean/lbfgs_closure_full_batch_regression.py (`loss = opt.step(closure)`
    # holds the previous step's loss when the watch ends inside the next step) and
    # batch14/clean/gru_lm_grad_accumulation_normalized_by_token_count.py (a full-window loss made once at step 0)
    assert _train(keep) == []
