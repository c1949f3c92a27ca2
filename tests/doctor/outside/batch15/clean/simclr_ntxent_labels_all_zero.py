"""SimCLR (NT-Xent) contrastive pre-training of a tiny CNN on synthetic 8x8 images.

Unusual but correct: the 2N x 2N cosine-similarity matrix has its self-similarities
removed with a boolean mask; for each row the positive similarity is gathered into
column 0 and the 2N-2 negatives follow, so the cross-entropy target is the all-zeros
label vector (the thread's author first thought giving label 0 to every row was a bug,
then agreed it is right). Temperature-scaled logits, CrossEntropyLoss with
reduction='sum' divided by 2N. A linear probe checks the learnt features.

Source: https://github.com/Spijkervet/SimCLR/issues/43
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(4, 1, 8, 8, generator=g)
y_all = torch.randint(0, 4, (512,), generator=g)
x_all = protos[y_all] + 0.8 * torch.randn(512, 1, 8, 8, generator=g)


def augment(x):
    x = torch.where(torch.rand(x.shape[0], 1, 1, 1) < 0.5, x.flip(-1), x)
    return x + 0.4 * torch.randn_like(x)


encoder = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
proj = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
opt = torch.optim.Adam(list(encoder.parameters()) + list(proj.parameters()), lr=2e-3)
N, T = 24, 0.5
self_mask = torch.eye(2 * N, dtype=torch.bool)
pos_index = torch.cat([torch.arange(N, 2 * N), torch.arange(0, N)])
criterion = nn.CrossEntropyLoss(reduction="sum")

for step in range(70):
    x = x_all[torch.randint(0, 512, (N,))]
    z = F.normalize(proj(encoder(torch.cat([augment(x), augment(x)]))), dim=1)
    sim = z @ z.T / T
    positives = sim[torch.arange(2 * N), pos_index].unsqueeze(1)
    neg_mask = ~self_mask
    neg_mask[torch.arange(2 * N), pos_index] = False
    negatives = sim[neg_mask].view(2 * N, 2 * N - 2)
    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(2 * N, dtype=torch.long)
    loss = criterion(logits, labels) / (2 * N)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step} nt-xent {loss.item():.4f}")

with torch.no_grad():
    feats = encoder(x_all)
probe = nn.Linear(64, 4)
popt = torch.optim.Adam(probe.parameters(), lr=1e-2)
for _ in range(100):
    l = F.cross_entropy(probe(feats[:400]), y_all[:400])
    popt.zero_grad()
    l.backward()
    popt.step()
print("linear probe acc", (probe(feats[400:]).argmax(1) == y_all[400:]).float().mean().item())
