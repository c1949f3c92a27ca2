"""Audio event tagger with an EMA copy whose BatchNorm running statistics are never updated.

An exponential-moving-average copy of the CNN is kept for evaluation (as in
mean-teacher / EMA handlers).  The EMA update loops over parameters() only, and
the EMA model is only ever run in eval mode, so its BatchNorm running_mean and
running_var buffers stay at their initial values (0 and 1) for the whole run.
The log-mel inputs are far from zero-mean/unit-variance, so the EMA model
normalizes with the wrong statistics: the online model reaches high accuracy
while the EMA model that gets reported and exported stays near chance.  Nothing
errors; the EMA weights themselves are averaged correctly.

Source: https://github.com/pytorch/ignite/issues/2590
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLASSES, N_MELS, N_FRAMES = 4, 16, 24
TRAIN = {"steps": 120, "batch": 32, "lr": 3e-3, "ema_decay": 0.97}


def synth_clips(labels):
    t = torch.arange(N_FRAMES).float().view(1, 1, -1)
    mel = torch.arange(N_MELS).float().view(1, -1, 1)
    lab = labels.float().view(-1, 1, 1)
    energy = 6.0 * torch.exp(-0.5 * ((mel - (2 + 4 * lab)) / 1.2) ** 2) * (1 + 0.5 * torch.sin(t * (0.3 + 0.2 * lab)))
    return (energy + 5.0 + 0.8 * torch.randn(len(labels), N_MELS, N_FRAMES)).unsqueeze(1)


def batch(n):
    y = torch.randint(0, N_CLASSES, (n,))
    return synth_clips(y), y


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, N_CLASSES)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.model = copy.deepcopy(model).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for ema_p, p in zip(self.model.parameters(), model.parameters()):  # BUG-LINE
            ema_p.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


@torch.no_grad()
def accuracy(model, x, y):
    was_training = model.training
    model.eval()
    acc = (model(x).argmax(-1) == y).float().mean().item()
    model.train(was_training)
    return acc


def main():
    model = Tagger()
    ema = EMA(model, TRAIN["ema_decay"])
    opt = torch.optim.Adam(model.parameters(), lr=TRAIN["lr"])
    xv, yv = batch(256)
    for step in range(TRAIN["steps"]):
        x, y = batch(TRAIN["batch"])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update(model)
        if step % 30 == 0 or step == TRAIN["steps"] - 1:
            print(
                f"step {step:3d} loss {loss.item():.4f} val acc online {accuracy(model, xv, yv):.3f} "
                f"ema {accuracy(ema.model, xv, yv):.3f}"
            )


if __name__ == "__main__":
    main()
