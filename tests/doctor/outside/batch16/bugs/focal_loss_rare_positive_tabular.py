"""Binary focal loss for an imbalanced tabular problem (about 5% positives).

Bug: the focal loss keeps a per-class alpha vector and gathers it with the
target, intending alpha=0.75 to weight the RARE positive class. The vector is
built as [alpha, 1 - alpha], so index 0 (the majority negative class) gets 0.75
and the rare positives get 0.25: the class balancing is inverted and the rare
class is down-weighted even further. Nothing errors; the loss decreases while
recall on positives stays poor. Reported for clcarwin/focal_loss_pytorch
(alpha gathered by target gives class 1 the (1-alpha) weight).

Source: https://github.com/clcarwin/focal_loss_pytorch/issues/10
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0, alpha=0.75):
        super().__init__()
        self.gamma = gamma
        self.alpha = torch.tensor([alpha, 1 - alpha])  # BUG-LINE

    def forward(self, logits, target):
        logpt = F.log_softmax(logits, dim=1).gather(1, target.view(-1, 1)).view(-1)
        pt = logpt.exp()
        at = self.alpha.gather(0, target)
        return (-at * (1 - pt) ** self.gamma * logpt).mean()


def make_data(n):
    num = torch.randn(n, 6)
    cat = torch.randint(0, 8, (n,))
    score = num[:, 0] * 1.5 - num[:, 1] + (cat == 3).float() * 2.0 - 3.2
    y = (score + 0.5 * torch.randn(n) > 0).long()
    return num, cat, y


class TabNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(8, 4)
        self.mlp = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, num, cat):
        return self.mlp(torch.cat([num, self.emb(cat)], dim=1))


num, cat, y = make_data(4000)
print("positive rate", y.float().mean().item())
model = TabNet()
crit = FocalLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(150):
    idx = torch.randint(0, len(y), (256,))
    loss = crit(model(num[idx], cat[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} focal {loss.item():.4f}")

with torch.no_grad():
    tn, tc, ty = make_data(4000)
    pred = model(tn, tc).argmax(1)
    recall = ((pred == 1) & (ty == 1)).sum().item() / max(1, (ty == 1).sum().item())
    print("positive recall", round(recall, 3))
