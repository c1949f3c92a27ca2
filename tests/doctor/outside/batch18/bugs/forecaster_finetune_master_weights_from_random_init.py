"""Fine-tuning a bf16 window forecaster with an fp32-master-weight optimizer wrapper.

The training script builds the model, wraps its optimizer in a mixed-precision
optimizer that keeps fp32 "main" copies of every bf16 parameter (the copies are
cloned when the wrapper is constructed), and only afterwards loads the pretrained
checkpoint into the model for fine-tuning.  load_state_dict() overwrites the bf16
model weights in place, but the optimizer's fp32 main params still hold the random
initialisation.  At the first step the wrapper updates the stale main params and
copies them back into the model, so the pretrained weights are silently thrown
away: the fine-tune loss starts low, jumps back to the from-scratch level after
one step and the run is effectively training from random init.  No error is raised.

Source: https://github.com/NVIDIA/Megatron-LM/issues/174
"""

import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

WINDOW, HORIZON = 32, 4
CFG = {
    "hidden": 128,
    "lr_pretrain": 3e-3,
    "lr_finetune": 1e-3,
    "pretrain_steps": 200,
    "finetune_steps": 60,
    "batch": 64,
}


def make_series(n, phase=0.0, noise=0.05):
    t = torch.arange(n, dtype=torch.float32)
    s = torch.sin(2 * math.pi * t / 24 + phase) + 0.5 * torch.sin(2 * math.pi * t / 7)
    return s + noise * torch.randn(n)


def sample_windows(series, batch):
    idx = torch.randint(0, len(series) - WINDOW - HORIZON, (batch,))
    x = torch.stack([series[i : i + WINDOW] for i in idx])
    y = torch.stack([series[i + WINDOW : i + WINDOW + HORIZON] for i in idx])
    return x, y


class WindowForecaster(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(WINDOW, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, HORIZON),
        )

    def forward(self, x):
        return self.net(x)


class MixedPrecisionOptimizer:
    """Keeps fp32 main params for bf16 model params (Megatron-style)."""

    def __init__(self, model, lr):
        self.model_params = [p for p in model.parameters() if p.requires_grad]
        self.main_params = [p.detach().clone().float().requires_grad_(True) for p in self.model_params]
        self.inner = torch.optim.Adam(self.main_params, lr=lr)

    def zero_grad(self):
        for p in self.model_params:
            p.grad = None
        self.inner.zero_grad(set_to_none=True)

    @torch.no_grad()
    def step(self):
        for mp, p in zip(self.main_params, self.model_params):
            mp.grad = p.grad.float()
        self.inner.step()
        for mp, p in zip(self.main_params, self.model_params):
            p.copy_(mp.to(p.dtype))


def pretrain(path):
    model = WindowForecaster(CFG["hidden"]).to(torch.bfloat16)
    opt = MixedPrecisionOptimizer(model, CFG["lr_pretrain"])
    series = make_series(4000)
    for step in range(CFG["pretrain_steps"]):
        x, y = sample_windows(series, CFG["batch"])
        loss = F.mse_loss(model(x.bfloat16()).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"pretrain step {step:3d} loss {loss.item():.4f}")
    torch.save({"model": model.state_dict()}, path)
    print(f"pretrain final loss {loss.item():.4f}")


def finetune(path):
    model = WindowForecaster(CFG["hidden"]).to(torch.bfloat16)
    opt = MixedPrecisionOptimizer(model, CFG["lr_finetune"])
    state = torch.load(path)
    model.load_state_dict(state["model"])  # BUG-LINE
    series = make_series(2000, phase=0.3)
    for step in range(CFG["finetune_steps"]):
        x, y = sample_windows(series, CFG["batch"])
        loss = F.mse_loss(model(x.bfloat16()).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step < 3:
            print(f"finetune step {step:3d} loss {loss.item():.4f}")


def main():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "forecaster.pt")
    pretrain(path)
    finetune(path)


if __name__ == "__main__":
    main()
