"""Label-attention text classifier using F.scaled_dot_product_attention.

Each class has a learned query that attends over the token representations; the pooled vector
is scored to give that class's logit. Sequences are right-padded.

Bug: the padding mask is built as `tokens == PAD` (True at padding) and handed straight to
`scaled_dot_product_attention`. For SDPA a boolean mask means the opposite: True marks the
positions that *may* be attended. So every label query attends only to the padding positions
and never sees a real token. No error, no NaN (every row has at least one pad), the loss just
hovers around chance. The fix is to pass the inverted mask (`tokens != PAD`).

Source: https://github.com/InseeFrLab/torchTextClassifiers/pull/92
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, D, N_CLASSES, BATCH = 0, 10, 16, 32, 2, 64


def make_batch(n):
    lengths = torch.randint(3, MAXLEN, (n,))  # always < MAXLEN: at least one pad
    x = torch.randint(1, VOCAB, (n, MAXLEN))
    pos = torch.arange(MAXLEN)[None, :]
    x = x.masked_fill(pos >= lengths[:, None], PAD)
    y = (x == 5).any(dim=1).long()  # class 1: token 5 occurs
    return x, y


class LabelAttentionClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Embedding(MAXLEN, D)
        self.proj = nn.Linear(D, D)
        self.label_queries = nn.Parameter(torch.randn(N_CLASSES, D) * 0.1)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.score = nn.Linear(D, 1)

    def forward(self, tokens):
        B, T = tokens.shape
        h = torch.tanh(self.proj(self.emb(tokens) + self.pos(torch.arange(T))))
        q = self.label_queries[None, None].expand(B, 1, N_CLASSES, D)
        k = self.k(h)[:, None]  # (B, 1, T, D)
        v = self.v(h)[:, None]
        pad = tokens == PAD
        pooled = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])  # BUG-LINE
        return self.score(pooled.squeeze(1)).squeeze(-1)  # (B, N_CLASSES)


model = LabelAttentionClassifier()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(200):
    x, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(512)
    acc = (model(x).argmax(-1) == y).float().mean().item()
print(
    f"held-out accuracy {acc:.3f} (majority class rate {max(y.float().mean().item(), 1 - y.float().mean().item()):.3f})"
)
