"""class_weights_favour_majority: weights written to undo an imbalance but in the wrong order (the rare class's
inverse frequency given to the frequent one; a pos_weight of pos / neg instead of neg / pos), found where the
weights were made, with the correct twins that must stay silent: inverse frequencies in class order, weights on
balanced classes, a pos_weight of neg / pos. The class (a flipped inverse-frequency weight vector in a speech
emotion model) is from https://github.com/amanshenoy/multilogue-net/issues/21."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "class_weights_favour_majority"


def _data(rare: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    y = (torch.rand(256, generator=g) < rare).long()  # class 1 is `rare` of the rows
    return torch.randn(256, 6, generator=g) + y[:, None], y


def _train(criterion: nn.Module, rare: float = 0.1):
    torch.manual_seed(0)
    x, y = _data(rare)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss = criterion(model(x[64 * i : 64 * i + 64]), y[64 * i : 64 * i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def _flipped():
    weights = torch.tensor([1 / 0.1, 1 / 0.9])  # weights: class order reversed
    criterion = nn.CrossEntropyLoss(weight=weights)
    return _train(criterion)


def test_inverse_frequencies_in_the_wrong_order_are_found_where_the_weights_were_made():
    (f,) = _flipped()
    assert f.file == __file__ and f.line == _line_of("# weights: class order reversed", _flipped)
    assert f.evidence["frequent_class"] == 0 and f.evidence["rare_class"] == 1
    assert f.evidence["weight_ratio"] == pytest.approx(9.0)


def test_inverse_frequencies_in_class_order_and_weights_on_balanced_classes_are_silent():
    assert _train(nn.CrossEntropyLoss(weight=torch.tensor([1 / 0.9, 1 / 0.1]))) == []
    assert _train(nn.CrossEntropyLoss(weight=torch.tensor([3.0, 1.0])), rare=0.5) == []


def _binary(pos_weight: float):
    def criterion(logits, y):
        return F.binary_cross_entropy_with_logits(logits[:, 1], y.float(), pos_weight=torch.tensor(pos_weight))

    return _train(criterion)


def test_a_pos_weight_turned_over_is_found_and_neg_over_pos_is_silent():
    assert [f.evidence["rare_class"] for f in _binary(0.1 / 0.9)] == [1]
    assert _binary(0.9 / 0.1) == []
