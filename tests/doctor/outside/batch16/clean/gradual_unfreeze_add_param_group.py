"""Gradual unfreezing: the optimizer's param groups grow during training.

Unusual on purpose: a backbone is first pre-trained on a related task, then all
backbone blocks are frozen (requires_grad=False) and only a new head is in the
optimizer. Every two epochs the top-most still-frozen block is unfrozen and
appended to the SAME Adam optimizer with optimizer.add_param_group, with a
smaller, layer-specific learning rate (discriminative fine-tuning), so the
number of param groups goes 1 -> 2 -> 3 -> 4 while training continues.

Source: https://typevar.dev/en/docs/pytorch/generated/torch.optim.optimizer.add_param_group/torch.optim.Optimizer.add_param_group
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D, H = 24, 48
X = torch.randn(1200, D)
proj = torch.randn(D, 6)
y_pre = (X @ proj).argmax(1)
y_new = (X @ proj[:, :3] + 0.3 * X[:, :3]).argmax(1)

blocks = nn.ModuleList(
    [
        nn.Sequential(nn.Linear(D, H), nn.ReLU()),
        nn.Sequential(nn.Linear(H, H), nn.ReLU()),
        nn.Sequential(nn.Linear(H, H), nn.ReLU()),
    ]
)


def features(x):
    for b in blocks:
        x = b(x)
    return x


pre_head = nn.Linear(H, 6)
pre_opt = torch.optim.Adam(list(blocks.parameters()) + list(pre_head.parameters()), lr=3e-3)
for step in range(60):
    idx = torch.randint(0, 1000, (64,))
    loss = F.cross_entropy(pre_head(features(X[idx])), y_pre[idx])
    pre_opt.zero_grad()
    loss.backward()
    pre_opt.step()
print(f"pretrain loss {loss.item():.4f}")

for p in blocks.parameters():
    p.requires_grad_(False)
head = nn.Linear(H, 3)
base_lr = 3e-3
opt = torch.optim.Adam(head.parameters(), lr=base_lr)
to_unfreeze = [2, 1, 0]

for epoch in range(8):
    if epoch > 0 and epoch % 2 == 0 and to_unfreeze:
        k = to_unfreeze.pop(0)
        for p in blocks[k].parameters():
            p.requires_grad_(True)
        opt.add_param_group({"params": list(blocks[k].parameters()), "lr": base_lr / (2.6 ** (3 - k))})
    perm = torch.randperm(1000)
    for i in range(0, 1000, 100):
        idx = perm[i : i + 100]
        loss = F.cross_entropy(head(features(X[idx])), y_new[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = (head(features(X[1000:])).argmax(1) == y_new[1000:]).float().mean().item()
    print(f"epoch {epoch} groups {len(opt.param_groups)} loss {loss.item():.4f} val acc {acc:.3f}")
