"""MoCo: the key encoder is not trained by backprop; its weights are an
exponential moving average of the query encoder, updated under no_grad after each
optimizer step, and its parameters have requires_grad=False on purpose. Keys are
computed under no_grad and a queue of past keys provides negatives. The frozen
second encoder and the no-grad weight copy are intentional.

Source: https://arxiv.org/abs/1911.05722
"""

import copy

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
q_enc = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 16))
k_enc = copy.deepcopy(q_enc)
k_enc.requires_grad_(False)
opt = torch.optim.SGD(q_enc.parameters(), lr=0.05, momentum=0.9)
queue = F.normalize(torch.randn(128, 16), dim=1)
m, tau = 0.99, 0.2
for _step in range(6):
    x = torch.randn(32, 20)
    q = F.normalize(q_enc(x + 0.1 * torch.randn_like(x)), dim=1)
    with torch.no_grad():
        k = F.normalize(k_enc(x + 0.1 * torch.randn_like(x)), dim=1)
    l_pos = (q * k).sum(1, keepdim=True)
    l_neg = q @ queue.t()
    logits = torch.cat([l_pos, l_neg], dim=1) / tau
    loss = F.cross_entropy(logits, torch.zeros(32, dtype=torch.long))
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pk, pq in zip(k_enc.parameters(), q_enc.parameters(), strict=False):
            pk.mul_(m).add_(pq, alpha=1 - m)
        queue = torch.cat([k, queue])[:128]
print("loss", loss.item())
