"""Implicit-feedback recommender: user vector = mean of history item embeddings, BPR loss.

Bug: histories are padded to a fixed length with PAD = 0 and the item embedding
uses padding_idx=PAD, but item ids are 0-based, so item 0 is a real (and the most
popular) item. Its embedding row is all zeros and never receives gradient; it is
also silently dropped from every user's history as if it were padding. Training
runs and BPR loss falls, but item 0 can never be ranked well. Same collision as
reported for a sequence recommender that pads with 0 while 0 is a movie id.

Source: https://github.com/rdevooght/sequence-based-recommendations/issues/18
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_ITEMS, N_USERS, HIST, DIM = 50, 200, 8, 16
PAD = 0  # BUG-LINE

# users belong to taste groups; item 0 is liked by everybody (most popular)
group = torch.randint(0, 5, (N_USERS,))
item_group = torch.arange(N_ITEMS) % 5


def sample_pos(users):
    own = group[users] + 5 * torch.randint(0, N_ITEMS // 5, users.shape)
    return torch.where(torch.rand(users.shape) < 0.3, torch.zeros_like(own), own)


histories = torch.full((N_USERS, HIST), PAD, dtype=torch.long)
for u in range(N_USERS):
    n = int(torch.randint(3, HIST + 1, (1,)))
    histories[u, :n] = sample_pos(torch.full((n,), u))


class HistRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.item = nn.Embedding(N_ITEMS, DIM, padding_idx=PAD)
        self.proj = nn.Linear(DIM, DIM)

    def user_vec(self, hist):
        mask = (hist != PAD).float().unsqueeze(-1)
        e = self.item(hist) * mask
        return self.proj(e.sum(1) / mask.sum(1).clamp(min=1.0))

    def forward(self, hist, items):
        return (self.user_vec(hist) * self.item(items)).sum(-1)


model = HistRec()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(150):
    users = torch.randint(0, N_USERS, (128,))
    pos = sample_pos(users)
    neg = torch.randint(0, N_ITEMS, (128,))
    h = histories[users]
    loss = -F.logsigmoid(model(h, pos) - model(h, neg)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        print(f"step {step:3d} bpr {loss.item():.4f}")

with torch.no_grad():
    scores = model.user_vec(histories) @ model.item.weight.T
    rank0 = (scores > scores[:, :1]).sum(1).float().mean().item()
    print("mean rank of item 0 (popular):", rank0)
