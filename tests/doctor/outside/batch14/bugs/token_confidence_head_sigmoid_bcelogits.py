"""Auxiliary confidence head trained with BCEWithLogitsLoss on detached features.

The head is built as nn.Sequential(Linear, Sigmoid) and its output is fed to
nn.BCEWithLogitsLoss, so the sigmoid is applied twice. The "logits" that the
loss sees live in (0, 1), so sigmoid(logit) is always in (0.5, 0.73): the loss
can never get close to zero, gradients through the outer sigmoid are weak, and
confident predictions are impossible. Training runs without any error.

Source: https://github.com/cvg/glue-factory/issues/89
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


class Matcher(nn.Module):
    def __init__(self, d=48):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, 64))
        self.classifier = nn.Linear(64, 5)
        self.token = nn.Sequential(
            nn.Linear(64, 1),
            nn.Sigmoid(),  # BUG-LINE
        )
        self.conf_loss = nn.BCEWithLogitsLoss()

    def forward(self, x):
        h = self.backbone(x)
        return h, self.classifier(h)

    def confidence_loss(self, h, correct):
        logit = self.token(h.detach()).squeeze(-1)
        return self.conf_loss(logit, correct.float())


def make_data(n, d=48):
    x = torch.randn(n, d)
    w = torch.randn(d, 5)
    y = (x @ w + 1.5 * torch.randn(n, 5)).argmax(-1)
    return x, y


torch.manual_seed(0)
x_tr, y_tr = make_data(4096)
model = Matcher()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
ce = nn.CrossEntropyLoss()

for step in range(300):
    idx = torch.randint(0, x_tr.shape[0], (128,))
    h, logits = model(x_tr[idx])
    cls_loss = ce(logits, y_tr[idx])
    correct = logits.argmax(-1) == y_tr[idx]
    conf_loss = model.confidence_loss(h, correct)
    loss = cls_loss + conf_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        print(
            f"step {step:3d} cls_loss {cls_loss.item():.4f} conf_loss {conf_loss.item():.4f} "
            f"batch_acc {correct.float().mean().item():.3f}"
        )
