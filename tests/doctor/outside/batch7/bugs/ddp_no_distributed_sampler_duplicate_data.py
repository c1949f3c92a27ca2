"""The training DataLoader is built with shuffle=False and no DistributedSampler,
so every DDP rank iterates over exactly the same samples in the same order. Each
all-reduced gradient is just the gradient of one rank's batch: using N processes
gives no more data per step than one process, and each epoch processes every
example N times.

doctor-command: torchrun --standalone --nproc-per-node 2 ddp_no_distributed_sampler_duplicate_data.py

Source: https://github.com/Shark-NLP/DiffuSeq/issues/37
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(64, 8)
y = x.sum(1, keepdim=True)
ds = torch.utils.data.TensorDataset(x, y)
loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=False)  # BUG-LINE
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step, (xb, yb) in enumerate(loader):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
    if step == 5:
        break
if dist.get_rank() == 0:
    print("loss", loss.item())
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()
