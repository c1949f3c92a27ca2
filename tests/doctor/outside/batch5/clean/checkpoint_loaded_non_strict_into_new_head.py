"""Transfer to a new task: a backbone checkpoint is loaded with ``strict=False`` into a model whose classifier
has a different number of classes; the old head's keys are dropped beforehand and ``missing_keys`` is checked to
contain exactly the new head. Only the new head is missing, which is the point.

Source: https://pytorch.org/tutorials/beginner/saving_loading_models.html
"""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def build(n_cls):
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, n_cls))


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "pretrained.pt")
    torch.save(build(10).state_dict(), path)
    state = {k: v for k, v in torch.load(path).items() if not k.startswith("4.")}
    model = build(3)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["4.weight", "4.bias"] and not result.unexpected_keys
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(5):
    x, y = torch.randn(32, 16), torch.randint(0, 3, (32,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
