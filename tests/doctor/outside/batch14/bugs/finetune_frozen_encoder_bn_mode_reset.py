"""Fine-tuning a new regression head on top of a pretrained, frozen encoder.

freeze() sets requires_grad=False on the encoder and puts its BatchNorm
layers in eval mode once, at the moment it is called. The training loop then
calls model.train() at the start of every epoch, which recursively flips the
"frozen" BatchNorm layers back to training mode: they normalise with batch
statistics and their running_mean / running_var are overwritten by the
fine-tuning data (which has a shifted distribution). The encoder that was
supposed to be frozen silently drifts away from the pretrained checkpoint.

Source: https://github.com/pgniewko/gt-pyg/issues/112
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU()
        )
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.encoder(x)).squeeze(-1)

    def freeze(self):
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        for m in self.encoder.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()  # BUG-LINE


def target_fn(x):
    return torch.tanh(x[:, 0] - x[:, 1]) + 0.5 * x[:, 2] * x[:, 3]


# "pretraining" on the source distribution
model = Net()
x_src = torch.randn(4000, 10)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
model.train()
for step in range(150):
    idx = torch.randint(0, 4000, (128,))
    loss = F.mse_loss(model(x_src[idx]), target_fn(x_src[idx]))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"pretrain loss {loss.item():.4f}")

# fine-tune a fresh head on a shifted target domain with the encoder frozen
model.head.reset_parameters()
model.freeze()
x_tgt = 0.5 * torch.randn(2000, 10) + 1.0
y_tgt = target_fn(x_tgt) + 0.3
head_opt = torch.optim.Adam(model.head.parameters(), lr=3e-3)
for epoch in range(5):
    model.train()
    for b in range(0, 2000, 100):
        xb, yb = x_tgt[b : b + 100], y_tgt[b : b + 100]
        loss = F.mse_loss(model(xb), yb)
        head_opt.zero_grad()
        loss.backward()
        head_opt.step()
    model.eval()
    with torch.no_grad():
        val = F.mse_loss(model(x_tgt[:500]), y_tgt[:500]).item()
    print(f"epoch {epoch} loss {loss.item():.4f} eval_mse {val:.4f}")
