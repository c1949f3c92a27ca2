"""Two-tower recommender (user tower / item tower) regressing explicit ratings.

The model's scoring head returns predictions of shape [B, 1] while the rating labels coming out
of the collate function have shape [B]. The squared-error loss is computed on (pred - label),
which broadcasts to a [B, B] matrix: every prediction is pulled towards the *mean* of all labels
in the batch instead of its own label. The loss goes down (towards the label variance) and the
run looks healthy, but the towers never learn user/item preference.

Source: https://github.com/pyemma/Argo/pull/27
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

CONFIG = dict(n_users=200, n_items=300, dim=16, batch_size=128, steps=250, lr=1e-2)


class Tower(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.emb = nn.Embedding(n, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, ids):
        return self.mlp(self.emb(ids))


class TwoTowerModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.user_tower = Tower(cfg["n_users"], cfg["dim"])
        self.item_tower = Tower(cfg["n_items"], cfg["dim"])
        self.head = nn.Linear(3 * cfg["dim"], 1)

    def forward(self, batch):
        u = self.user_tower(batch["user_id"])
        i = self.item_tower(batch["item_id"])
        return self.head(torch.cat([u, i, u * i], dim=-1))


def squared_error(pred, target):
    return ((pred - target) ** 2).mean()


def make_interactions(cfg, n=20000):
    g = torch.Generator().manual_seed(1)
    true_u = torch.randn(cfg["n_users"], 4, generator=g)
    true_i = torch.randn(cfg["n_items"], 4, generator=g)
    users = torch.randint(0, cfg["n_users"], (n,), generator=g)
    items = torch.randint(0, cfg["n_items"], (n,), generator=g)
    ratings = (true_u[users] * true_i[items]).sum(-1) + 0.1 * torch.randn(n, generator=g)
    return users, items, ratings


def collate(users, items, ratings, idx):
    return {"user_id": users[idx], "item_id": items[idx], "label": ratings[idx]}


def main():
    cfg = CONFIG
    users, items, ratings = make_interactions(cfg)
    model = TwoTowerModel(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        idx = torch.randint(0, len(users), (cfg["batch_size"],))
        batch = collate(users, items, ratings, idx)
        pred = model(batch)
        loss = squared_error(pred, batch["label"])  # BUG-LINE
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == cfg["steps"] - 1:
            print(f"step {step:3d} train loss {loss.item():.4f}")

    with torch.no_grad():
        batch = collate(users, items, ratings, torch.arange(2000))
        rmse = (model(batch).squeeze(-1) - batch["label"]).pow(2).mean().sqrt().item()
    print(f"eval rmse {rmse:.4f} (label std {ratings.std().item():.4f})")


if __name__ == "__main__":
    main()
