"""Ordinal regression of a 1-5 rating with CORAL (consistent rank logits).

Unusual but correct: the output layer has ONE shared weight vector (Linear with
a single output, no bias) plus K-1 separate bias terms, giving K-1 logits that
answer "is the rating > k?". Targets are "levels": an integer label y becomes
the binary vector [1]*y + [0]*(K-1-y); the loss is binary cross-entropy summed
over the K-1 tasks and averaged over the batch. The predicted rank is the number
of logits whose sigmoid exceeds 0.5, not an argmax. This follows the CORAL
method as packaged in coral-pytorch.

Source: https://pypi.org/project/coral-pytorch/1.4.0/
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

K, N = 5, 3000
x = torch.randn(N, 6)
latent = x @ torch.tensor([1.0, -0.7, 0.5, 0.0, 0.3, 0.0]) + 0.3 * torch.randn(N)
y = torch.bucketize(latent, torch.tensor([-1.2, -0.4, 0.4, 1.2]))  # 0..4


class CoralHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1, bias=False)
        self.biases = nn.Parameter(torch.arange(K - 1, 0, -1).float() / (K - 1))

    def forward(self, h):
        return self.fc(h) + self.biases


def levels(y):
    return (torch.arange(K - 1)[None, :] < y[:, None]).float()


body = nn.Sequential(nn.Linear(6, 32), nn.ReLU())
head = CoralHead(32)
opt = torch.optim.Adam([*body.parameters(), *head.parameters()], lr=5e-3)
for step in range(200):
    idx = torch.randint(0, N, (128,))
    logits = head(body(x[idx]))
    loss = F.binary_cross_entropy_with_logits(logits, levels(y[idx]), reduction="none").sum(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 199:
        print(f"step {step:3d} coral {loss.item():.4f}")

with torch.no_grad():
    pred = (torch.sigmoid(head(body(x))) > 0.5).sum(1)
    print("MAE in rating steps", (pred - y).abs().float().mean().item())
    print("biases non-increasing:", bool((head.biases[1:] <= head.biases[:-1]).all()))
