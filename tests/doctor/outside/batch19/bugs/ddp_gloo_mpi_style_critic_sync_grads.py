"""Hand-written gradient sync sums gradients across workers instead of averaging.

The program imitates an MPI-style data-parallel setup (as in HER / DDPG code
bases) on ``torch.distributed`` with the gloo backend: parameters are broadcast
from rank 0, each worker computes gradients on its own shard, and a helper
``sync_grads`` flattens the gradients, all-reduces them and writes them back.
The all-reduce uses SUM and the result is never divided by the world size, so
every worker steps with ``world_size`` times the mean gradient: the effective
learning rate silently depends on how many processes are launched (2x here), and
changing the number of workers changes the training dynamics without any error.

Source: https://github.com/TianhongDai/hindsight-experience-replay/issues/4
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

WORLD_SIZE = 2
ARGS = dict(lr=0.05, steps=60, batch=64, obs_dim=12, act_dim=3)


class Critic(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.fc1 = nn.Linear(obs_dim + act_dim, 64)
        self.fc2 = nn.Linear(64, 64)
        self.q = nn.Linear(64, 1)

    def forward(self, obs, act):
        h = F.relu(self.fc1(torch.cat([obs, act], -1)))
        return self.q(F.relu(self.fc2(h)))


def sync_networks(net):
    for p in net.parameters():
        dist.broadcast(p.data, src=0)


def sync_grads(net):
    grads = [p.grad for p in net.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)  # BUG-LINE
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def make_shard(rank, n=2048):
    g = torch.Generator().manual_seed(100 + rank)
    w = torch.Generator().manual_seed(7)
    obs = torch.randn(n, ARGS["obs_dim"], generator=g)
    act = torch.rand(n, ARGS["act_dim"], generator=g) * 2 - 1
    wo = torch.randn(ARGS["obs_dim"], 1, generator=w)
    wa = torch.randn(ARGS["act_dim"], 1, generator=w)
    target = torch.tanh(obs @ wo) + (act @ wa) ** 2 * 0.5
    return obs, act, target


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    torch.manual_seed(0 + rank)
    critic = Critic(ARGS["obs_dim"], ARGS["act_dim"])
    sync_networks(critic)
    opt = torch.optim.SGD(critic.parameters(), lr=ARGS["lr"], momentum=0.9)
    obs, act, target = make_shard(rank)
    for step in range(ARGS["steps"]):
        idx = torch.randint(0, obs.shape[0], (ARGS["batch"],))
        loss = F.mse_loss(critic(obs[idx], act[idx]), target[idx])
        opt.zero_grad()
        loss.backward()
        sync_grads(critic)
        opt.step()
        if rank == 0 and (step % 10 == 0 or step == ARGS["steps"] - 1):
            print(f"step {step:3d} critic loss {loss.item():.4f}", flush=True)
    with torch.no_grad():
        full = F.mse_loss(critic(obs, act), target).item()
    if rank == 0:
        print(f"final shard loss {full:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD_SIZE, join=True)
