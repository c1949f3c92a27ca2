"""Epoch-based StepLR is stepped once per mini-batch, so the learning rate collapses.

A tabular model (categorical embeddings + numeric features -> MLP) is trained
with ``StepLR(step_size=5, gamma=0.5)``, which the config describes as "halve the
LR every 5 epochs".  The helper ``train_one_epoch`` calls ``scheduler.step()``
inside the mini-batch loop.  With 32 batches per epoch the LR is halved every 5
*batches*: after the first epoch it is already ~1e-4 of its initial value and
after that the model effectively stops learning.  No warning is raised (the
call order optimizer.step -> scheduler.step is the right one), the loss just
plateaus early at a high value.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.optim.lr_scheduler.steplr/torch.optim.lr_scheduler.StepLR
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

CFG = {
    "cat_cardinalities": [12, 7, 30],
    "n_numeric": 6,
    "emb_dim": 8,
    "epochs": 6,
    "batch_size": 128,
    "lr": 3e-3,
    "lr_step_epochs": 5,
    "lr_gamma": 0.5,
}


def synth_table(n=2048):
    cats = torch.stack([torch.randint(0, c, (n,)) for c in CFG["cat_cardinalities"]], 1)
    nums = torch.randn(n, CFG["n_numeric"])
    effects = [torch.randn(c) for c in CFG["cat_cardinalities"]]
    y = sum(e[cats[:, i]] for i, e in enumerate(effects)) + nums @ torch.randn(CFG["n_numeric"]) * 0.7
    y = y + 0.1 * torch.randn(n)
    return cats, nums, y.unsqueeze(1)


class TabularNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(c, CFG["emb_dim"]) for c in CFG["cat_cardinalities"])
        d = CFG["emb_dim"] * len(CFG["cat_cardinalities"]) + CFG["n_numeric"]
        self.mlp = nn.Sequential(
            nn.Linear(d, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)
        )

    def forward(self, cats, nums):
        e = [emb(cats[:, i]) for i, emb in enumerate(self.embs)]
        return self.mlp(torch.cat(e + [nums], 1))


def train_one_epoch(model, loader, optimizer, scheduler):
    model.train()
    total, n = 0.0, 0
    for cats, nums, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(cats, nums), y)
        loss.backward()
        optimizer.step()
        scheduler.step()  # BUG-LINE
        total += loss.item() * y.shape[0]
        n += y.shape[0]
    return total / n


@torch.no_grad()
def evaluate(model, cats, nums, y):
    model.eval()
    return F.mse_loss(model(cats, nums), y).item()


def main():
    cats, nums, y = synth_table()
    tr = slice(0, 1792)
    va = slice(1792, None)
    loader = DataLoader(TensorDataset(cats[tr], nums[tr], y[tr]), batch_size=CFG["batch_size"], shuffle=True)
    model = TabularNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=CFG["lr_step_epochs"], gamma=CFG["lr_gamma"])
    for epoch in range(CFG["epochs"]):
        tr_loss = train_one_epoch(model, loader, optimizer, scheduler)
        va_loss = evaluate(model, cats[va], nums[va], y[va])
        print(f"epoch {epoch} train {tr_loss:.4f} val {va_loss:.4f} lr {optimizer.param_groups[0]['lr']:.2e}")


if __name__ == "__main__":
    main()
