"""Masked-frame pretraining of a small conformer-like encoder on spectrograms, bf16 on CPU.

Unusual but correct:
* the forward pass runs under torch.autocast(device_type="cpu", dtype=torch.bfloat16);
  the model stays float32 (no .half()/.bfloat16() on the module), the loss is
  computed on float32 copies of the outputs, and backward() plus optimizer.step()
  run OUTSIDE the autocast block; no GradScaler is used (not needed for bf16);
* the reconstruction loss covers ONLY the masked frames (a boolean subset of
  positions), as in masked acoustic modelling; unmasked frames give no loss.
* the block is written by hand: feed-forward half-steps, self-attention and a
  depthwise convolution module, each with its own residual.
Per the torch.amp docs, CPU mixed precision with bfloat16 uses only autocast.

Source: https://pytorch.org/docs/2.2/amp.html
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

MELS, T, D = 16, 20, 32


class ConformerLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(MELS, D)
        self.ff1 = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.SiLU(), nn.Linear(2 * D, D))
        self.ln_att = nn.LayerNorm(D)
        self.att = nn.MultiheadAttention(D, 4, batch_first=True)
        self.ln_conv = nn.LayerNorm(D)
        self.dw = nn.Conv1d(D, D, 7, padding=3, groups=D)
        self.pw = nn.Conv1d(D, D, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.SiLU(), nn.Linear(2 * D, D))
        self.out = nn.Linear(D, MELS)
        self.mask_emb = nn.Parameter(torch.zeros(MELS))

    def forward(self, x, mask):
        x = torch.where(mask[..., None], self.mask_emb.to(x.dtype), x)
        h = self.inp(x)
        h = h + 0.5 * self.ff1(h)
        a = self.ln_att(h)
        h = h + self.att(a, a, a, need_weights=False)[0]
        c = self.ln_conv(h).transpose(1, 2)
        h = h + self.pw(F.silu(self.dw(c))).transpose(1, 2)
        h = h + 0.5 * self.ff2(h)
        return self.out(h)


def make(bs):
    base = torch.randn(bs, MELS, 1)
    t = torch.linspace(0, 6.28, T)
    return (base * torch.sin(t + torch.rand(bs, 1, 1) * 6.28)).transpose(1, 2) + 0.1 * torch.randn(bs, T, MELS)


model = ConformerLite()
opt = torch.optim.AdamW(model.parameters(), lr=4e-3)
for step in range(60):
    x = make(16)
    mask = torch.rand(16, T) < 0.25
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        recon = model(x, mask)
    loss = F.mse_loss(recon.float()[mask], x[mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(
            f"step {step:3d} masked mse {loss.item():.4f} (out dtype {recon.dtype}, grad dtype "
            f"{model.inp.weight.grad.dtype})"
        )
