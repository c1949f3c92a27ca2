"""MoCo-v2 style contrastive learning with a key queue on synthetic 8x8 images.

Unusual but correct: the key encoder receives no gradients and has no optimizer; it is a
momentum (EMA) copy of the query encoder, updated under no_grad. Keys are computed in
no_grad and written into a fixed-size queue buffer at a moving pointer (ring buffer
overwriting the oldest entries, which the MoCo maintainers explain is FIFO once the
randomly initialised queue has been filled). Logits are [l_pos, l_neg] and the target
label is always 0 because the positive is put in column 0.

Source: https://github.com/facebookresearch/moco/issues/128
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(8, 1, 8, 8, generator=g)
x_all = protos[torch.randint(0, 8, (512,), generator=g)] + 0.5 * torch.randn(512, 1, 8, 8, generator=g)


def augment(x):
    shift = int(torch.randint(-1, 2, (1,)))
    return torch.roll(x, shifts=shift, dims=-1) + 0.3 * torch.randn_like(x)


class Encoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(2),
            nn.Flatten(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, dim),
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


K, B, T, m = 256, 32, 0.2, 0.99
q_enc = Encoder()
k_enc = copy.deepcopy(q_enc)
for p in k_enc.parameters():
    p.requires_grad_(False)
queue = F.normalize(torch.randn(32, K), dim=0)
ptr = 0
opt = torch.optim.SGD(q_enc.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

for step in range(120):
    x = x_all[torch.randint(0, 512, (B,))]
    q = q_enc(augment(x))
    with torch.no_grad():
        for pk, pq in zip(k_enc.parameters(), q_enc.parameters()):
            pk.mul_(m).add_(pq.detach(), alpha=1 - m)
        k = k_enc(augment(x))
    l_pos = (q * k).sum(dim=1, keepdim=True)
    l_neg = q @ queue.clone().detach()
    logits = torch.cat([l_pos, l_neg], dim=1) / T
    labels = torch.zeros(B, dtype=torch.long)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        queue[:, ptr : ptr + B] = k.T
        ptr = (ptr + B) % K
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.3f} pos-sim {l_pos.mean().item():.3f}")
print("final", loss.item())
