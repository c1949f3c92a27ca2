"""BEST-RQ style self-supervised speech pre-training with DDP on gloo (2 processes): a frozen random-projection
quantizer (random projection matrix + random codebook, no trainable parameters) turns masked log-mel frames into
discrete targets, and a small encoder learns to predict them. The script seeds each process with seed + rank (for
different masking per rank) BEFORE building the quantizer, and only the trainable encoder is wrapped in DDP, so the
quantizer is never broadcast: each rank builds a different codebook and projection. The two replicas are then pulled
towards incompatible target vocabularies while DDP averages their gradients, from the first step, with no error.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gloo_bestrq_quantizer_seeded_per_rank.py

Source: https://github.com/speechbrain/speechbrain/pull/2814
"""

import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
N_MEL, CODES, DIM = 20, 32, 8


class RandomProjectionQuantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("proj", torch.randn(N_MEL, DIM))
        self.register_buffer("codebook", F.normalize(torch.randn(CODES, DIM), dim=-1))

    @torch.no_grad()
    def forward(self, x):
        z = F.normalize(x @ self.proj, dim=-1)
        return (z @ self.codebook.T).argmax(-1)


torch.manual_seed(1234 + rank)  # BUG-LINE
quantizer = RandomProjectionQuantizer()
encoder = DDP(nn.Sequential(nn.Linear(N_MEL, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, CODES)))
opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
data_gen = torch.Generator().manual_seed(99)
feats = torch.randn(2, 64, 50, N_MEL, generator=data_gen)[rank]
for step in range(12):
    x = feats[torch.randint(0, 64, (8,))]
    targets = quantizer(x)
    mask = torch.rand(x.shape[:2]) < 0.4
    logits = encoder(x.masked_fill(mask[..., None], 0.0))
    loss = F.cross_entropy(logits[mask], targets[mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
cb = quantizer.codebook.clone()
dist.broadcast(cb, src=0)
if rank == 1:
    print(
        "quantizer codebooks identical across ranks:",
        bool(torch.equal(cb, quantizer.codebook)),
        "loss:",
        round(loss.item(), 4),
    )
del encoder
gc.collect()
dist.barrier()
dist.destroy_process_group()
