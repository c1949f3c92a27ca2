"""Utterance-level speech emotion regressor trained with gradient accumulation that sums micro-batch gradients.

The trainer accumulates ACCUM_STEPS micro-batches per optimizer update to emulate
a batch of 256, and the learning rate was tuned for that effective batch.  Each
micro-batch loss is a per-sample mean, but it is back-propagated unscaled, so at
the update param.grad holds the *sum* of ACCUM_STEPS mean-gradients, i.e.
ACCUM_STEPS times the gradient of the effective batch.  With SGD this silently
multiplies the learning rate by 8: the valence/arousal loss bounces around at a
much higher level than the same run with the loss divided by ACCUM_STEPS.
No NaN, no error.

Source: https://github.com/paiml/aprender/pull/2123
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_FEATS = 40
ACCUM_STEPS = 8
OPTIM = {"lr": 0.15, "momentum": 0.9, "micro_batch": 32, "updates": 80}


def utterance_stats(n, gen):
    """Mean/std pooled frame features -> (valence, arousal)."""
    w = torch.linspace(-1, 1, N_FEATS)
    feats = torch.randn(n, N_FEATS, generator=gen) * torch.linspace(0.5, 3.0, N_FEATS)
    valence = torch.tanh(feats @ w / 10) + 0.05 * torch.randn(n, generator=gen)
    arousal = torch.tanh(feats[:, :10].pow(2).mean(1) - 2.0) + 0.05 * torch.randn(n, generator=gen)
    return feats, torch.stack([valence, arousal], 1)


class EmotionHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(N_FEATS)
        self.mlp = nn.Sequential(nn.Linear(N_FEATS, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.mlp(self.norm(x))


def main():
    gen = torch.Generator().manual_seed(0)
    model = EmotionHead()
    opt = torch.optim.SGD(model.parameters(), lr=OPTIM["lr"], momentum=OPTIM["momentum"])
    xv, yv = utterance_stats(1024, gen)
    for update in range(OPTIM["updates"]):
        opt.zero_grad()
        for micro in range(ACCUM_STEPS):
            x, y = utterance_stats(OPTIM["micro_batch"], gen)
            loss = F.mse_loss(model(x), y)
            loss.backward()  # BUG-LINE
        opt.step()
        if update % 20 == 0 or update == OPTIM["updates"] - 1:
            with torch.no_grad():
                val = F.mse_loss(model(xv), yv).item()
            print(f"update {update:3d} last micro loss {loss.item():.4f} val mse {val:.4f}")


if __name__ == "__main__":
    main()
