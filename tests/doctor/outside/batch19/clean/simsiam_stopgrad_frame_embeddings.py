"""SimSiam-style self-supervised pretraining of a frame encoder for video retrieval (correct,
unusual: one branch has its gradient stopped on purpose).

Two augmented views of the same short clip frame are encoded by one shared encoder + projector;
a predictor MLP maps one view's projection onto the other's. The loss is the symmetric negative
cosine similarity D(p1, stopgrad(z2)) / 2 + D(p2, stopgrad(z1)) / 2. The target projections are
detached deliberately (without it the representation collapses); the encoder still receives
gradients through the predictor branch of both views. A linear probe on frozen features checks
that the representation is useful.

Source: https://github.com/PatrickHua/SimSiam/issues/39
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D_IN, CLASSES = 32, 6


def D(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


class SimSiam(nn.Module):
    def __init__(self, dim=64, pred_dim=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64))
        self.projector = nn.Sequential(
            nn.Linear(64, dim), nn.BatchNorm1d(dim), nn.ReLU(), nn.Linear(dim, dim), nn.BatchNorm1d(dim, affine=False)
        )
        self.predictor = nn.Sequential(
            nn.Linear(dim, pred_dim), nn.BatchNorm1d(pred_dim), nn.ReLU(), nn.Linear(pred_dim, dim)
        )

    def forward(self, x1, x2):
        z1, z2 = self.projector(self.encoder(x1)), self.projector(self.encoder(x2))
        p1, p2 = self.predictor(z1), self.predictor(z2)
        return p1, p2, z1, z2


def make_frames(n, g):
    protos = torch.randn(CLASSES, D_IN, generator=g) * 2
    y = torch.randint(0, CLASSES, (n,), generator=g)
    return protos[y] + 0.5 * torch.randn(n, D_IN, generator=g), y


def augment(x, g):
    mask = (torch.rand(x.shape, generator=g) > 0.2).float()
    return x * mask * (1 + 0.2 * torch.randn(x.shape[0], 1, generator=g)) + 0.3 * torch.randn(x.shape, generator=g)


def linear_probe(encoder, x, y):
    with torch.no_grad():
        feats = encoder(x)
    probe = nn.Linear(feats.shape[1], CLASSES)
    opt = torch.optim.Adam(probe.parameters(), lr=1e-2)
    for _ in range(100):
        loss = F.cross_entropy(probe(feats[:800]), y[:800])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (probe(feats[800:]).argmax(1) == y[800:]).float().mean().item()


def main():
    g = torch.Generator().manual_seed(0)
    x, y = make_frames(1000, g)
    model = SimSiam()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    for step in range(100):
        xb = x[torch.randint(0, 1000, (64,), generator=g)]
        p1, p2, z1, z2 = model(augment(xb, g), augment(xb, g))
        loss = D(p1, z2) / 2 + D(p2, z1) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 99:
            z_std = F.normalize(z1, dim=1).std(0).mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} z-std {z_std:.4f}")
    model.eval()
    print(f"linear probe accuracy: {linear_probe(model.encoder, x, y):.3f}")


if __name__ == "__main__":
    main()
