"""The learning rate is recomputed every step from each rank's own data progress (tokens seen by *this*
process). Ranks see batches of different lengths, so from the first step they apply different learning rates
to the same all-reduced gradient, and the DDP replicas drift apart (DDP never re-syncs parameters after the
initial broadcast). Training runs normally on every rank.

Source: https://github.com/karpathy/nanochat/pull/857
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


class BagOfTokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50, 32)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens, offsets):
        return self.head(self.emb(tokens, offsets))


model = DDP(BagOfTokens())
base_lr, total_tokens = 0.05, 4000
opt = torch.optim.SGD(model.parameters(), lr=base_lr)
g = torch.Generator().manual_seed(11 + rank)
tokens_seen = 0
for _step in range(5):
    lengths = torch.randint(2, 40, (16,), generator=g)
    tokens = torch.randint(0, 50, (int(lengths.sum()),), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    labels = torch.randint(0, 4, (16,), generator=g)
    tokens_seen += int(lengths.sum())
    progress = tokens_seen / total_tokens  # BUG-LINE
    for group in opt.param_groups:
        group["lr"] = base_lr * max(0.0, 1.0 - progress)
    loss = F.cross_entropy(model(tokens, offsets), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
del model
dist.destroy_process_group()
