"""1-D CNN text classifier regularised with a penalty on the gradient of the loss with respect to
the word embeddings (a smoothness / robustness penalty), computed with torch.autograd.grad.

Unusual but correct: the looked-up embeddings are an intermediate tensor of the graph, so
torch.autograd.grad(loss, emb, create_graph=True) returns d(loss)/d(emb) while keeping the graph
of that gradient. The squared per-example gradient norm is added to the loss and a single
backward() then differentiates through the gradient (double backward), updating the embedding
table, the convolution and the head. Padding positions are masked out of the max-pool.

Source: https://github.com/pytorch/pytorch/issues/7714
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, E, BATCH, GP_WEIGHT = 0, 40, 16, 32, 32, 1.0


def make_batch(n):
    lengths = torch.randint(5, MAXLEN + 1, (n,))
    x = torch.randint(1, VOCAB, (n, MAXLEN))
    x = x.masked_fill(torch.arange(MAXLEN)[None] >= lengths[:, None], PAD)
    flip = torch.rand(n) < 0.5
    pos = torch.randint(0, 4, (n,))
    x[flip, pos[flip]] = 7
    x[flip, pos[flip] + 1] = 8
    y = ((x[:, :-1] == 7) & (x[:, 1:] == 8)).any(1).long()  # class 1: bigram (7, 8) occurs
    return x, y


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, E, padding_idx=PAD)
        self.conv = nn.Conv1d(E, 64, kernel_size=2)
        self.head = nn.Linear(64, 2)

    def classify(self, emb, x):
        h = F.relu(self.conv(emb.transpose(1, 2)))  # (B, 64, T-1)
        valid = (x[:, 1:] != PAD).unsqueeze(1)
        h = h.masked_fill(~valid, float("-inf")).amax(-1)
        return self.head(h)


model = TextCNN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    x, y = make_batch(BATCH)
    emb = model.emb(x)
    ce = F.cross_entropy(model.classify(emb, x), y)
    (g,) = torch.autograd.grad(ce, emb, create_graph=True)
    penalty = g.pow(2).sum(dim=(1, 2)).mean() * BATCH  # per-example squared norm
    loss = ce + GP_WEIGHT * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} ce {ce.item():.4f} grad-penalty {penalty.item():.5f}")

with torch.no_grad():
    x, y = make_batch(512)
    acc = (model.classify(model.emb(x), x).argmax(-1) == y).float().mean().item()
print(f"held-out accuracy {acc:.3f}")
