"""Iterative magnitude pruning with weight rewinding (lottery-ticket style).

Source: https://mlkatas.com/kata/82

The exercise describes one IMP round: train, prune the smallest-magnitude weights with
torch.nn.utils.prune.global_unstructured, then copy the saved initial values into
each pruned layer's weight_orig so the surviving connections restart from their
initialization. This program runs three such rounds. Unusual on purpose: the pruning
masks (weight_mask buffers) zero the gradient of pruned entries, so those
entries never change; weight_orig is overwritten under torch.no_grad(); and a fresh
optimizer is created at every round so that Adam moments from the previous
(denser) phase are discarded deliberately.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(1024, 20)
y = (X[:, :5].sum(1) > 0).long()
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
init_state = copy.deepcopy(model.state_dict())
layers = [model[0], model[2], model[4]]


def train(epochs):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        for idx in torch.randperm(1024).split(128):
            loss = F.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = (model(X).argmax(1) == y).float().mean().item()
    return loss.item(), acc


for rnd in range(4):
    loss, acc = train(6)
    total = sum(m.weight.numel() for m in layers)
    zeros = sum((m.weight == 0).sum().item() for m in layers)
    print(f"round {rnd} loss {loss:.4f} acc {acc:.3f} sparsity {zeros / total:.2f}")
    if rnd == 3:
        break
    prune.global_unstructured([(m, "weight") for m in layers], pruning_method=prune.L1Unstructured, amount=0.4)
    with torch.no_grad():
        for i, m in zip((0, 2, 4), layers):
            m.weight_orig.copy_(init_state[f"{i}.weight"])
            m.bias.copy_(init_state[f"{i}.bias"])
