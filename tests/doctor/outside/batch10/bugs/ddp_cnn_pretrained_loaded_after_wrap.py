"""Fine-tunes a small CNN image classifier on synthetic 16x16 images with DistributedDataParallel
on gloo. A "pretrained" backbone state dict (created and saved in a temp dir by a first stage) is
loaded only on rank 0 to avoid reading the file on every worker -- but the loading happens after
the model was wrapped in DDP. DDP broadcasts rank 0's parameters only once, at construction, so
rank 1 keeps its random initialization. Gradients are still averaged every step, but they are
applied to two different models, so the replicas never agree and rank 1 never had the pretrained
features. No error, no warning.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_cnn_pretrained_loaded_after_wrap.py

Source: https://github.com/facebookresearch/detr/issues/235
"""

import gc
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()


def make_net():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 4),
    )


tmp = tempfile.mkdtemp() if rank == 0 else None
box = [tmp]
dist.broadcast_object_list(box, src=0)
ckpt = os.path.join(box[0], "pretrained.pt")
if rank == 0:
    torch.manual_seed(123)
    torch.save(make_net().state_dict(), ckpt)
dist.barrier()

torch.manual_seed(rank)
model = DDP(make_net())
if rank == 0:
    model.module.load_state_dict(torch.load(ckpt))  # BUG-LINE

g = torch.Generator().manual_seed(0)
x = torch.randn(256, 1, 16, 16, generator=g)
y = torch.randint(0, 4, (256,), generator=g)
x[torch.arange(256), 0, y * 4, y * 4] += 3.0
data = TensorDataset(x, y)
loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, shuffle=True, seed=0))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step, (xb, yb) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0 and step % 2 == 0:
        print(f"step {step} loss {loss.item():.4f}")

w = model.module[0].weight.detach().clone()
both = [torch.zeros_like(w) for _ in range(world)]
dist.all_gather(both, w)
if rank == 0:
    print(f"max conv weight difference between ranks {(both[0] - both[1]).abs().max().item():.2e}")

del model
gc.collect()
dist.barrier()
if rank == 0:
    shutil.rmtree(box[0])
dist.destroy_process_group()
