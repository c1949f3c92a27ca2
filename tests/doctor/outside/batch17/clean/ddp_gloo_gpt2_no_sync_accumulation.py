"""Two-rank DDP (gloo, torchrun) training of a tiny GPT-2 with no_sync gradient accumulation.

# doctor-command: torchrun --standalone --nproc-per-node 2 {program}

Modelled on the report that a DistributedSampler needs set_epoch() each epoch: here
sampler.set_epoch(epoch) is called before iterating, so every epoch gets a fresh
permutation that is still identical across ranks. Unusual but intended: two
micro-batches per optimizer step, the first inside `model.no_sync()` so gradients
are only all-reduced on the last micro-batch; the loss is divided by the
accumulation count; the printed loss is all-reduced *after* detaching (logging only,
no gradient flows through it); only rank 0 prints.

Source: https://github.com/rosinality/stylegan2-pytorch/issues/319
"""

import contextlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

V, T, ACCUM, EPOCHS = 24, 12, 2, 3
g = torch.Generator().manual_seed(123)
succ = torch.randperm(V, generator=g)
starts = torch.randint(0, V, (256,), generator=g)
seqs = torch.empty(256, T, dtype=torch.long)
seqs[:, 0] = starts
for t in range(1, T):
    seqs[:, t] = succ[seqs[:, t - 1]]

cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
model = DDP(GPT2LMHeadModel(cfg))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

ds = TensorDataset(seqs)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    running, count = torch.zeros(()), 0
    for i, (x,) in enumerate(loader):
        last_micro = (i + 1) % ACCUM == 0
        ctx = contextlib.nullcontext() if last_micro else model.no_sync()
        with ctx:
            loss = model(input_ids=x, labels=x).loss / ACCUM
            loss.backward()
        if last_micro:
            opt.step()
            opt.zero_grad()
        running += loss.detach() * ACCUM
        count += 1
    mean_loss = running / count
    dist.all_reduce(mean_loss, op=dist.ReduceOp.SUM)
    if rank == 0:
        print(f"epoch {epoch} mean loss over ranks {mean_loss.item() / world:.4f}")

dist.destroy_process_group()
if rank == 0:
    print("done", os.environ.get("WORLD_SIZE"))
