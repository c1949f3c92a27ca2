"""DDP on gloo: the model is wrapped in DistributedDataParallel, but the loss-bearing forward goes through
``model.module``, so DDP's reducer is never armed and backward all-reduces nothing: every rank steps on its own
gradients and the replicas drift apart without an error.

Source: https://github.com/jingyaogong/minimind/pull/854
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 12), torch.randint(0, 3, (256,)))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        logits = model.module(xb)  # BUG-LINE
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
del model, opt  # the model and its reducer go before gloo does (see the mp.spawn clean program)
import gc  # noqa: E402 - imported here, below the marked line, so the manifest's bug line holds

gc.collect()
dist.barrier()  # the ranks leave together (gloo's teardown race; see the mp.spawn clean program)
dist.destroy_process_group()
