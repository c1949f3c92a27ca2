"""A script ported from hand-written data parallelism to DDP keeps its old gradient sync: after backward it
still all-reduces every gradient with SUM and never divides by the number of workers. DDP already averaged the
gradients, so every step uses world_size times the intended gradient (an effective learning-rate multiplier).

Source: https://github.com/srush/LLM-Training-Puzzles/issues/9
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
torch.manual_seed(rank + 1)
for _step in range(5):
    x = torch.randn(16, 10)
    y = x.sum(1, keepdim=True)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # BUG-LINE
    opt.step()
del model
dist.barrier()
dist.destroy_process_group()
