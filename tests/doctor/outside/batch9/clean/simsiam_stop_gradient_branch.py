"""SimSiam self-supervised training with a stop-gradient on the target projection.

Unusual: the same encoder processes both views but the loss uses z.detach() as target, so half
of the computation graph deliberately gets no gradient and the predictor is the only asymmetry.
Source: https://github.com/PatrickHua/SimSiam/issues/22
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
encoder = torch.nn.Sequential(
    torch.nn.Linear(16, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(), torch.nn.Linear(64, 32)
)
predictor = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 32))
opt = torch.optim.SGD(list(encoder.parameters()) + list(predictor.parameters()), lr=0.05, momentum=0.9)


def D(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


for _step in range(8):
    x = torch.randn(32, 16)
    x1, x2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
    z1, z2 = encoder(x1), encoder(x2)
    p1, p2 = predictor(z1), predictor(z2)
    loss = 0.5 * D(p1, z2) + 0.5 * D(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"simsiam loss {loss.item():.4f}")
