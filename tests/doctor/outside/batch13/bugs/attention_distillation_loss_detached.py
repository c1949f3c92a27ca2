"""Attention-map distillation (NAD / attention-transfer style): a student CNN is fine-tuned with
cross-entropy plus an attention-map matching loss against a teacher CNN.

Source: https://github.com/bboylyg/NAD/issues/8

Bug: the attention-transfer loss is `.detach()`-ed before being added to the total loss. A
detached tensor carries no graph, so `backward()` sends no gradient through it: the distillation
term is printed and added to the loss value, but it has zero effect on the student's weights,
which are trained by cross-entropy alone. No error, the total loss decreases, and the attention
term only changes as a side effect of cross-entropy training. Fix: do not detach the attention loss (detach only the teacher
features).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n, gen):
    x = 0.5 * torch.randn(n, 1, 16, 16, generator=gen)
    y = torch.randint(0, 4, (n,), generator=gen)
    for i in range(n):
        r, c = divmod(int(y[i]), 2)
        x[i, 0, r * 8 + 2 : r * 8 + 6, c * 8 + 2 : c * 8 + 6] += 1.0
    return x, y


class SmallCNN(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.b1 = nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(w, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(w * 8 * 8, 4)

    def forward(self, x):
        f1 = self.b1(x)
        f2 = self.b2(f1)
        return self.fc(f2.flatten(1)), [f1, f2]


def attention_map(fm):
    am = fm.pow(2).mean(1).flatten(1)
    return F.normalize(am, dim=1)


def at_loss(fs, ft):
    return (attention_map(fs) - attention_map(ft)).pow(2).mean()


def main():
    gen = torch.Generator().manual_seed(0)
    x, y = make_data(256, gen)
    teacher = SmallCNN(16)
    topt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    for step in range(40):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        loss = F.cross_entropy(teacher(x[idx])[0], y[idx])
        topt.zero_grad()
        loss.backward()
        topt.step()
    print(f"teacher final ce {loss.item():.4f}")
    teacher.eval()

    student = SmallCNN(8)
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    beta = 500.0
    for step in range(60):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        with torch.no_grad():
            _, t_feats = teacher(x[idx])
        logits, s_feats = student(x[idx])
        ce = F.cross_entropy(logits, y[idx])
        at = sum(at_loss(s, t) for s, t in zip(s_feats, t_feats)).detach()  # BUG-LINE
        loss = ce + beta * at
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step} total {loss.item():.4f} ce {ce.item():.4f} at {at.item():.6f}")


if __name__ == "__main__":
    main()
