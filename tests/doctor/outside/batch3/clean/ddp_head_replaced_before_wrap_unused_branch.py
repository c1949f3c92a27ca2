"""DDP on gloo under torchrun: the output head is replaced *before* the model is wrapped (so DDP hooks the new
parameters), and an auxiliary branch runs only on every other step, with ``find_unused_parameters=True``.
Correct: every gradient is all-reduced and the replicas stay equal.

Source: https://github.com/pytorch/pytorch/issues/104336
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.head = nn.Linear(32, 5)
        self.aux = nn.Linear(32, 1)

    def forward(self, x, use_aux):
        h = self.body(x)
        return self.head(h), (self.aux(h) if use_aux else None)


g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(256, 10, generator=g), torch.randint(0, 3, (256,), generator=g))
net = Net()
net.head = nn.Linear(32, 3)  # the task has 3 classes: swap the head before wrapping
model = nn.parallel.DistributedDataParallel(net, find_unused_parameters=True)
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        logits, aux = model(x, use_aux=step % 2 == 0)
        loss = F.cross_entropy(logits, y) + (aux.pow(2).mean() * 0.01 if aux is not None else 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
dist.destroy_process_group()
