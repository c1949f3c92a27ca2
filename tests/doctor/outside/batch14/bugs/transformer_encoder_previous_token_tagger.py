"""Previous-token tagger built on nn.TransformerEncoder.

Each position must output the token that came just before it, which needs attention within a
sequence. Bug: the encoder layer is built with the default layout (sequence, batch, feature)
while the model feeds it batch-first tensors (batch, seq, d_model). Nothing complains because
the shapes are compatible: self-attention runs across the *batch* axis (mixing different
examples) and every position is treated as an independent sample, so the model can never see
the previous token. The loss plateaus near log(vocab) while a correct model drives it to ~0.
The fix is `batch_first=True` on the encoder layer.

Source: https://github.com/Exorust/TorchLeet/issues/5
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, D, BATCH = 10, 12, 32, 32


def make_batch(n):
    x = torch.randint(1, VOCAB, (n, SEQ))
    y = torch.zeros_like(x)
    y[:, 1:] = x[:, :-1]  # position 0 predicts the "no previous" class 0
    return x, y


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(1, SEQ, D) * 0.5)
        layer = nn.TransformerEncoderLayer(d_model=D, nhead=4, dim_feedforward=64, dropout=0.0)  # BUG-LINE
        self.enc = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, x):
        h = self.emb(x) + self.pos  # (B, T, D)
        h = self.enc(h)
        return self.head(h)


model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(150):
    x, y = make_batch(BATCH)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, y = make_batch(256)
    acc = (model(x).argmax(-1) == y).float().mean().item()
print(f"held-out token accuracy {acc:.3f}")
