"""Mean-teacher consistency training with an EMA teacher that receives no gradients.

The teacher is a deep copy of the student with requires_grad disabled; its
weights are updated only as ema = d * ema + (1 - d) * student after each
optimizer step, and its predictions are used as fixed consistency targets.
A model whose parameters never get gradients is intended here.
Source: https://github.com/openai/guided-diffusion/issues/26
"""

import copy

import torch
import torch.nn as nn

torch.manual_seed(0)
DECAY = 0.99
student = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))
teacher = copy.deepcopy(student).requires_grad_(False).eval()
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
x_lab, y_lab = torch.randn(32, 10), torch.randint(0, 3, (32,))
x_unl = torch.randn(64, 10)

for _step in range(8):
    sup = nn.functional.cross_entropy(student(x_lab), y_lab)
    with torch.no_grad():
        target = teacher(x_unl + 0.05 * torch.randn_like(x_unl)).softmax(-1)
    cons = nn.functional.mse_loss(student(x_unl).softmax(-1), target)
    loss = sup + cons
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for t, s in zip(teacher.parameters(), student.parameters(), strict=False):
            t.mul_(DECAY).add_(s, alpha=1 - DECAY)
print(f"sup {sup.item():.4f} consistency {cons.item():.5f}")
