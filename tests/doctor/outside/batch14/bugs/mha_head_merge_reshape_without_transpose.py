"""Hand-written multi-head self-attention in a small transformer tagger.

The task tags each position with the token two places to its left, so attention must move
information between positions; the sequence length varies from batch to batch. Bug: after `attn @ v` (shape batch, heads, seq, head_dim) the
heads are merged with a plain reshape to (batch, seq, d_model) without first transposing the
head and sequence axes. The reshape succeeds, but each output "position" is now a splice of
several positions of a single head, so token identity and position get scrambled. Training
runs and the loss falls a little, but it plateaus well above what a correct merge reaches.
Fix: `out.transpose(1, 2).reshape(B, T, D)`.

Source: https://github.com/meta-pytorch/opacus/pull/825
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, MAXSEQ, D, HEADS, BATCH = 10, 16, 32, 4, 32


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (D // HEADS) ** 0.5
        out = att.softmax(dim=-1) @ v  # (B, H, T, hd)
        out = out.reshape(B, T, D)  # BUG-LINE
        return self.proj(out)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(1, MAXSEQ, D) * 0.5)
        self.attn = SelfAttention()
        self.ln1 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, D))
        self.ln2 = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, x):
        h = self.emb(x) + self.pos[:, : x.shape[1]]
        h = self.ln1(h + self.attn(h))
        h = self.ln2(h + self.ff(h))
        return self.head(h)


def make_batch(n):
    seq = [6, 8, 12, 16][torch.randint(0, 4, (1,)).item()]  # sequence length varies per batch
    x = torch.randint(1, VOCAB, (n, seq))
    y = torch.zeros_like(x)
    y[:, 2:] = x[:, :-2]
    return x, y


model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
recent = []
for step in range(200):
    x, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    recent = (recent + [loss.item()])[-20:]
    if step % 40 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"mean loss over last 20 steps {sum(recent) / len(recent):.4f}")
