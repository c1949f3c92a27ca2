"""Adding a new branch to a pretrained model, freezing the original part through a zero-lr parameter group.

Unusual but correct: instead of requires_grad=False, the pretrained stem is
kept in the optimizer inside its own parameter group with lr=0.0 (and
weight_decay=0.0), the mmdet-style "lr_mult=0" trick from the source. With
SGD (momentum 0.9, weight decay 0 for these groups) an lr of 0 makes every
update exactly zero, so the stem stays bit-identical while gradients still
flow through it to the new branch. The stem has no BatchNorm, so no running
statistics can drift either. A check at the end verifies the stem is intact.

Source: https://github.com/open-mmlab/mmdetection3d/issues/754
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(16, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.old_head = nn.Linear(64, 4)
        self.new_branch = nn.Sequential(nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, x):
        h = self.stem(x)
        return self.old_head(h), self.new_branch(h).squeeze(-1)


x = torch.randn(4096, 16)
y_cls = (x[:, :4] @ torch.randn(4, 4)).argmax(-1)
y_reg = torch.tanh(x[:, 4] * x[:, 5]) + 0.5 * x[:, 6]

model = Model()
# "pretraining" of stem + old head
pre_opt = torch.optim.Adam(list(model.stem.parameters()) + list(model.old_head.parameters()), lr=3e-3)
for step in range(100):
    idx = torch.randint(0, 4096, (128,))
    loss = F.cross_entropy(model(x[idx])[0], y_cls[idx])
    pre_opt.zero_grad()
    loss.backward()
    pre_opt.step()
print(f"pretrain cls loss {loss.item():.4f}")

stem_ref = {k: v.clone() for k, v in model.stem.state_dict().items()}
opt = torch.optim.SGD(
    [
        {"params": model.stem.parameters(), "lr": 0.0, "weight_decay": 0.0},
        {"params": model.old_head.parameters(), "lr": 0.0, "weight_decay": 0.0},
        {"params": model.new_branch.parameters()},
    ],
    lr=0.05,
    momentum=0.9,
    weight_decay=1e-4,
)

for step in range(300):
    idx = torch.randint(0, 4096, (128,))
    _, reg = model(x[idx])
    loss = F.mse_loss(reg, y_reg[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        print(f"step {step:3d} new-branch mse {loss.item():.4f}")

same = all(torch.equal(stem_ref[k], v) for k, v in model.stem.state_dict().items())
print(f"stem unchanged: {same}")
