"""N-BEATS-style forecaster (stacked residual MLP blocks with backcast/forecast heads) trained under
CPU bfloat16 autocast.

Unusual on purpose: the forward pass runs inside torch.autocast(device_type="cpu",
dtype=torch.bfloat16), so the Linear layers compute in bfloat16 while the parameters, their
gradients and the Adam state stay float32. The prediction is cast back with .float() and the
loss is computed outside the autocast region in float32. No GradScaler is used: bfloat16 has the
float32 exponent range, and the CPU recipe uses autocast alone. Each block subtracts its
backcast from the running residual (doubly residual stacking). Modelled on the CPU mixed-precision
guide, which says to use torch.amp.autocast with device_type='cpu' and bfloat16, and not to call
.half()/.bfloat16() on the model.

Source: https://runebook.dev/en/docs/pytorch/amp/torch.cpu.amp.autocast
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

L, H = 60, 15


class Block(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(L, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.back = nn.Linear(width, L)
        self.fore = nn.Linear(width, H)

    def forward(self, x):
        h = self.fc(x)
        return self.back(h), self.fore(h)


class NBeats(nn.Module):
    def __init__(self, n_blocks=3):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(n_blocks))

    def forward(self, x):
        residual, forecast = x, 0.0
        for b in self.blocks:
            back, fore = b(residual)
            residual = residual - back
            forecast = forecast + fore
        return forecast


def make_series(T=4000):
    t = torch.arange(T, dtype=torch.float32)
    return torch.sin(2 * math.pi * t / 50) + 0.4 * torch.sin(2 * math.pi * t / 7) + 0.001 * t + 0.1 * torch.randn(T)


def main():
    s = make_series()
    n_train = 3000
    model = NBeats()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(200):
        idx = torch.randint(0, n_train - L - H, (64,))
        x = torch.stack([s[i : i + L] for i in idx.tolist()])
        y = torch.stack([s[i + L : i + L + H] for i in idx.tolist()])
        level = x[:, -1:].clone()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            pred = model(x - level)
        loss = nn.functional.mse_loss(pred.float() + level, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == 199:
            with torch.no_grad():
                vi = torch.arange(n_train, len(s) - L - H, 5)
                xv = torch.stack([s[i : i + L] for i in vi.tolist()])
                yv = torch.stack([s[i + L : i + L + H] for i in vi.tolist()])
                lv = xv[:, -1:]
                with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                    pv = model(xv - lv)
                val = nn.functional.mse_loss(pv.float() + lv, yv).item()
            print(
                f"step {step:3d} loss {loss.item():.4f} val_mse {val:.4f} "
                f"pred_dtype {pred.dtype} grad_dtype {model.blocks[0].fore.weight.grad.dtype}"
            )


if __name__ == "__main__":
    main()
