"""EMA shadow weights are pushed away from the live weights instead of toward them.

The ``ExponentialMovingAverage`` helper computes ``gap = shadow - param`` and
then *adds* ``(1 - decay) * gap`` to the shadow.  The correct update subtracts
it (shadow <- shadow - (1 - decay) * (shadow - param)).  With the sign flipped
the shadow becomes ``(2 - decay) * shadow - (1 - decay) * param`` and grows
geometrically (x1.01 per step at decay 0.99).  The live model trains normally
and its loss curve looks healthy, so nothing signals a problem until the EMA
weights, the ones that get saved and evaluated, turn out to be garbage.

Source: https://github.com/ostris/ai-toolkit/issues/1034
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

CONFIG = {"use_ema": True, "ema_decay": 0.99, "lr": 2e-3, "steps": 160, "batch": 64}


class ExponentialMovingAverage:
    def __init__(self, parameters, decay):
        self.decay = decay
        self.shadow_params = [p.detach().clone().float() for p in parameters]
        self.num_updates = 0

    @torch.no_grad()
    def update(self, parameters):
        self.num_updates += 1
        one_minus_decay = 1.0 - self.decay
        for s_param, param in zip(self.shadow_params, parameters):
            if not param.requires_grad:
                s_param.copy_(param)
                continue
            gap = s_param - param.float()
            s_param.add_(gap * one_minus_decay)  # BUG-LINE

    @torch.no_grad()
    def copy_to(self, parameters):
        for s_param, param in zip(self.shadow_params, parameters):
            param.copy_(s_param.to(param.dtype))


class Denoiser(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d + 1, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, d))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None]], -1))


def sample_batch(n, d=32):
    basis = torch.linspace(0, 3.14, d)
    clean = torch.sin(basis[None] * torch.randint(1, 4, (n, 1)).float())
    t = torch.rand(n)
    noise = torch.randn(n, d)
    noisy = (1 - t[:, None]) * clean + t[:, None] * noise
    return noisy, t, noise


@torch.no_grad()
def eval_loss(model):
    g = torch.get_rng_state()
    torch.manual_seed(123)
    x, t, noise = sample_batch(512)
    torch.set_rng_state(g)
    return F.mse_loss(model(x, t), noise).item()


def main():
    model = Denoiser()
    opt = torch.optim.AdamW(model.parameters(), lr=CONFIG["lr"])
    ema = ExponentialMovingAverage(model.parameters(), CONFIG["ema_decay"]) if CONFIG["use_ema"] else None
    for step in range(CONFIG["steps"]):
        x, t, noise = sample_batch(CONFIG["batch"])
        loss = F.mse_loss(model(x, t), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if ema is not None:
            ema.update(model.parameters())
        if step % 40 == 0 or step == CONFIG["steps"] - 1:
            print(f"step {step:4d} train loss {loss.item():.4f}")
    ema_model = copy.deepcopy(model)
    ema.copy_to(ema_model.parameters())
    print(f"eval loss live model {eval_loss(model):.4f}")
    print(f"eval loss ema model  {eval_loss(ema_model):.4f}")
    print(f"max |w| ema {max(p.abs().max().item() for p in ema_model.parameters()):.2f}")


if __name__ == "__main__":
    main()
