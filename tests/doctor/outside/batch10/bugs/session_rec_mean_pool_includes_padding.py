"""Next-item recommendation from a user's recent history: item ids are embedded, histories of different lengths
are right-padded with id 0 into a (B, L) tensor, the history embedding is the mean of the item embeddings,
and the score for each candidate item is a dot product. The mean is taken over all L positions with
.mean(dim=1) instead of over the valid positions, so the (trainable) padding embedding is averaged into every
user vector and short histories are dominated by padding. All shapes are valid and nothing warns; the padding
row is simply learned as a bias shared by everybody.
Source: https://github.com/dmlc/gluon-nlp/issues/480
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
N_ITEMS, G, L, D = 400, 8, 20, 32
item_genre = torch.randint(0, G, (N_ITEMS + 1,))


def make_batch(n):
    genre = torch.randint(0, G, (n,))
    lengths = torch.randint(2, L + 1, (n,))
    hist = torch.zeros(n, L, dtype=torch.long)
    target = torch.zeros(n, dtype=torch.long)
    for i in range(n):
        pool = (item_genre[1:] == genre[i]).nonzero().squeeze(1) + 1
        picks = pool[torch.randint(0, len(pool), (int(lengths[i]) + 1,))]
        hist[i, : lengths[i]] = picks[:-1]
        target[i] = picks[-1]
    return hist, lengths, target


class MeanPoolRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(N_ITEMS + 1, D)
        self.out = nn.Linear(D, D)

    def forward(self, hist, lengths):
        e = self.emb(hist)
        mask = (torch.arange(L)[None, :] < lengths[:, None]).float().unsqueeze(-1)
        user = e.mean(dim=1)  # BUG-LINE
        return self.out(user) @ self.emb.weight.T


model = MeanPoolRec()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    hist, lengths, target = make_batch(64)
    loss = F.cross_entropy(model(hist, lengths), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f}")
hist, lengths, target = make_batch(500)
with torch.no_grad():
    top = model(hist, lengths).topk(20, 1).indices
print("genre-hit@20:", round((item_genre[top] == item_genre[target][:, None]).float().mean().item(), 4))
