"""Tiny video classifier: 3D-conv stem followed by a per-frame spatial self-attention block.

The attention block receives features laid out as (b, c, t, h, w) and wants one attention
problem per frame, i.e. queries of shape (b*t, c, h*w). It calls q.reshape(b * t, c, h * w)
directly, without first moving the time axis next to the batch axis. reshape() keeps memory
order, so each "frame" row mixes channels and time steps of different frames. The network still
trains (the residual path carries the signal) but the attention is computed over scrambled
tokens and never models per-frame spatial structure.

Source: https://github.com/PKU-YuanGroup/Open-Sora-Plan/issues/171
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

B, C_IN, T, H, W = 8, 1, 5, 8, 8
NUM_CLASSES = 4  # direction of the moving square: right, left, down, up


def make_clip(direction, g):
    clip = torch.zeros(C_IN, T, H, W)
    y, x = torch.randint(2, H - 4, (2,), generator=g).tolist()
    dy, dx = [(0, 1), (0, -1), (1, 0), (-1, 0)][direction]
    for t in range(T):
        yy, xx = min(max(y + dy * t, 0), H - 2), min(max(x + dx * t, 0), W - 2)
        clip[0, t, yy : yy + 2, xx : xx + 2] = 1.0
    return clip + 0.1 * torch.randn(clip.shape, generator=g)


class AttnBlock3D(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(2, channels)
        self.q = nn.Conv3d(channels, channels, 1)
        self.k = nn.Conv3d(channels, channels, 1)
        self.v = nn.Conv3d(channels, channels, 1)
        self.proj_out = nn.Conv3d(channels, channels, 1)

    def forward(self, x):
        h_ = self.norm(x)
        q, k, v = self.q(h_), self.k(h_), self.v(h_)
        b, c, t, h, w = q.shape
        q = q.reshape(b * t, c, h * w)  # BUG-LINE
        k = k.permute(0, 2, 1, 3, 4).reshape(b * t, c, h * w)
        v = v.permute(0, 2, 1, 3, 4).reshape(b * t, c, h * w)
        attn = torch.bmm(q.transpose(1, 2), k) * (c**-0.5)  # (bt, hw, hw)
        attn = attn.softmax(dim=2)
        out = torch.bmm(v, attn.transpose(1, 2))  # (bt, c, hw)
        out = out.reshape(b, t, c, h, w).permute(0, 2, 1, 3, 4)
        return x + self.proj_out(out)


class VideoNet(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(C_IN, width, (3, 3, 3), padding=1), nn.SiLU())
        self.attn = AttnBlock3D(width)
        self.temporal = nn.Conv3d(width, width, (3, 1, 1), padding=(1, 0, 0))
        self.head = nn.Linear(width, NUM_CLASSES)

    def forward(self, x):
        x = self.attn(self.stem(x))
        x = F.silu(self.temporal(x))
        return self.head(x.mean(dim=(2, 3, 4)))


def main():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, NUM_CLASSES, (256,), generator=g)
    clips = torch.stack([make_clip(int(l), g) for l in labels])
    model = VideoNet()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for step in range(100):
        idx = torch.randint(0, len(labels), (B,), generator=g)
        logits = model(clips[idx])
        loss = F.cross_entropy(logits, labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 99:
            acc = (logits.argmax(-1) == labels[idx]).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.2f}")


if __name__ == "__main__":
    main()
