"""Data-parallel training of a tiny GPT-2 (built from a config) on synthetic token sequences with
DistributedDataParallel on the gloo backend, two CPU processes each reading its own shard. The model is
wrapped in DDP, but the training step calls the underlying module (ddp_model.module) for the forward
pass, so DDP's autograd hooks are never armed and gradients are not all-reduced: each rank applies only
its own local gradient and the replicas drift apart from the first optimizer step. Nothing errors or
warns; each rank just reports its own loss.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gpt2_forward_bypasses_wrapper.py

Source: https://github.com/OpenTSLM/OpenTSLM/pull/49
"""

import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
V = 32
start = torch.randint(0, V, (512, 1))
data = (start + torch.randint(1, 4, (512, 1)) * torch.arange(12)) % V
shard = data[rank::world]

model = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_embd=32, n_layer=1, n_head=2, n_positions=16, bos_token_id=0, eos_token_id=0)
)
ddp_model = DDP(model)
opt = torch.optim.AdamW(ddp_model.parameters(), lr=2e-3)
g = torch.Generator().manual_seed(100 + rank)
for step in range(10):
    ids = shard[torch.randint(0, len(shard), (16,), generator=g)]
    out = ddp_model.module(input_ids=ids, labels=ids)  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if rank == 0 and step % 3 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

w = model.transformer.wte.weight.detach().clone()
other = w.clone()
dist.broadcast(other, src=0)
print(f"rank {rank}: max weight difference to rank 0 = {(w - other).abs().max().item():.6f}")

del ddp_model
gc.collect()
dist.barrier()
dist.destroy_process_group()
