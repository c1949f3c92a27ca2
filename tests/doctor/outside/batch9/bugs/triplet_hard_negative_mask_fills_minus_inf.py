"""Batch-hard triplet loss masks the diagonal with -inf in similarity space, so every hardest negative is +inf.

The diagonal (the positive pair) is filled with -inf before converting similarity to distance
(1 - sim), which turns it into +inf. torch.max over distances then always picks the diagonal
as the "hardest negative", so relu(pos - inf + margin) is zero for every sample: the loss is
0 and the encoder receives no gradient from the first step on.
Source: https://github.com/jinnnju/PaAno/issues/1
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
enc = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)

for _step in range(8):
    x = torch.randn(12, 16)
    anchor = F.normalize(enc(x), dim=1)
    pos = F.normalize(enc(x + 0.05 * torch.randn_like(x)), dim=1)
    sim = anchor @ pos.t()
    pos_dist = 1 - sim.diagonal()
    sim_masked = sim.clone()
    sim_masked.diagonal().fill_(-float("inf"))  # BUG-LINE
    neg_dist = 1 - sim_masked
    hard_neg, _ = torch.max(neg_dist, dim=1)
    loss = F.relu(pos_dist - hard_neg + 0.5).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final triplet loss {loss.item():.4f}")
