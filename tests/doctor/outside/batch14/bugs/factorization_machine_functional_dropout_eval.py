"""Attentional factorization machine for CTR prediction with dropout on attention scores.

The attention dropout is written as F.dropout(attn, p=0.3) without
training=self.training. F.dropout defaults to training=True, so model.eval()
does not disable it: validation AUC/loss is computed with random dropout
(and a random 1/(1-p) rescale) on every evaluation, making the validation
numbers noisy and biased, and model selection unreliable. No error appears.

Source: https://github.com/rixwew/pytorch-fm/issues/21
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

FIELD_DIMS = [20, 15, 10, 8]
EMB = 16


class AFM(nn.Module):
    def __init__(self):
        super().__init__()
        self.offsets = torch.tensor([0] + list(torch.tensor(FIELD_DIMS).cumsum(0)[:-1]))
        n = sum(FIELD_DIMS)
        self.emb = nn.Embedding(n, EMB)
        self.lin = nn.Embedding(n, 1)
        self.bias = nn.Parameter(torch.zeros(1))
        self.attn = nn.Sequential(nn.Linear(EMB, 16), nn.ReLU(), nn.Linear(16, 1))
        self.proj = nn.Linear(EMB, 1)

    def forward(self, x):
        x = x + self.offsets
        e = self.emb(x)
        i, j = torch.triu_indices(len(FIELD_DIMS), len(FIELD_DIMS), 1)
        inter = e[:, i] * e[:, j]
        attn_scores = torch.softmax(self.attn(inter), dim=1)
        attn_scores = F.dropout(attn_scores, p=0.3)  # BUG-LINE
        pooled = (attn_scores * inter).sum(dim=1)
        return (self.lin(x).sum(dim=1) + self.proj(pooled) + self.bias).squeeze(-1)


def make_data(n):
    cols = [torch.randint(0, d, (n,)) for d in FIELD_DIMS]
    x = torch.stack(cols, 1)
    logit = 0.8 * torch.cos(cols[0].float()) * torch.sin(cols[1].float()) + 0.3 * (cols[2] % 3 == 0).float() - 0.2
    y = (torch.rand(n) < torch.sigmoid(2 * logit)).float()
    return x, y


x_tr, y_tr = make_data(8000)
x_va, y_va = make_data(2000)
model = AFM()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)

for step in range(300):
    idx = torch.randint(0, x_tr.shape[0], (256,))
    loss = F.binary_cross_entropy_with_logits(model(x_tr[idx]), y_tr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 60 == 0 or step == 299:
        model.eval()
        with torch.no_grad():
            v1 = F.binary_cross_entropy_with_logits(model(x_va), y_va).item()
            v2 = F.binary_cross_entropy_with_logits(model(x_va), y_va).item()
        model.train()
        print(f"step {step:3d} train {loss.item():.4f} val(run1) {v1:.4f} val(run2) {v2:.4f}")
