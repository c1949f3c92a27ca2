"""Augmentation RNG created once in the Dataset and copied into every DataLoader worker.

The dataset owns a numpy Generator seeded in __init__.  Each forked worker
receives an identical copy of that generator, so all workers apply exactly the
same "random" jitter sequence to their samples (and again every epoch).
Augmentation diversity collapses by a factor of num_workers without any error.
Source: https://github.com/wolny/pytorch-3dunet/issues/32
"""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class JitteredPoints(Dataset):
    def __init__(self):
        self.x = torch.randn(32, 4)
        self.y = self.x.sum(1, keepdim=True)
        self.rng = np.random.default_rng(0)  # BUG-LINE

    def __len__(self):
        return 32

    def __getitem__(self, i):
        jitter = self.rng.normal(0, 0.1, size=4).astype("float32")
        return self.x[i] + torch.from_numpy(jitter), self.y[i], torch.from_numpy(jitter)


loader = DataLoader(JitteredPoints(), batch_size=4, num_workers=2)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
seen = []
for step, (xb, yb, jit) in enumerate(loader):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
    seen.append(jit)
    if step == 5:
        break
dup = torch.allclose(seen[0], seen[1])
print(f"loss {loss.item():.4f} worker0/worker1 jitter identical={dup}")
