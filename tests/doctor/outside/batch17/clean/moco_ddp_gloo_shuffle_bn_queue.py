"""MoCo-v2-style contrastive pretraining with DDP on gloo (2 processes, CPU).

Clean program. Unusual on purpose: the key encoder is a momentum (EMA) copy of the query
encoder with requires_grad_(False), never wrapped in DDP and never given to the
optimizer; keys are computed under no_grad with "shuffle BN": key inputs are all-gathered,
permuted with a permutation broadcast from rank 0, encoded on a different rank's slice,
gathered again and un-shuffled, so BatchNorm statistics of queries and their positive
keys come from different sub-batches; the contrastive logits put the positive at column 0,
so the cross-entropy labels are all zeros by design; a queue of gathered keys from past
steps (identical on every rank) provides the negatives. The report asks how the
broadcast-based shuffle works under DDP; this follows the official design.

Source: https://github.com/facebookresearch/moco/issues/37
"""

import copy
import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

torch.manual_seed(0)
torch.set_num_threads(2)

WORLD, D_IN, DIM, QUEUE, K = 2, 24, 16, 256, 5
BATCH, STEPS, TAU, MOM = 32, 60, 0.2, 0.99


def encoder():
    return nn.Sequential(nn.Linear(D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, DIM))


@torch.no_grad()
def concat_all_gather(t):
    parts = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    centers = torch.randn(K, D_IN) * 2.0
    enc_q = encoder()
    enc_k = copy.deepcopy(enc_q).requires_grad_(False)
    model_q = DDP(enc_q)
    opt = torch.optim.SGD(model_q.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    queue = F.normalize(torch.randn(QUEUE, DIM), dim=1)
    ptr = 0
    gen = torch.Generator().manual_seed(100 + rank)

    def sample(n):
        y = torch.randint(0, K, (n,), generator=gen)
        return centers[y] + torch.randn(n, D_IN, generator=gen), y

    def augment(x):
        keep = (torch.rand(x.shape, generator=gen) > 0.2).float()
        return x * keep + 0.3 * torch.randn(x.shape, generator=gen)

    for step in range(STEPS):
        x, _ = sample(BATCH)
        xq, xk = augment(x), augment(x)
        q = F.normalize(model_q(xq), dim=1)

        with torch.no_grad():
            for pq, pk in zip(enc_q.parameters(), enc_k.parameters()):
                pk.mul_(MOM).add_(pq.detach(), alpha=1 - MOM)
            xk_all = concat_all_gather(xk)
            idx_shuffle = torch.randperm(xk_all.size(0))
            dist.broadcast(idx_shuffle, src=0)
            idx_unshuffle = torch.argsort(idx_shuffle)
            k_local = F.normalize(enc_k(xk_all[idx_shuffle.view(WORLD, -1)[rank]]), dim=1)
            k = concat_all_gather(k_local)[idx_unshuffle.view(WORLD, -1)[rank]]

        l_pos = (q * k).sum(dim=1, keepdim=True)
        l_neg = q @ queue.T
        logits = torch.cat([l_pos, l_neg], dim=1) / TAU
        labels = torch.zeros(logits.size(0), dtype=torch.long)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

        with torch.no_grad():
            keys = concat_all_gather(k)
            queue[ptr : ptr + keys.size(0)] = keys
            ptr = (ptr + keys.size(0)) % QUEUE
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= WORLD
        if rank == 0 and (step % 10 == 0 or step == STEPS - 1):
            print(f"step {step:3d}  loss {avg.item():.4f}  mean pos sim {l_pos.mean().item():.3f}")

    if rank == 0:
        enc_q.eval()
        with torch.no_grad():
            xb, yb = sample(400)
            f = F.normalize(enc_q(xb), dim=1)
            sim = f @ f.T - 2 * torch.eye(400)
            nn_acc = (yb[sim.argmax(1)] == yb).float().mean().item()
        print(f"1-NN accuracy of query features {nn_acc:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 3000)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)
