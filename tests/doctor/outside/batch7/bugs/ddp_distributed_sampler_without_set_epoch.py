"""Training uses a DistributedSampler with shuffle=True but never calls
sampler.set_epoch(epoch). The sampler seeds its permutation with the epoch number,
so every epoch produces the identical ordering and shard assignment on each rank:
shuffling effectively happens only once and each rank sees the same fixed subset
of examples in the same order for the whole run.

doctor-command: torchrun --standalone --nproc-per-node 2 ddp_distributed_sampler_without_set_epoch.py

Source: https://github.com/NVIDIA/tacotron2/issues/241
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(48, 8)
y = (x[:, 0] > 0).long()
ds = torch.utils.data.TensorDataset(x, y)
sampler = DistributedSampler(ds, shuffle=True)
loader = torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(3):
    for xb, yb in loader:  # BUG-LINE
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
if dist.get_rank() == 0:
    print("loss", loss.item())
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()
