"""DDP with find_unused_parameters=True for a model whose auxiliary head is used only on some steps.

Unusual: on odd steps the auxiliary head does not take part in the forward pass, so its
parameters get no gradient; DDP marks them ready anyway and the optimizer sees grad=None/0 for
them on those steps.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_find_unused_params_aux_head.py
Source: https://github.com/pytorch/pytorch/commit/78e71ce62700f3382deae3e24b14e76c0fba4673
"""

import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU())
        self.head = torch.nn.Linear(32, 3)
        self.aux = torch.nn.Linear(32, 1)

    def forward(self, x, use_aux):
        h = self.body(x)
        out = self.head(h)
        return out, (self.aux(h) if use_aux else None)


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = Net()
ddp = DDP(model, find_unused_parameters=True)
opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(rank)
for step in range(8):
    x = torch.randn(16, 10, generator=gen)
    y = torch.randint(0, 3, (16,), generator=gen)
    out, aux = ddp(x, use_aux=step % 2 == 0)
    loss = torch.nn.functional.cross_entropy(out, y)
    if aux is not None:
        loss = loss + 0.1 * aux.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
if rank == 0:
    print(f"loss {loss.item():.4f}")
del ddp, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()
