"""Pairwise relation classifier (4 relation classes) trained with CrossEntropyLoss.

The model's forward returns softmax probabilities, and those probabilities are
passed to nn.CrossEntropyLoss, which applies log_softmax again. The double
softmax squashes the logits into [0, 1], so the loss is bounded below (about
0.74 per example for 4 classes) and the gradients are tiny: the loss plateaus
well above what the model can reach. No error is raised. CrossEntropyLoss must
receive raw logits.

Source: https://github.com/ariecattan/SciCo/issues/2
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLASSES = 4


class PairClassifier(nn.Module):
    def __init__(self, d=32, hidden=64):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, hidden), nn.ReLU())
        self.out = nn.Sequential(nn.Linear(4 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, N_CLASSES))

    def forward(self, a, b):
        ha, hb = self.enc(a), self.enc(b)
        feats = torch.cat([ha, hb, ha * hb, (ha - hb).abs()], dim=-1)
        return torch.softmax(self.out(feats), dim=-1)  # BUG-LINE


def make_pairs(n, d=32):
    a = torch.randn(n, d)
    noise = torch.randn(n, d)
    y = torch.randint(0, N_CLASSES, (n,))
    b = torch.where(
        y[:, None] == 0,
        a + 0.1 * noise,
        torch.where(
            y[:, None] == 1, -a + 0.1 * noise, torch.where(y[:, None] == 2, a.roll(1, dims=1) + 0.1 * noise, noise)
        ),
    )
    return a, b, y


a_tr, b_tr, y_tr = make_pairs(4096)
a_va, b_va, y_va = make_pairs(512)

model = PairClassifier()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(300):
    idx = torch.randint(0, a_tr.shape[0], (64,))
    out = model(a_tr[idx], b_tr[idx])
    loss = criterion(out, y_tr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        model.eval()
        with torch.no_grad():
            val_out = model(a_va, b_va)
            val_loss = criterion(val_out, y_va).item()
            acc = (val_out.argmax(-1) == y_va).float().mean().item()
        model.train()
        print(f"step {step:3d} train_loss {loss.item():.4f} val_loss {val_loss:.4f} val_acc {acc:.3f}")
