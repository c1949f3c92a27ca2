"""Fine-tuning a head on a pretrained BatchNorm encoder that is deliberately frozen.

Unusual but correct: the encoder's parameters are excluded from the optimizer
AND have requires_grad=False, and the model overrides train() so that every
call to model.train() (made at the start of each epoch) immediately puts the
encoder's BatchNorm layers back into eval mode. Their running statistics
therefore stay exactly as pretrained while the head trains, and the frozen
BatchNorm affine parameters are not updated either. Only the head is
optimised. A check at the end confirms the encoder state is unchanged.

Source: https://github.com/nbei/Deep-Flow-Guided-Video-Inpainting/issues/18
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Net(nn.Module):
    def __init__(self, freeze_bn=False):
        super().__init__()
        self.freeze_bn = freeze_bn
        self.encoder = nn.Sequential(
            nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU()
        )
        self.head = nn.Linear(32, 3)

    def train(self, mode=True):
        super().train(mode)
        if self.freeze_bn:
            for m in self.encoder.modules():
                if isinstance(m, nn.BatchNorm1d):
                    m.eval()
        return self

    def forward(self, x):
        return self.head(self.encoder(x))


def make_data(n, shift=0.0):
    x = torch.randn(n, 10) + shift
    y = ((x[:, 0] - shift) * (x[:, 1] - shift) > 0).long() + (x[:, 2] - shift > 1.0).long()
    return x, y


# pretraining of the whole network
model = Net()
x_src, y_src = make_data(4000)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
model.train()
for step in range(150):
    idx = torch.randint(0, 4000, (128,))
    loss = F.cross_entropy(model(x_src[idx]), y_src[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"pretrain loss {loss.item():.4f}")

# fine-tune only a new head, encoder frozen on purpose (parameters and BN statistics)
model.freeze_bn = True
for p in model.encoder.parameters():
    p.requires_grad_(False)
model.head.reset_parameters()
snapshot = {k: v.clone() for k, v in model.encoder.state_dict().items()}
head_opt = torch.optim.SGD(model.head.parameters(), lr=0.1, momentum=0.9)

x_tgt, y_tgt = make_data(2000, shift=0.3)
for epoch in range(5):
    model.train()
    perm = torch.randperm(2000)
    for b in range(0, 2000, 100):
        idx = perm[b : b + 100]
        loss = F.cross_entropy(model(x_tgt[idx]), y_tgt[idx])
        head_opt.zero_grad()
        loss.backward()
        head_opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(x_tgt[:500]).argmax(-1) == y_tgt[:500]).float().mean().item()
    print(f"epoch {epoch} loss {loss.item():.4f} acc {acc:.3f}")

unchanged = all(torch.equal(snapshot[k], v) for k, v in model.encoder.state_dict().items())
print(f"encoder state unchanged: {unchanged}")
