"""FaceNet-style metric learning with online semi-hard triplet mining: each batch holds P classes x K samples,
the pairwise distance matrix used to *choose* negatives is computed under torch.no_grad() (mining is a
non-differentiable selection), and the loss is then recomputed with gradients only for the selected
(anchor, positive, negative) triples. Embeddings are L2-normalised per vector. Selecting indices without
gradient is intended, not a detached-loss bug.
Source: https://arxiv.org/abs/1503.03832
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
C, DIN, P, K, MARGIN = 12, 32, 6, 6, 0.2
protos = torch.randn(C, DIN)
net = nn.Sequential(nn.Linear(DIN, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(net.parameters(), lr=2e-3)


def embed(x):
    return F.normalize(net(x), dim=1)


for step in range(150):
    cls = torch.randperm(C)[:P]
    y = cls.repeat_interleave(K)
    x = protos[y] + 1.2 * torch.randn(P * K, DIN)
    e = embed(x)
    with torch.no_grad():
        d = torch.cdist(e, e)
        same = y[:, None] == y[None, :]
        anchors, positives, negatives = [], [], []
        for a in range(len(y)):
            for p in torch.nonzero(same[a]).squeeze(1).tolist():
                if p == a:
                    continue
                semi = (~same[a]) & (d[a] > d[a, p]) & (d[a] < d[a, p] + MARGIN)
                cand = torch.nonzero(semi).squeeze(1)
                if len(cand) == 0:
                    cand = torch.nonzero(~same[a]).squeeze(1)
                    n = cand[d[a, cand].argmin()]
                else:
                    n = cand[torch.randint(0, len(cand), (1,))].squeeze()
                anchors.append(a)
                positives.append(p)
                negatives.append(int(n))
    ia, ip, ineg = torch.tensor(anchors), torch.tensor(positives), torch.tensor(negatives)
    dap = (e[ia] - e[ip]).norm(dim=1)
    dan = (e[ia] - e[ineg]).norm(dim=1)
    loss = F.relu(dap - dan + MARGIN).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} triplets {len(ia)} loss {loss.item():.4f}")
with torch.no_grad():
    yg = torch.randint(0, C, (600,))
    yq = torch.randint(0, C, (200,))
    eg = embed(protos[yg] + 1.2 * torch.randn(600, DIN))
    eq = embed(protos[yq] + 1.2 * torch.randn(200, DIN))
    print("1-NN acc:", round((yg[(eq @ eg.T).argmax(1)] == yq).float().mean().item(), 4))
