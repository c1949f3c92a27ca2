"""Fine-tuning starts from a checkpoint saved by a training wrapper, so every key carries a ``model.`` prefix.
The script loads it with ``load_state_dict(sd, strict=False)`` to silence the key errors; since no key matches,
nothing is loaded and the "fine-tuning" silently trains the randomly initialised network from scratch.

Source: https://github.com/pytorch/examples/issues/1029
"""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def make_net():
    return nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 3))


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = make_net()


with tempfile.TemporaryDirectory() as tmp:
    pretrained = Wrapper()
    path = os.path.join(tmp, "ckpt.pt")
    torch.save(pretrained.state_dict(), path)

    net = make_net()
    state = torch.load(path)
    net.load_state_dict(state, strict=False)  # BUG-LINE

opt = torch.optim.Adam(net.parameters(), lr=1e-3)
X, y = torch.randn(128, 12), torch.randint(0, 3, (128,))
for i in range(0, 128, 32):
    loss = F.cross_entropy(net(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
